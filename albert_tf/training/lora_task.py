"""LoraTask: a task trained with LoRA adapters (albert_tf.modeling.lora), the encoder frozen.

The same loss, metrics and model as the task it wraps; its model carries adapters, only
they and the heads are trainable, and the run's checkpoints (and best/) hold only them
(`checkpointed`): for ALBERT-xxlarge a few MB instead of 0.9 GB a checkpoint. A resumed
run therefore loads the frozen base from --init_checkpoint again, then its own checkpoint
(`partial_checkpoints`; the trainer does both), and ends where an uninterrupted run does.
`merged_model` gives the plain model (adapters merged into the kernels) that is exported.
"""

from __future__ import annotations

from albert_tf.modeling.lora import LoraSettings, adapters_of, add_lora, merged_into
from albert_tf.training.tasks import Task


class LoraTask(Task):
    """`task` with LoRA `settings` (rank > 0); adapters seeded by `seed`."""

    partial_checkpoints = True

    def __init__(self, task: Task, settings: LoraSettings, seed: int):
        if not settings.enabled:
            raise ValueError("LoraTask needs lora_rank > 0")
        self.task, self.settings, self.seed = task, settings, seed
        self.albert_config = getattr(task, "albert_config", None)  # (layer-wise decay's map)
        self.losses, self.metrics = task.losses, task.metrics
        self.denominator_offsets, self.best_metric = task.denominator_offsets, task.best_metric

    def build_model(self):
        model = self.task.build_model()
        add_lora(model, self.settings, self.seed)
        return model

    def denominators(self, batch):
        return self.task.denominators(batch)

    def terms(self, batch, outputs):
        return self.task.terms(batch, outputs)

    def call_model(self, model, batch, training):
        return self.task.call_model(model, batch, training)

    def checkpointed(self, model):
        """A trackable of the adapters (`lora`) and the heads (by their attribute names),
        not the frozen encoder."""
        import tensorflow as tf

        from albert_tf.checkpoints.own import head_attributes

        heads = {name: getattr(model, name) for name in head_attributes(model)}
        return tf.train.Checkpoint(lora=adapters_of(model), **heads)

    def merged_model(self, model):
        """A plain model of the wrapped task holding `model`'s weights, each adapted
        kernel W + (alpha/r)·A·B."""
        plain = self.task.build_model()
        merged_into(model, plain)
        return plain
