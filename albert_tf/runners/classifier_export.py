"""run_classifier.py's `--export_dir`: the trained classifier's task.json (labels, text pair,
length, thresholds, document windows) and its export with the format flags, one per run."""

from __future__ import annotations

import os

from absl import flags

FLAGS = flags.FLAGS


def export_classifier(spec, labels, source, mode, task, trainer, run_dir, per_run, tokenizer_spec):
    """Exports `trainer`'s model (LoRA: merged into the kernels) of `task` (a classifier of
    the TaskSpec `spec` with `labels`, trained on the features `source`; `mode`: its
    label_modes decision rule) as EXPORT_DIR/N, or with --num_runs (`per_run`) as
    EXPORT_DIR/run_i/N for the run in `run_dir`. Returns the paths written."""
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.runners.classifier_flags import document_windows_from_flags
    from albert_tf.runners.export_flags import export_trained_from_flags
    from albert_tf.runners.lora_flags import exported_model

    export_dir = FLAGS.export_dir
    if per_run:
        export_dir = os.path.join(export_dir, os.path.basename(run_dir))
    serving = spec.serving_task(
        labels, source.text_pair, source.max_seq_length, FLAGS.do_lower_case, trainer.step,
        mode.thresholds(),
    )  # fmt: skip
    if source.info.get("document_windows") is not None:
        serving.update(document_windows_from_flags().task_fields())
    model = exported_model(task, trainer.model)
    return export_trained_from_flags(model, export_dir, TaskInfo.build(**serving), tokenizer_spec)
