"""The ways a training run stops before its last step, each an exception the runners turn
into one line and an exit code (`albert_tf.training.run_setup.run_main`): preemption (143),
Ctrl-C (130), a NaN/inf loss (1, a ValueError), a peer lost by a multi-worker run (1,
`PeerLost`, an OSError) and SIGTERM outside the training loop (143: `Terminated`, raised by
`sigterm_raises`)."""

from __future__ import annotations

import contextlib
import signal
import threading


class Preempted(Exception):
    """Raised after a SIGTERM-triggered checkpoint; the runner exits with status 143."""


class Interrupted(Exception):
    """Ctrl-C (SIGINT, KeyboardInterrupt) during training: the message names the step
    reached and the last checkpoint, which the same command resumes from exactly (the steps
    after it are trained again); the runner exits with status 130."""


class PeerLost(OSError):
    """A collective operation of the run failed because another task is gone (TensorFlow's
    UnavailableError: a worker killed, its machine lost): the message names the task, the
    step reached and the last checkpoint, from which the same command on every worker
    resumes. The cluster cannot go on without it (collectives wait for every replica), so
    the run stops; it never hangs (TensorFlow's heartbeats find the lost task)."""


def peer_lost(error, step: int, last_checkpoint: str | None) -> PeerLost | None:
    """`error` (a tf.errors.UnavailableError of a collective) as PeerLost's one line: the
    lost tasks TensorFlow names (its heartbeat check, or the remote end of a broken
    connection) and its reason, without the graph's node lines. None when the message
    names no task of a cluster: then it is not a lost peer (a remote file system that
    is unavailable, say) and the error stays what it is."""
    import re

    message = getattr(error, "message", None) or str(error)
    tasks = sorted(set(re.findall(r"/job:\w+/replica:\d+/task:\d+", message)))
    if not tasks:
        return None
    lines = [x.strip() for x in message.splitlines() if x.strip()]
    lines = [x for x in lines if not x.startswith(("[[", "Detected at node", "File ", "Graph "))]
    keys = ("heartbeat", "connection", "recvmsg", "socket", "unavailable", "unhealthy")
    reason = next((x for x in lines if any(k in x.lower() for k in keys)), None)
    reason = (reason or (lines[0] if lines else "unavailable")).rstrip(":")
    lost = f"lost {', '.join(tasks)}"
    where = (
        f"the last checkpoint is {last_checkpoint}; the same command (on every worker) "
        "resumes from it"
        if last_checkpoint
        else "no checkpoint was written"
    )
    return PeerLost(f"stopped at step {step}: {lost} ({reason}); {where}")


class NonFiniteLoss(ValueError):
    """The loss or the gradients became NaN/inf (`on_nonfinite="stop"`): raised before
    anything from that step on is written (no checkpoint, best/, prediction or export)."""


class Terminated(BaseException):
    """SIGTERM outside the training loop (reading data, caching features, evaluating,
    predicting, exporting): raised where the main thread is, so every `with` block on the
    way out runs (staging directories removed, locks released); the runner exits with
    status 143 and one line. A BaseException, as KeyboardInterrupt: no `except Exception`
    swallows it. (The training loop installs its own handler: a checkpoint, then
    Preempted.)"""


def _raise_terminated(signum, frame):
    raise Terminated(
        "terminated (SIGTERM) outside the training loop: the phase under way was abandoned "
        "and its temporary files removed; the checkpoints are as they were (the same command "
        "resumes)"
    )


@contextlib.contextmanager
def sigterm_raises():
    """SIGTERM raises `Terminated` in the main thread while the block runs (Python's
    default ends the process at once, leaving staging directories such as an export's
    EXPORT_DIR/.finetuned-*/ behind). Python runs the handler between bytecodes: a SIGTERM
    during one long native call (a LiteRT conversion) takes effect when it returns. Off
    the main thread, no handler can be set: the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
