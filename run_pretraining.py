"""Pretrain ALBERT (MLM + SOP) on the TFRecords of create_pretraining_data (data_pipeline).

    python run_pretraining.py --input_file 'data/pretrain/*.tfrecord' --output_dir out/run \\
        --albert_config_file albert_config.json --train_batch_size 4096 \\
        --num_train_steps 125000 --num_warmup_steps 3125 --learning_rate 0.00176 \\
        [--strategy tpu --tpu NAME] [--dtype bfloat16] [--jit_compile] [--flagfile F]

A thin runner: flags → frozen configs (written to OUTPUT_DIR/run_config.json) → the trainer
of albert_tf/training. The records' meta_data.json says how to read them (sequence length,
predictions per sequence, dynamic masking, sentence order, casing:
data_pipeline.pretraining.meta_data); the same flags may repeat it, and one that contradicts
it is a one-line error. Re-running the same command resumes from the last checkpoint.
Exit status 143 after a SIGTERM (preemption) checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from absl import app, flags

from albert_tf.runners import flags as shared_flags
from albert_tf.runners.run_setup import run_main

FLAGS = flags.FLAGS


# The runner's flags are defined in albert_tf.runners.flags.
define_flags = shared_flags.define_pretraining_flags


def main(argv):
    del argv
    from absl import logging

    logging.set_verbosity(logging.WARNING)  # TF's INFO lines would drown the progress
    return run_main(_main)


def _main() -> int:
    import tensorflow as tf
    from albert_tf.training import PretrainingTask, Trainer
    from data_pipeline.io.atomic import write_json
    from data_pipeline.documents import expand_input_files
    from data_pipeline.pretraining.input_pipeline import pretraining_dataset
    from data_pipeline.pretraining.meta_data import find_corrupt, pretraining_data

    shared_flags.resolve_tokenizer_flags()

    # Everything is checked before the first write (setup_run creates the output directory).
    shared_flags.check_pretraining_flags()
    shared_flags.check_output_dir(FLAGS.output_dir)
    albert_config = shared_flags.albert_config_from_flags()
    trainer_config = shared_flags.trainer_config_from_flags()
    files = expand_input_files(FLAGS.input_file)
    eval_files = expand_input_files(FLAGS.eval_input_file) if FLAGS.eval_input_file else []
    data = pretraining_data(
        files + eval_files,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        dynamic_masking=FLAGS.dynamic_masking,
        do_lower_case=FLAGS.do_lower_case,
    )
    shared_flags.check_sequence_length(
        albert_config,
        data.max_seq_length,
        "--max_seq_length"
        if FLAGS.max_seq_length
        else f"{data.meta_file or files[0]}: the records' max_seq_length",
    )
    shared_flags.check_records_vocabulary(albert_config, files + eval_files)
    given = FLAGS.spm_model_file or FLAGS.vocab_file
    if FLAGS.export_dir and not given:
        raise ValueError(
            "--export_dir needs the records' tokenizer: --spm_model_file or --vocab_file"
        )
    if data.dynamic_masking and not given:
        raise ValueError(
            "records written with --dynamic_masking need their tokenizer: "
            "--spm_model_file or --vocab_file"
        )
    tokenizer = masker = None
    if given:
        from data_pipeline.tokenization.spec import TokenizerSpec

        tokenizer = TokenizerSpec.from_files(
            FLAGS.spm_model_file, FLAGS.vocab_file, data.do_lower_case is not False
        ).build()
        flag = (
            f"--spm_model_file={FLAGS.spm_model_file}"
            if FLAGS.spm_model_file
            else f"--vocab_file={FLAGS.vocab_file}"
        )
        data.check_vocabulary(tokenizer, flag)
        shared_flags.check_vocab_size(albert_config, tokenizer.vocab_size, flag)
    if data.dynamic_masking:
        from data_pipeline.pretraining.masking import NgramMasker

        masker = NgramMasker.from_tokenizer(
            tokenizer, max_predictions_per_seq=data.max_predictions_per_seq, **data.masking
        )

    run = shared_flags.setup_run_from_flags(
        "run_pretraining",
        trainer_config,
        albert_config,
        True,
        input_files=files,
        data_meta=data.summary,
        data=dataclasses.asdict(data),
        sop_weight=data.sop_weight,
    )

    def dataset_fn(patterns, global_batch, training):
        def fn(ctx):
            return pretraining_dataset(
                patterns,
                ctx.get_per_replica_batch_size(global_batch),
                data.max_seq_length,
                data.max_predictions_per_seq,
                is_training=training,
                input_context=ctx,
                seed=trainer_config.seed,
                dynamic_masker=masker,
                special_ids=(tokenizer.cls_id, tokenizer.sep_id) if masker else None,
                length_buckets=shared_flags.length_buckets_from_flags() if training else None,
            )

        return fn

    task = PretrainingTask(
        albert_config, data.max_seq_length, data.max_predictions_per_seq, data.sop_weight
    )
    try:
        trainer = Trainer(
            task,
            trainer_config,
            run.strategy,
            dataset_fn(files, run.micro_batch, True),
            dataset_fn(eval_files, FLAGS.eval_batch_size, False) if eval_files else None,
            init_checkpoint=FLAGS.init_checkpoint,
        )
        result = trainer.train()
    except tf.errors.DataLossError:
        where = find_corrupt(files + eval_files)
        raise ValueError(
            f"corrupt input record: {where or 'see the TensorFlow error above'}"
        ) from None
    write_json(os.path.join(run.output_dir, "final_metrics.json"), result)
    print(json.dumps(result))
    if FLAGS.export_dir and run.output_dir == trainer_config.output_dir:  # the chief exports
        from albert_tf.serving.export import export_formats

        paths = export_formats(
            "encoder",
            os.path.join(run.output_dir, "checkpoints"),
            FLAGS.export_dir,
            **shared_flags.export_formats_from_flags(),
            albert_config=albert_config,
            spm_model_file=FLAGS.spm_model_file,
            vocab_file=FLAGS.vocab_file,
            max_seq_length=data.max_seq_length,
            do_lower_case=data.do_lower_case is not False,
        )
        for path in paths:
            print(f"{'LiteRT' if path.endswith('.tflite') else 'SavedModel'}: {path}", flush=True)
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(lambda argv: sys.exit(main(argv)))
