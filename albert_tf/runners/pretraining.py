"""Pretraining (run_pretraining.py): MLM + SOP on the TFRecords of create_pretraining_data
(data_pipeline), on the shared trainer; the same parser and run records as every runner.

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

from albert_tf.serving.formats import ExportSettings
from albert_tf.training.config import TrainerConfig
from albert_tf.training.distribution import DistributionSettings
from albert_tf.training.finetuning_settings import ModelSettings
from albert_tf.training.pretraining_inputs import PretrainingSettings, length_buckets
from albert_tf.training.resume_checks import ResumeSettings
from data_pipeline.command import Command

COMMAND = Command(
    "run_pretraining",
    __doc__,
    (
        TrainerConfig,
        ModelSettings,
        DistributionSettings,
        ResumeSettings,
        PretrainingSettings,
        ExportSettings,
    ),
    defaults={
        "learning_rate": 0.00176,
        "optimizer": "lamb",
        "num_train_steps": 125000,
        "num_warmup_steps": 3125,
        "steps_per_loop": 1000,
        "save_checkpoints_steps": 5000,
    },
    required=("input_file", "output_dir"),
)


def check(s) -> None:
    """The checks that need no file: the settings that do not go together, the starting
    checkpoint, --allow_changed, the length buckets and the output directory."""
    from albert_tf.training import run_setup as checks

    checks.check_run_settings(s)
    length_buckets(s)
    checks.check_output_dir(s.output_dir)


def run(s) -> dict:
    """One pretraining invocation with settings `s` (COMMAND's value): the final metrics."""
    from albert_tf.checkpoints.run_identity import records_identity, run_identity
    from albert_tf.serving.export import print_exports
    from albert_tf.training.pretraining_inputs import pretraining_dataset_fn, pretraining_inputs
    from albert_tf.training.run_setup import setup_settings_run
    from data_pipeline.io.atomic import write_json
    from data_pipeline.pretraining.meta_data import find_corrupt

    # Everything is checked before the first write (setup_run creates the output directory).
    check(s)
    inputs = pretraining_inputs(s)
    albert_config, data = inputs.albert_config, inputs.data
    trainer_config = s.group(TrainerConfig)
    files, eval_files = inputs.files, inputs.eval_files
    buckets = length_buckets(s)
    identity = run_identity(
        "run_pretraining",
        "pretraining",
        albert_config,
        inputs.tokenizer or data.tokenizer,
        data=records_identity(files),
    )
    run = setup_settings_run(
        "run_pretraining",
        trainer_config,
        s,
        albert_config,
        buckets,
        training=True,
        identity=identity,
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
            pretraining_dataset_fn(inputs, files, run.micro_batch, True, seed, buckets),
            pretraining_dataset_fn(inputs, eval_files, s.eval_batch_size, False, seed)
            if eval_files
            else None,
            init_checkpoint=s.init_checkpoint,
        )
        result = trainer.train()
    except tf.errors.DataLossError:
        where = find_corrupt(files + eval_files)
        raise ValueError(
            f"corrupt input record: {where or 'see the TensorFlow error above'}"
        ) from None
    write_json(os.path.join(run.output_dir, "final_metrics.json"), result)
    print(json.dumps(result))
    if s.export_dir and run.output_dir == trainer_config.output_dir:  # the chief exports
        from albert_tf.serving.export import export_formats
        from albert_tf.serving.formats import export_formats as export_settings

        spec = inputs.tokenizer_spec
        paths = export_formats(
            "encoder",
            os.path.join(run.output_dir, "checkpoints"),
            s.export_dir,
            **export_settings(s),
            albert_config=albert_config,
            tokenizer=spec,
            max_seq_length=data.max_seq_length,
            do_lower_case=data.do_lower_case is not False,
        )
        print_exports(paths)
    return result


def main(argv=None) -> int:
    """The console command `albert-pretrain`: parse once, run; the exit code."""
    from albert_tf.training.run_setup import run_command

    return run_command(COMMAND, run, argv)
