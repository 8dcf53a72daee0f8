"""The fine-tuning controls a run records in each segment of run_config.json, so that a
resumed run that changes one is refused (albert_tf.checkpoints.run_record: LoRA's alpha,
the teacher and its temperature and weight, the class weights are `GUARDED_SETTINGS`,
changeable with --allow_changed; LoRA's rank and targets are `FIXED_SETTINGS`). Early
stopping and layer-wise decay are TrainerConfig fields, recorded with the trainer's.

A control the runner does not define is not recorded (and so not compared); one that is
off records its details as None, so that changing a flag it ignores is no change."""

from __future__ import annotations

from absl import flags

FLAGS = flags.FLAGS


def _flag(name: str):
    return FLAGS[name].value if name in FLAGS else None


def recorded_controls() -> dict:
    """{setting: JSON value} of the controls the runner defines (see the module docstring);
    lists, not tuples, so that a value read back from the file compares equal."""
    out = {}
    if "lora_rank" in FLAGS:
        rank = FLAGS.lora_rank
        out["lora_rank"] = rank
        out["lora_alpha"] = _flag("lora_alpha") if rank else None
        out["lora_targets"] = list(FLAGS.lora_targets or ()) if rank else None
    if "teacher_checkpoint" in FLAGS:
        teacher = FLAGS.teacher_checkpoint or None
        out["teacher_checkpoint"] = teacher
        out["distill_temperature"] = FLAGS.distill_temperature if teacher else None
        out["distill_alpha"] = FLAGS.distill_alpha if teacher else None
        out["distill_unlabelled_file"] = _flag("distill_unlabelled_file") if teacher else None
    if "class_weights" in FLAGS:
        out["class_weights"] = FLAGS.class_weights or None
    return out
