"""run_classifier.py's flags, generated from `ClassificationTaskSettings` (which task, and
where and how its files are: data_pipeline.classification.tasks.TaskSpec) and
`ClassifierSettings` (what to do and how), on top of the fine-tuning flags."""

from __future__ import annotations

import dataclasses

from absl import flags

from albert_tf.runners.distill_flags import define_distill_flags
from albert_tf.runners.export_flags import define_export_format_flags
from albert_tf.runners.finetuning_flags import check_finetuning_flags, define_finetuning_flags
from albert_tf.runners.lora_flags import define_lora_flags, lora_settings_from_flags
from albert_tf.runners.multi_label_flags import check_multi_label_flags, define_multi_label_flags
from albert_tf.runners.sweep_flags import check_sweep_flags, define_sweep_flags
from data_pipeline.classification.long_documents import DocumentWindows
from data_pipeline.cli import config_from_flags, define_flags_from, setting

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class ClassificationTaskSettings:
    """The flags of a classification task (TaskSpec's fields, the task named --task_name)."""

    task_name: str | None = setting(
        None,
        "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, chnsenticorp, afqmc; race, "
        "multiple_choice_jsonl; csv, tsv, jsonl.",
    )
    data_dir: str | None = setting(None, "The task's directory (its train/dev/test files).")
    train_file: str | None = setting(
        None, "csv/tsv/jsonl/race tasks: the training file (default DATA_DIR/train.EXT)."
    )
    dev_file: str | None = setting(None, "... the dev file (default DATA_DIR/dev.EXT).")
    test_file: str | None = setting(None, "... the test file (default DATA_DIR/test.EXT).")
    text_a_column: str = setting("text_a", "csv/tsv/jsonl: first text column.")
    text_b_column: str | None = setting(None, "csv/tsv/jsonl: second text column, if any.")
    label_column: str = setting("label", "csv/tsv/jsonl: label column.")
    regression: bool = setting(False, "csv/tsv/jsonl: the label is a number (MSE).")
    num_choices: int = setting(4, "race/multiple_choice_jsonl: choices per question.", minimum=1)
    multi_label: bool = setting(
        False,
        "csv/tsv/jsonl: any number of labels an example (sigmoid + binary cross-entropy; "
        "--threshold, --tune_thresholds), the label column holding them separated by "
        "--label_delimiter (jsonl: or a JSON list).",
    )
    label_delimiter: str = setting(",", "--multi_label: what separates the labels of a cell.")


@dataclasses.dataclass(frozen=True)
class ClassifierSettings:
    """run_classifier.py's own settings."""

    do_train: bool = setting(False, "Fine-tune on the train split.")
    do_eval: bool = setting(False, "Evaluate on the dev split(s).")
    do_predict: bool = setting(False, "Predict the test split.")
    eval_batch_size: int = setting(8, "Evaluation/prediction batch size.", minimum=1)
    classifier_dropout: float = setting(0.1, "Dropout on the pooled output.", minimum=0, below=1)
    max_train_examples: int = setting(
        0,
        "Fine-tune on this many training examples at most, drawn at random with --seed "
        "(0: all): learning curves, low-resource comparisons.",
        minimum=0,
    )
    num_runs: int = setting(
        1,
        "Fine-tune with seeds seed, seed+1, ...; eval_results.json reports median, min, max "
        "and std.",
        minimum=1,
    )
    class_weights: str | None = setting(
        None,
        "Weigh the classification loss by class: auto (n / (classes · count), "
        "scikit-learn's balanced, from the training labels) or one weight per label in "
        "the task's label order, comma-separated; the loss is their weighted mean "
        "(albert_tf.training.class_weights). --multi_label: each label's positive weight "
        "in its binary cross-entropy (auto: negatives/positives, clipped to [0.01, 100]).",
    )
    export_dir: str | None = setting(
        None,
        "When done, export a SavedModel that takes raw text as EXPORT_DIR/N (next version; "
        "albert_tf.serving.export), with the fine-tuned checkpoint, vocabulary and task.json "
        "in N/assets.extra/finetuned. With --num_runs, one per run.",
    )


def define_classifier_flags() -> None:
    """The flags of run_classifier.py (the fine-tuning flags with its defaults, the task's,
    its own, the export formats)."""
    define_finetuning_flags(learning_rate=3e-5, max_seq_length=512, num_train_epochs=3.0)
    define_flags_from(ClassificationTaskSettings, FLAGS)
    define_flags_from(ClassifierSettings, FLAGS)
    define_multi_label_flags()
    define_flags_from(DocumentWindows, FLAGS)  # --doc_stride, --max_document_windows, --aggregate
    define_lora_flags()
    define_distill_flags()
    define_sweep_flags()
    define_export_format_flags()
    flags.mark_flags_as_required(["task_name", "output_dir"])


def classification_task_from_flags():
    """The TaskSpec of the task flags (--task_name is its name)."""
    from data_pipeline.classification.tasks import TaskSpec

    return config_from_flags(TaskSpec, FLAGS, name=FLAGS.task_name)


def document_windows_from_flags() -> DocumentWindows:
    """How long texts are read (--doc_stride 0: truncated, the default)."""
    return config_from_flags(DocumentWindows, FLAGS)


def check_something_to_do() -> None:
    """ValueError unless --do_train, --do_eval or --do_predict is given (checked before a
    recipe is applied)."""
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")


def check_classifier_flags() -> None:
    """run_classifier.py's up-front checks: the fine-tuning checks (every range, this
    runner's too), the multi-label flags', the LoRA settings, and --sweep's (each point's
    values through the same checks)."""
    _check_settings()
    check_multi_label_flags()
    check_sweep_flags(_check_settings)


def _check_settings() -> None:
    check_finetuning_flags(FLAGS.do_train)
    lora_settings_from_flags()
