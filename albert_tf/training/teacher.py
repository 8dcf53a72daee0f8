"""The distillation teacher of a classifier (--teacher_checkpoint; the settings `s` carry
DistillationSettings' fields): its checks (a fine-tuned classifier of the same labels and
the same vocabulary, as the student reads its ids), its logits over the training set
(once), the task they train (albert_tf.training.distillation) and the unlabelled examples
only the teacher labels."""

from __future__ import annotations

import dataclasses
import os

from data_pipeline.cli import check_fields, setting


def _teacher_dir(path: str) -> str:
    """The fine-tuned model directory of `path` (itself, or an export's
    assets.extra/finetuned); a one-line ValueError otherwise."""
    from albert_tf.checkpoints.task_info import is_finetuned_dir

    for candidate in (path, os.path.join(path, "assets.extra", "finetuned")):
        if is_finetuned_dir(candidate):
            return candidate
    raise ValueError(
        f"--teacher_checkpoint={path}: not a fine-tuned model directory (no task.json; give "
        f"a run's EXPORT_DIR/N or its assets.extra/finetuned)"
    )


def load_teacher(s, labels, tokenizer_spec):
    """The teacher model of --teacher_checkpoint, checked against the student's `labels`
    and vocabulary (`tokenizer_spec`), or the rows of --teacher_logits_file (a
    `TeacherLogits`, its labels checked); None without either. One-line ValueErrors."""
    from albert_tf.checkpoints.finetuned import load_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.checkpoints.task_kinds.classifier import ClassifierFields
    from albert_tf.checkpoints.tokenizer_record import file_sha256

    settings = s
    if settings.teacher_checkpoint and settings.teacher_logits_file:
        raise ValueError(
            f"--teacher_checkpoint={settings.teacher_checkpoint} and --teacher_logits_file="
            f"{settings.teacher_logits_file}: give one teacher"
        )
    if settings.teacher_logits_file:
        from data_pipeline.classification.teacher_logits import FLAG, read_teacher_logits

        if s.multi_label:
            raise ValueError(f"{FLAG}: distillation softens one softmax; not for --multi_label")
        return read_teacher_logits(settings.teacher_logits_file, labels)
    if not settings.teacher_checkpoint:
        if settings.distill_unlabelled_file:
            raise ValueError(
                f"--distill_unlabelled_file={settings.distill_unlabelled_file} needs "
                f"--teacher_checkpoint or --teacher_logits_file (its examples have no label "
                f"but the teacher's)"
            )
        return None
    flag = f"--teacher_checkpoint={settings.teacher_checkpoint}"
    directory = _teacher_dir(settings.teacher_checkpoint)
    info = TaskInfo.read(directory)
    if not isinstance(info.details, ClassifierFields) or info.details.regression:
        raise ValueError(f"{flag}: a {info.kind} model; distillation needs a classifier")
    if getattr(info.details, "multi_label", False) or s.multi_label:
        raise ValueError(f"{flag}: distillation softens one softmax; not for --multi_label")
    theirs = list(info.details.labels)
    if labels is None or theirs != list(labels):
        raise ValueError(f"{flag}: its labels {theirs} are not the task's {list(labels or [])}")
    vocabulary = info.tokenizer()
    if vocabulary is None or file_sha256(vocabulary.path) != file_sha256(tokenizer_spec.path):
        raise ValueError(
            f"{flag}: its vocabulary is not {tokenizer_spec.path} (the teacher reads the "
            f"student's token ids)"
        )
    model, _ = load_finetuned(directory, info)
    return model


