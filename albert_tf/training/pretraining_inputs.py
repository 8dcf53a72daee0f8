"""What run_pretraining.py trains on: its own settings (`PretrainingSettings`), and what is
resolved from them and checked before anything is written: the model config, the record
files and how to read them (their meta_data.json: data_pipeline.pretraining.meta_data), the
tokenizer when one is needed (dynamic masking, --export_dir) and the dynamic masker; and
the tf.data input of the trainer from them."""

from __future__ import annotations

import dataclasses

from albert_tf.training import run_setup as checks
from albert_tf.training.finetuning_settings import albert_config, config_source
from data_pipeline.cli import setting

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
    train_batch_size: int = setting(
        4096, "Global batch size of one update.", minimum=1, resume="guarded"
    )
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
    do_lower_case: bool | None = setting(
        None,
        "--export_dir: the casing of the vocabulary (default: the records' meta_data.json, "
        "else lower-cased).",
    )


@dataclasses.dataclass(frozen=True)
class PretrainingInputs:
    """albert_config: the model's; files / eval_files: the record files (expanded globs);
    data: `PretrainingData` (sequence length, predictions, masking, casing, SOP weight);
    tokenizer_spec / tokenizer: the records' tokenizer, or None when not given (neither
    dynamic masking nor an export needs it); masker: the `NgramMasker` of dynamic masking,
    else None."""

    albert_config: object
    files: list
    eval_files: list
    data: object
    tokenizer_spec: object = None
    tokenizer: object = None
    masker: object = None


def pretraining_inputs(s) -> PretrainingInputs:
    """The checked inputs of a pretraining run with settings `s` (module docstring); a
    one-line ValueError names the flag or file that does not fit."""
    from data_pipeline.documents import expand_input_files
    from data_pipeline.pretraining.meta_data import pretraining_data
    from data_pipeline.tokenization.spec import TokenizerSpec

    config = albert_config(s)
    source = config_source(s)
    files = expand_input_files(s.input_file)
    eval_files = expand_input_files(s.eval_input_file) if s.eval_input_file else []
    data = pretraining_data(
        files + eval_files,
        max_seq_length=s.max_seq_length,
        max_predictions_per_seq=s.max_predictions_per_seq,
        dynamic_masking=s.dynamic_masking,
        do_lower_case=s.do_lower_case,
    )
    checks.check_sequence_length(
        config,
        data.max_seq_length,
        "--max_seq_length"
        if s.max_seq_length
        else f"{data.meta_file or files[0]}: the records' max_seq_length",
        source,
    )
    checks.check_records_vocabulary(config, files + eval_files, source)
    spec = TokenizerSpec.optional(
        s.spm_model_file, s.vocab_file, do_lower_case=data.do_lower_case is not False
    )
    if s.export_dir and spec is None:
        raise ValueError(
            "--export_dir needs the records' tokenizer: --spm_model_file or --vocab_file"
        )
    if data.dynamic_masking and spec is None:
        raise ValueError(
            "records written with --dynamic_masking need their tokenizer: "
            "--spm_model_file or --vocab_file"
        )
    tokenizer = masker = None
    if spec is not None:
        tokenizer = spec.build()
        data.check_vocabulary(tokenizer, f"{spec.flag}={spec.path}")
        checks.check_vocab_size(config, tokenizer.vocab_size, f"{spec.flag}={spec.path}", source)
    if data.dynamic_masking:
        from data_pipeline.pretraining.masking import NgramMasker

        masker = NgramMasker.from_tokenizer(
            tokenizer, max_predictions_per_seq=data.max_predictions_per_seq, **data.masking
        )
    return PretrainingInputs(config, files, eval_files, data, spec, tokenizer, masker)


def length_buckets(s) -> tuple[int, ...] | None:
    """--length_buckets (None: static shapes, the default, and on TPUs)."""
    from data_pipeline.length_buckets import batch_buckets

    return batch_buckets(s.length_buckets, False, s.strategy)


def pretraining_dataset_fn(
    inputs: PretrainingInputs, patterns, global_batch, training, seed, buckets=None
):
    """`input_context → tf.data.Dataset` of per-replica batches of `global_batch` from the
    records `patterns` (training: shuffled, repeated, grouped by length into `buckets`
    when given; dynamic masks drawn when the records say so)."""
    from data_pipeline.pretraining.input_pipeline import pretraining_dataset

    data, masker, tokenizer = inputs.data, inputs.masker, inputs.tokenizer

    def fn(ctx):
        return pretraining_dataset(
            patterns,
            ctx.get_per_replica_batch_size(global_batch),
            data.max_seq_length,
            data.max_predictions_per_seq,
            is_training=training,
            input_context=ctx,
            seed=seed,
            dynamic_masker=masker,
            special_ids=(tokenizer.cls_id, tokenizer.sep_id) if masker else None,
            length_buckets=buckets if training else None,
        )

    return fn
