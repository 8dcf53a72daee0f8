"""What run_pretraining.py trains on, resolved from its flags and checked before anything
is written: the model config, the record files and how to read them (their meta_data.json:
data_pipeline.pretraining.meta_data), the tokenizer when one is needed (dynamic masking,
--export_dir) and the dynamic masker; and the tf.data input of the trainer from them."""

from __future__ import annotations

import dataclasses

from absl import flags

from albert_tf.runners import checks
from albert_tf.runners.pretraining_flags import check_pretraining_flags, length_buckets_from_flags
from albert_tf.runners.trainer_flags import albert_config_from_flags

FLAGS = flags.FLAGS


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


def pretraining_inputs_from_flags() -> PretrainingInputs:
    """The checked inputs of a pretraining run (module docstring); a one-line ValueError
    names the flag or file that does not fit."""
    from data_pipeline.documents import expand_input_files
    from data_pipeline.pretraining.meta_data import pretraining_data
    from data_pipeline.tokenization.spec import TokenizerSpec

    check_pretraining_flags()
    albert_config = albert_config_from_flags()
    files = expand_input_files(FLAGS.input_file)
    eval_files = expand_input_files(FLAGS.eval_input_file) if FLAGS.eval_input_file else []
    data = pretraining_data(
        files + eval_files,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        dynamic_masking=FLAGS.dynamic_masking,
        do_lower_case=FLAGS.do_lower_case,
    )
    checks.check_sequence_length(
        albert_config,
        data.max_seq_length,
        "--max_seq_length"
        if FLAGS.max_seq_length
        else f"{data.meta_file or files[0]}: the records' max_seq_length",
    )
    checks.check_records_vocabulary(albert_config, files + eval_files)
    spec = TokenizerSpec.optional(
        FLAGS.spm_model_file, FLAGS.vocab_file, do_lower_case=data.do_lower_case is not False
    )
    if FLAGS.export_dir and spec is None:
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
        checks.check_vocab_size(albert_config, tokenizer.vocab_size, f"{spec.flag}={spec.path}")
    if data.dynamic_masking:
        from data_pipeline.pretraining.masking import NgramMasker

        masker = NgramMasker.from_tokenizer(
            tokenizer, max_predictions_per_seq=data.max_predictions_per_seq, **data.masking
        )
    return PretrainingInputs(albert_config, files, eval_files, data, spec, tokenizer, masker)


def pretraining_dataset_fn(inputs: PretrainingInputs, patterns, global_batch, training, seed):
    """`input_context → tf.data.Dataset` of per-replica batches of `global_batch` from the
    records `patterns` (training: shuffled, repeated, length-bucketed with
    --length_buckets; dynamic masks drawn when the records say so)."""
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
            length_buckets=length_buckets_from_flags() if training else None,
        )

    return fn
