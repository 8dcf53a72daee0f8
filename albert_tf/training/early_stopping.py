"""Early stopping on the task's evaluation metric (`--early_stopping_patience N
[--early_stopping_min_delta d]`), with its state in the run's checkpoints.

The rule is Keras' `EarlyStopping` (mode "max", the metric `Task.best_metric` the best
checkpoint follows): an evaluation improves when `value - min_delta > best`; an improvement
becomes the new best and resets the count of evaluations without one; the run stops at the
evaluation that makes that count reach `patience`. The first finite evaluation always
improves on the initial best (-inf). A NaN/inf metric never improves (Keras' callback
takes a NaN first value as its best, after which nothing improves; here the next finite
value does).

The state (best value, evaluations without improvement, the step the run stopped at) is
three variables checkpointed with the model and the optimizer, and the trainer evaluates
before it writes the checkpoint of an evaluation step. A run killed at any point and
resumed with the same command therefore counts exactly the evaluations the uninterrupted
run counted, and stops at the same step; a stopped run's command re-run trains no further.
The best weights are `best/` as always (`RunFiles.keep_best`); the last checkpoint holds
the weights at the stopping step.
"""

from __future__ import annotations

import math


def early_stopping_error(patience: int, eval_every: int) -> str | None:
    """The one-line error for a patience the run cannot honour (no periodic evaluation to
    count), or None."""
    if patience and not eval_every:
        return (
            f"--early_stopping_patience={patience} needs --eval_every > 0 (the patience "
            f"counts evaluations, and without --eval_every there is only the final one)"
        )
    return None


class EarlyStopping:
    """The early-stopping rule and its checkpointed state (`state`, a `tf.Module` of
    `best` float64, `bad_evaluations` int64, `stopped_at` int64 (0: not stopped)).

    Args:
      patience: evaluations without improvement that stop the run (>= 1).
      min_delta: how much the metric must exceed the best to count as an improvement.
      metric: the evaluation result's key (the task's best metric).
    """

    def __init__(self, patience: int, min_delta: float, metric: str):
        import tensorflow as tf

        if patience < 1:
            raise ValueError(f"--early_stopping_patience={patience}: must be at least 1")
        self.patience, self.min_delta, self.metric = int(patience), float(min_delta), metric
        self.state = tf.Module(name="early_stopping")
        self.state.best = tf.Variable(-math.inf, dtype=tf.float64, trainable=False, name="best")
        self.state.bad_evaluations = tf.Variable(
            0, dtype=tf.int64, trainable=False, name="bad_evaluations"
        )
        self.state.stopped_at = tf.Variable(0, dtype=tf.int64, trainable=False, name="stopped_at")

    @property
    def best(self) -> float:
        return float(self.state.best.numpy())

    @property
    def bad_evaluations(self) -> int:
        return int(self.state.bad_evaluations.numpy())

    @property
    def stopped_at(self) -> int:
        """The step the run stopped at (0: it has not stopped)."""
        return int(self.state.stopped_at.numpy())

    def update(self, result: dict, step: int) -> bool:
        """Counts the evaluation `result` ({metric: value}) made at `step`; True when the
        run must stop there. ValueError (one line) when `result` lacks the metric."""
        if self.metric not in result:
            raise ValueError(
                f"--early_stopping_patience: the evaluation at step {step} has no "
                f"{self.metric!r} (it has {', '.join(sorted(result)) or 'nothing'})"
            )
        value = float(result[self.metric])
        if math.isfinite(value) and value - self.min_delta > self.best:
            self.state.best.assign(value)
            self.state.bad_evaluations.assign(0)
        else:
            self.state.bad_evaluations.assign_add(1)
        if self.bad_evaluations >= self.patience:
            self.state.stopped_at.assign(step)
            return True
        return False

    def describe(self) -> str:
        """One line for the log at the stop."""
        return (
            f"early stopping at step {self.stopped_at}: {self.metric} did not improve on "
            f"{self.best:.4f} by more than {self.min_delta:g} in {self.patience} "
            f"evaluation(s)"
        )


def early_stopping_for(task, config, evaluation) -> EarlyStopping | None:
    """The trainer's `EarlyStopping` for `config` (a TrainerConfig), or None when its
    patience is 0. ValueError (one line) when there is nothing to follow: no evaluation
    (`evaluation` None: no eval data, no evaluate_fn) or a task without a best metric."""
    patience = config.early_stopping_patience
    if not patience:
        return None
    message = early_stopping_error(patience, config.eval_every)
    if message:
        raise ValueError(message)
    if evaluation is None:
        raise ValueError(
            f"--early_stopping_patience={patience}: the run has no evaluation set to follow"
        )
    if not task.best_metric:
        raise ValueError(f"--early_stopping_patience={patience}: this task has no metric to follow")
    return EarlyStopping(patience, config.early_stopping_min_delta, task.best_metric)
