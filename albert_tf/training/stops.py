"""The ways a training run stops before its last step, each an exception the runners turn
into one line and an exit code (`albert_tf.training.run_setup.run_main`): preemption (143),
Ctrl-C (130), a NaN/inf loss (1, a ValueError)."""

from __future__ import annotations


class Preempted(Exception):
    """Raised after a SIGTERM-triggered checkpoint; the runner exits with status 143."""


class Interrupted(Exception):
    """Ctrl-C (SIGINT, KeyboardInterrupt) during training: the message names the step
    reached and the last checkpoint, which the same command resumes from exactly (the steps
    after it are trained again); the runner exits with status 130."""


class NonFiniteLoss(ValueError):
    """The loss or the gradients became NaN/inf (`on_nonfinite="stop"`): raised before
    anything from that step on is written (no checkpoint, best/, prediction or export)."""
