"""run_ner.py's flags, generated from `NerSettings` on top of the fine-tuning flags; its
files (explicit flags or DATA_DIR/{train,dev,test}.txt or .jsonl), the tag scheme the
entity metrics read, and its up-front checks."""

from __future__ import annotations

import dataclasses

from absl import flags

from albert_tf.runners.export_flags import define_export_format_flags
from albert_tf.runners.finetuning_flags import (
    check_finetuning_flags,
    define_finetuning_flags,
    tokenizer_spec_from_flags,
)
from albert_tf.runners.lora_flags import define_lora_flags, lora_settings_from_flags
from data_pipeline.cli import define_flags_from, setting
from data_pipeline.io import filesystem

FLAGS = flags.FLAGS

TAG_SCHEMES = ("auto", "none", "IOB2", "IOE2", "IOBES", "BMES", "BILOU")
SPLIT_FLAGS = {"train": "train_file", "dev": "dev_file", "test": "test_file"}
KIND = "token_classifier"  # the task kind of --export_dir (albert_tf.checkpoints.task_kinds)


@dataclasses.dataclass(frozen=True)
class NerSettings:
    """run_ner.py's own settings: files, what to do, windows, the tag scheme, the export."""

    data_dir: str | None = setting(
        None, "A directory with train/dev/test files (.txt CoNLL columns, or .jsonl)."
    )
    train_file: str | None = setting(
        None,
        "Training file (default DATA_DIR/train.txt, else train.jsonl); the label list is "
        "discovered from it (also for --do_eval/--do_predict alone).",
    )
    dev_file: str | None = setting(None, "Dev file (default DATA_DIR/dev.txt or dev.jsonl).")
    test_file: str | None = setting(None, "Test file (default DATA_DIR/test.txt or test.jsonl).")
    do_train: bool = setting(False, "Fine-tune on the training file.")
    do_eval: bool = setting(False, "Evaluate on the dev file (entity P/R/F1, token accuracy).")
    do_predict: bool = setting(
        False, "Tag the test file into OUTPUT_DIR/predictions.conll (token gold predicted)."
    )
    doc_stride: int = setting(
        128, "Pieces between window starts of a sentence longer than max_seq_length.", minimum=1
    )
    tag_scheme: str = setting(
        "auto",
        "How entities are read from tags for the metrics: auto (the strict scheme the "
        "labels are written in, data_pipeline.tagging.metrics.detect_scheme; none when they "
        "fit none), none (seqeval's default, lenient, conlleval-compatible), or a strict "
        "scheme.",
        choices=TAG_SCHEMES,
    )
    eval_batch_size: int = setting(32, "Evaluation/prediction batch size.", minimum=1)
    class_weights: str | None = setting(
        None,
        "Weigh the token loss by tag: auto (n / (tags · count), scikit-learn's balanced, "
        "from the training words' tags) or one weight per tag of the label list (in "
        "run_config.json's order), comma-separated; the loss is the weighted mean over the "
        "words' first pieces (albert_tf.training.class_weights).",
    )
    classifier_dropout: float = setting(
        0.1, "Dropout on the sequence output before the token head.", minimum=0, below=1
    )
    num_runs: int = setting(
        1,
        "Fine-tune with seeds seed, seed+1, ... (OUTPUT_DIR/run_i); eval_results.json "
        "reports median, min, max and std.",
        minimum=1,
    )
    export_dir: str | None = setting(
        None,
        "When done, export a SavedModel that tags raw text as EXPORT_DIR/N "
        "(albert_tf.serving.export), with the fine-tuned checkpoint in "
        "N/assets.extra/finetuned. With --num_runs, one per run.",
    )


def define_ner_flags() -> None:
    """The flags of run_ner.py (the fine-tuning flags with its defaults — Hugging Face
    run_ner's learning rate 5e-5 and 3 epochs, windows of 128 —, its own, the export
    formats)."""
    define_finetuning_flags(learning_rate=5e-5, max_seq_length=128, num_train_epochs=3.0)
    define_flags_from(NerSettings, FLAGS)
    define_lora_flags()
    define_export_format_flags()
    flags.mark_flags_as_required(["output_dir"])


