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

from absl import flags

from albert_tf.runners.pretraining_flags import define_pretraining_flags as define_flags
from albert_tf.runners.run_setup import records_identity, run_entry, run_identity, run_main

FLAGS = flags.FLAGS


def main(argv):
    from absl import logging

    logging.set_verbosity(logging.WARNING)  # TF's INFO lines would drown the progress
    return run_main(_main, argv)


def _main() -> int:
    from albert_tf.runners.export_flags import export_formats_from_flags, print_exports
    from albert_tf.runners.pretraining_flags import length_buckets_from_flags
    from albert_tf.runners.pretraining_inputs import (
        pretraining_dataset_fn,
        pretraining_inputs_from_flags,
    )
    from albert_tf.runners.trainer_flags import setup_run_from_flags, trainer_config_from_flags
    from data_pipeline.io.atomic import write_json
    from data_pipeline.pretraining.meta_data import find_corrupt

    # Everything is checked before the first write (setup_run creates the output directory),
    # the flags' own values before TensorFlow is imported (their errors come at once).
    inputs = pretraining_inputs_from_flags()
    albert_config, data = inputs.albert_config, inputs.data
    trainer_config = trainer_config_from_flags()
    files, eval_files = inputs.files, inputs.eval_files
    run = setup_run_from_flags(
        "run_pretraining",
        trainer_config,
        albert_config,
        True,
        length_buckets_from_flags(),
        run_identity(
            "run_pretraining",
            "pretraining",
            albert_config,
            inputs.tokenizer or data.tokenizer,
            data=records_identity(files),
        ),  # fmt: skip
        input_files=files,
        data_meta=data.summary,
        data=dataclasses.asdict(data),
        sop_weight=data.sop_weight,
    )
    import tensorflow as tf

    from albert_tf.training import PretrainingTask, Trainer

    task = PretrainingTask(
        albert_config, data.max_seq_length, data.max_predictions_per_seq, data.sop_weight
    )
    seed = trainer_config.seed
    try:
        trainer = Trainer(
            task,
            trainer_config,
            run.strategy,
            pretraining_dataset_fn(inputs, files, run.micro_batch, True, seed),
            pretraining_dataset_fn(inputs, eval_files, FLAGS.eval_batch_size, False, seed)
            if eval_files
            else None,
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

        spec = inputs.tokenizer_spec
        paths = export_formats(
            "encoder",
            os.path.join(run.output_dir, "checkpoints"),
            FLAGS.export_dir,
            **export_formats_from_flags(),
            albert_config=albert_config,
            tokenizer=spec,
            max_seq_length=data.max_seq_length,
            do_lower_case=data.do_lower_case is not False,
        )
        print_exports(paths)
    return 0


def entry():
    """The console script `albert-pretrain`: `python run_pretraining.py`."""
    run_entry(__doc__, define_flags, main)


if __name__ == "__main__":
    entry()
