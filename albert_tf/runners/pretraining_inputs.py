"""What run_pretraining.py trains on, resolved from its settings and checked before anything
is written: the model config, the record files and how to read them (their meta_data.json:
data_pipeline.pretraining.meta_data), the tokenizer when one is needed (dynamic masking,
--export_dir) and the dynamic masker; and the tf.data input of the trainer from them."""

from __future__ import annotations

import dataclasses

from albert_tf.runners import checks
from albert_tf.runners.settings import albert_config, config_source


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