def ner_file(split: str) -> str | None:
    """The file of `split` (train, dev, test): its flag, else DATA_DIR/SPLIT.txt, else
    DATA_DIR/SPLIT.jsonl when only that exists (None: neither flag nor --data_dir)."""
    given = getattr(FLAGS, SPLIT_FLAGS[split])
    if given or not FLAGS.data_dir:
        return given
    txt = filesystem.join(FLAGS.data_dir, f"{split}.txt")
    jsonl = filesystem.join(FLAGS.data_dir, f"{split}.jsonl")
    return jsonl if not filesystem.exists(txt) and filesystem.exists(jsonl) else txt


def check_recipe(recipe: str | None) -> None:
    """--recipe (paper) is a one-line error: no ALBERT source gives NER values."""
    if recipe:
        raise ValueError(
            f"--recipe={recipe}: no ALBERT source publishes NER hyper-parameters (the "
            "paper's Table 14 and the official repository cover GLUE, SQuAD and RACE only); "
            "give --learning_rate, --train_batch_size, --num_train_epochs yourself"
        )


def check_ner_flags() -> None:
    """run_ner.py's up-front checks: something to do, the files it needs (the training
    file always: the label list comes from it), every range, and what can be exported."""
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")
    needed = [("train", True), ("dev", FLAGS.do_eval), ("test", FLAGS.do_predict)]
    for split, wanted in needed:
        if wanted and not ner_file(split):
            why = "the label list is discovered from it" if split == "train" else "its file"
            raise ValueError(f"give --{SPLIT_FLAGS[split]} or --data_dir ({split} split: {why})")
    check_finetuning_flags(FLAGS.do_train)
    lora_settings_from_flags()  # (--lora_targets, --lora_rank without --init_checkpoint)
    if FLAGS.export_dir:
        from albert_tf.checkpoints.task_kinds import task_kind

        kind = task_kind(KIND)  # one line naming the known kinds while it is not registered
        spec = tokenizer_spec_from_flags()
        reason = kind.on_device_refusal(spec.is_wordpiece)
        if reason and "tflite" in FLAGS.export_format:
            raise ValueError(f"--export_format tflite with {spec.flag}={spec.path}: {reason}")


def resolve_tag_scheme(choice: str, labels: list[str]) -> str | None:
    """The scheme the metrics read entities with (None: seqeval's default mode) for the
    label list: `choice` (--tag_scheme), `auto` detected from the labels. A strict scheme
    the labels are not written in is a ValueError naming the flag."""
    from data_pipeline.tagging.metrics import detect_scheme, entities

    if choice not in TAG_SCHEMES:
        raise ValueError(f"--tag_scheme={choice}: expected one of {', '.join(TAG_SCHEMES)}")
    if choice == "auto":
        return detect_scheme(labels)
    if choice == "none":
        return None
    try:
        entities([labels], choice)
    except ValueError as e:
        raise ValueError(f"--tag_scheme={choice}: the training labels: {e}") from None
    return choice


def class_weights_from_flags(labels: list[str], train_sentences) -> tuple[float, ...] | None:
    """--class_weights: one weight per tag of `labels`, `auto` balanced from the tags of
    the training words (`train_sentences`, data_pipeline.tagging.data); None without the
    flag. One-line ValueErrors (albert_tf.training.class_weights)."""
    from albert_tf.training.class_weights import parse_class_weights, resolve_class_weights

    asked = parse_class_weights(FLAGS.class_weights, labels, False, None)

    def counts():
        index = {tag: i for i, tag in enumerate(labels)}
        found = [0] * len(labels)
        for sentence in train_sentences:
            for tag in sentence.tags:
                found[index[tag]] += 1
        return found

    return resolve_class_weights(asked, labels, counts)
