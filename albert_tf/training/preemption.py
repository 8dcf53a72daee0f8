"""Coordinated preemption for multi-worker and TPU strategies, with TensorFlow's
`tf.distribute.experimental.PreemptionCheckpointHandler`.

On one host a SIGTERM only has to reach one process: the trainer sets a flag, writes a
checkpoint at the end of the current loop and stops. Under `MultiWorkerMirroredStrategy`
that is not enough: the signalled worker would checkpoint alone while the others wait for
it in the next loop's all-reduce. TensorFlow's handler makes the workers agree through the
coordination service: the signalled one publishes a run count (the number of the call
after its next one), every worker acknowledges it, and all of them save at that same call
and exit. Here:

- One call of the handler per training loop (`save_checkpoint_if_preempted`, the form of
  its API that suits multi-step functions), not `handler.run` per step: the trainer keeps
  its `steps_per_loop` loops, and the workers, which the loop's all-reduces keep within
  one loop of each other, agree on a loop end. The checkpoint comes one or two loops after
  the signal (one to notice it, the agreed next one to reach it).
- The trainer's SIGTERM flag is the handler's `termination_watcher_fn` (polled once a
  second by the handler's thread): one SIGTERM handler per process (the trainer's, restored
  when training ends), and the same trigger on every platform.
- The handler saves with `save_fn`, the trainer's own save into its `CheckpointManager`:
  the coordinated checkpoint is an ordinary `ckpt-<step>` among the scheduled ones (the
  chief's in `output_dir/checkpoints`), which `resume.restore_newest` finds on restart.
- When created, the handler restores the newest checkpoint of the manager it is given. It
  is given a manager of its own (an empty `tf.train.Checkpoint`, which then holds only its
  call counter, in a directory nothing is written to): the run's state is restored once,
  by `resume.restore_newest`, from the chief's directory on every worker (robust to damaged
  checkpoint directories); the call counter starts at 0 on every worker, which is all it
  needs (it only has to agree between workers).
- After saving, the handler calls `exit_fn`, which raises the trainer's `Preempted`: the
  runners exit with 143, as on one host.

TPUStrategy has one Python client driving every TPU host, so its checkpoint is always
"every worker at the same step"; the handler is created for it too (on TPUs it watches the
platform's preemption notice through the coordination service), and the trainer keeps its
own SIGTERM path there, since TensorFlow's handler does nothing on Google Cloud's TPU and
CPU VMs (it logs a warning). A `MultiWorkerMirroredStrategy` without a cluster (no
TF_CONFIG) is one host: no handler.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass
class CoordinatedPreemption:
    """A `PreemptionCheckpointHandler` set up for the trainer (see the module docstring).

    `handles_sigterm`: True when the handler decides when this process's SIGTERM is acted
    on (multi-worker); False when the trainer's one-host path stays in charge (TPU).
    """

    handler: object
    handles_sigterm: bool

    def after_loop(self, step: int) -> None:
        """At the end of every training loop but the last, on every worker: saves checkpoint
        `step` and calls `exit_fn` when the cluster agreed to stop here, else returns."""
        self.handler.save_checkpoint_if_preempted(step)


def coordinated_preemption(
    strategy,
    signalled: Callable[[], bool],
    save: Callable[[int], None],
    stop: Callable[[], None],
    directory: str,
) -> CoordinatedPreemption | None:
    """The handler for a multi-worker or TPU `strategy`; None for one host.

    Args:
      strategy: the run's `tf.distribute.Strategy`.
      signalled: True once this process got SIGTERM (the handler polls it).
      save: `step → None`, writes checkpoint `step` (on every worker).
      stop: called after that save; raises to end training.
      directory: where the handler's own (never written) checkpoint manager points.
    """
    import tensorflow as tf

    resolver = getattr(strategy, "cluster_resolver", None)
    tpu_class = getattr(tf.distribute, "TPUStrategy", None)  # (tests may replace it)
    tpu = isinstance(tpu_class, type) and isinstance(strategy, tpu_class)
    multi_worker = (
        isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
        and resolver is not None
        and bool(resolver.cluster_spec().jobs)
    )
    if not (tpu or multi_worker):
        return None
    counter_only = tf.train.CheckpointManager(tf.train.Checkpoint(), directory, max_to_keep=1)
    config = tf.distribute.experimental.TerminationConfig(
        termination_watcher_fn=signalled,
        exit_fn=stop,
        grace_period=0,
        save_fn=save,
    )
    handler = tf.distribute.experimental.PreemptionCheckpointHandler(
        resolver, counter_only, termination_config=config
    )
    return CoordinatedPreemption(handler, handles_sigterm=multi_worker)
