"""Training: the one trainer, the tasks it trains, the optimizers, strategy and precision
setup.

The names are imported on first use, so that the settings (`albert_tf.training.config`)
load without TensorFlow: a command's `--help` and its range errors come before it."""

import importlib

_EXPORTS = {
    "TrainerConfig": "albert_tf.training.config",
    "Trainer": "albert_tf.training.trainer",
    "Task": "albert_tf.training.tasks",
    "PretrainingTask": "albert_tf.training.tasks",
    "ClassificationTask": "albert_tf.training.tasks",
    "SquadTask": "albert_tf.training.tasks",
    "SquadV2Task": "albert_tf.training.tasks",
    "divisors": "albert_tf.training.tasks",
    "make_strategy": "albert_tf.training.distribution",
    "set_precision": "albert_tf.training.distribution",
    "task_output_dir": "albert_tf.training.distribution",
    "Preempted": "albert_tf.training.stops",
    "Interrupted": "albert_tf.training.stops",
    "NonFiniteLoss": "albert_tf.training.stops",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'albert_tf.training' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