def teacher_table(
    teacher, train, batch_size: int, length_buckets, labelled: int | None = None, examples=None
):
    """The teacher's logits of every training example (`train`: TaskFeatures; the first
    `labelled` of them labelled, None: all), by example_index
    (albert_tf.training.distillation.teacher_logits), computed once before training: one
    line as the pass starts (how many examples) and one as it ends. For a file's rows
    (`TeacherLogits`), those of `examples()`, the training examples in record order."""
    from albert_tf.training.distillation import teacher_logits
    from data_pipeline.classification.teacher_logits import FLAG, TeacherLogits
    from data_pipeline.phases import phase

    if isinstance(teacher, TeacherLogits):
        chosen = examples()
        if len(chosen) != train.count:  # (one record an example: checked by the family)
            raise ValueError(f"{FLAG}: {len(chosen)} examples for {train.count} records")
        return teacher.logits_for(chosen)

    batches = train.dataset(batch_size, drop_remainder=False, length_buckets=length_buckets)
    name = f"distillation: the teacher's logits of {train.count:,} training examples"
    if labelled is not None:
        name += f" ({labelled:,} labelled, {train.count - labelled:,} unlabelled)"
    with phase(name) as done:
        table = teacher_logits(teacher, batches)
        done.wrote(f"{len(table):,} rows of {table.shape[1]} logits (kept in memory)")
    return table


def distill_task(task, settings):
    """`task` trained on the teacher's soft targets when a teacher is given."""
    if not (settings.teacher_checkpoint or settings.teacher_logits_file):
        return task
    from albert_tf.training.distillation import DistillationTask

    return DistillationTask(task, settings.distill_temperature, settings.distill_alpha)


def with_unlabelled(s, train, spec, tokenizer, cache_dir: str, labels, windows):
    """(training features, labelled count): `train` with --distill_unlabelled_file's
    examples appended (their count first: None without the flag). One-line ValueErrors
    for a bad file, or a task whose features are not one record an example."""
    from data_pipeline.classification.features import convert_examples
    from data_pipeline.classification.unlabelled import FLAG, read_unlabelled
    from data_pipeline.classification.unlabelled import with_unlabelled as append

    path = s.distill_unlabelled_file
    if not path or train is None:
        return train, None
    if spec.choices or windows.enabled:
        raise ValueError(f"{FLAG}={path}: for one-record examples (not multiple choice or windows)")
    examples = read_unlabelled(path, pairs=train.text_pair)
    info = {"truncated": 0}
    placeholder = [dataclasses.replace(e, label=labels[0]) for e in examples]
    features = convert_examples(placeholder, tokenizer, train.max_seq_length, labels, info)
    combined, labelled = append(train, features, cache_dir)
    print(f"{FLAG}: {len(examples):,} unlabelled examples; {combined.describe()}", flush=True)
    return combined, labelled


@dataclasses.dataclass(frozen=True)
class DistillationSettings:
    """Distillation from a fine-tuned teacher (albert_tf.training.distillation)."""

    teacher_checkpoint: str | None = setting(
        None,
        "Distil from this fine-tuned classifier (a fine-tuned model directory, e.g. "
        "EXPORT_DIR/N/assets.extra/finetuned of a run_classifier --export_dir): the loss is "
        "alpha·T²·KL(teacher/T ‖ student/T) + (1 - alpha)·CE. Same labels and vocabulary.",
        resume="guarded",
    )
    teacher_logits_file: str | None = setting(
        None,
        "Distil from a file of any teacher's outputs instead: JSON lines, the first "
        '{"labels": [...]}, then {"id" | "text" (+ "text_pair"): ..., "logits" | '
        '"probabilities": [...]} per training example (data_pipeline.classification.'
        "teacher_logits; albert_tf.tools.hf_teacher_logits writes one).",
        resume="guarded",
    )
    distill_temperature: float = setting(
        2.0, "Distillation temperature T.", above=0, resume="guarded"
    )
    distill_alpha: float = setting(
        0.5,
        "Weight of the teacher's soft targets (1 - alpha: the labels).",
        minimum=0,
        maximum=1,
        resume="guarded",
    )
    distill_unlabelled_file: str | None = setting(
        None,
        "With a teacher: a UTF-8 text file of unlabelled examples, one a line "
        "(text_a<TAB>text_b for a sentence-pair task), added to the training set with the "
        "teacher's soft targets only (loss T²·KL; data_pipeline.classification.unlabelled).",
        resume="guarded",
    )

    def __post_init__(self):
        check_fields(self)
