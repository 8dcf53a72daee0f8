"""Training: the one trainer, the tasks it trains, the optimizers, strategy and precision
setup."""

from albert_tf.training.config import TrainerConfig
from albert_tf.training.distribution import make_strategy, set_precision, task_output_dir
from albert_tf.training.stops import Interrupted, NonFiniteLoss, Preempted
from albert_tf.training.tasks import (
    ClassificationTask,
    PretrainingTask,
    SquadTask,
    SquadV2Task,
    Task,
    divisors,
)
from albert_tf.training.trainer import Trainer

__all__ = [
    "TrainerConfig",
    "Trainer",
    "Task",
    "PretrainingTask",
    "ClassificationTask",
    "SquadTask",
    "SquadV2Task",
    "make_strategy",
    "set_precision",
    "Preempted",
    "Interrupted",
    "NonFiniteLoss",
    "task_output_dir",
    "divisors",
]
