"""run_pretraining.py's flags, generated from the trainer's (with the paper's pretraining
defaults) and `PretrainingSettings`, and its up-front checks."""

from __future__ import annotations

import dataclasses

from absl import flags

from albert_tf.runners import checks
from albert_tf.runners.export_flags import define_export_format_flags
from albert_tf.runners.trainer_flags import batch_buckets, define_trainer_flags
from data_pipeline.cli import define_flags_from, setting

FLAGS = flags.FLAGS

FROM_RECORDS = (
    "As the records were written (default: their meta_data.json, else their first record)."
)


@dataclasses.dataclass(frozen=True)
class PretrainingSettings:
    """run_pretraining.py's own settings: the records and how to read them, the batches,
    the tokenizer (dynamic masking, --export_dir) and the export."""

    input_file: str | None = setting(None, "Training TFRecords: comma-separated globs.")
    eval_input_file: str | None = setting(None, "Evaluation TFRecords (held-out documents).")
    max_seq_length: int | None = setting(None, FROM_RECORDS, minimum=1)
    max_predictions_per_seq: int | None = setting(None, FROM_RECORDS, minimum=1)
    train_batch_size: int = setting(4096, "Global batch size of one update.", minimum=1)
    eval_batch_size: int = setting(64, "Global evaluation batch size.", minimum=1)
    dynamic_masking: bool | None = setting(
        None,
        "Records written with --dynamic_masking: draw masks each epoch (default: as their "
        "meta_data.json says).",
    )
    spm_model_file: str | None = setting(
        None,
        "SentencePiece model of the records (needed for dynamic masking and --export_dir); "
        "or --vocab_file.",
    )
    vocab_file: str | None = setting(
        None,
        "WordPiece vocab.txt of the records (needed for dynamic masking and --export_dir); "
        "or --spm_model_file.",
    )
    length_buckets: str = setting(
        "",
        "Train on batches of instances grouped by length and padded to these lengths "
        "(e.g. 128,256,384; max_seq_length is always one) instead of max_seq_length: for "
        "corpora whose documents are short (the last instance of a document, and "
        "short_seq_prob's, are short). Off by default (static shapes, as the official code).",
    )
    export_dir: str | None = setting(
        None,
        "When done, export the encoder as a SavedModel that embeds raw text "
        "(albert_tf.serving.export: embed, encode, tokenize) as EXPORT_DIR/N "
        "(--export_format tflite: on-device files).",
    )
    do_lower_case: bool | None = setting(
        None,
        "--export_dir: the casing of the vocabulary (default: the records' meta_data.json, "
        "else lower-cased).",
    )


def define_pretraining_flags() -> None:
    """The flags of run_pretraining.py (the trainer's with the paper's pretraining
    defaults: LAMB at 0.00176, 125k steps, 3125 warmup steps; its own; the export
    formats)."""
    define_trainer_flags(
        learning_rate=0.00176,
        optimizer="lamb",
        num_train_steps=125000,
        num_warmup_steps=3125,
        steps_per_loop=1000,
        save_checkpoints_steps=5000,
    )
    define_flags_from(PretrainingSettings, FLAGS)
    define_export_format_flags()
    flags.mark_flags_as_required(["input_file", "output_dir"])


def length_buckets_from_flags() -> tuple[int, ...] | None:
    """--length_buckets (None: static shapes, the default, and on TPUs)."""
    return batch_buckets(FLAGS.length_buckets, False, FLAGS.strategy)


def check_pretraining_flags() -> None:
    """Every range (a pretraining run always trains: --num_train_steps >= 1; the record
    lengths when given), the length buckets and the output directory."""
    checks.check_common_flags()
    length_buckets_from_flags()
    checks.check_output_dir(FLAGS.output_dir)
