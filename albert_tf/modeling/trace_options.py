"""The options that change what a model's `call` traces without being one of its
arguments, as one value (`TraceOptions`) set for a block of code (`trace_options`).

Five things change the graph the encoder and its layers build, and are chosen by whoever
traces the model rather than by the model: stateless dropout masks (the trainer, for exact
resume: `dropout`), plain ops instead of the XLA-compiled elementwise kernels (SavedModels
for runtimes without XLA: `kernels`), the shared layer as one while loop (LiteRT files:
`layer_loop`), only the real tokens through the projections and the FFN (the serving
signatures: `packing`), activation recomputation (the trainer's --recompute: `recompute`).
They are read while a function is traced, deep inside the layers, so they are set for a
block rather than passed down every call:

    with trace_options(packed=True, recompute="layer"):
        ...  # models called (or tf.functions traced) here see both
    current_trace_options()  # the value in force here: TraceOptions() outside any block

Nested blocks compose: each replaces only the fields it names (`dataclasses.replace` of
the value in force) and restores the previous value on exit, also on an exception.

Where the value lives. A `contextvars.ContextVar`: per thread, and per asyncio task. A
tf.function (and Keras' `call` inside it) is traced synchronously in the thread that calls
it, so it sees the value that thread set when the trace happens. Two threads tracing at
once (`MirroredStrategy` runs each replica's function in its own thread; tests) each see
only their own. A new thread starts with the default `TraceOptions()` (Python does not
copy the context into threads: open the block inside the thread's function, as the trainer
does inside its replica function; `contextvars.copy_context().run` carries it over
explicitly, sharing the `DropoutSeed` counter with the parent).

Read at trace time only: a traced function keeps what it saw. The options are not part of
tf.function's cache key, so calling an already traced function in another block does not
trace it again; open the block inside the traced function, or keep one function per value
(as `albert_tf.training.prediction` does for `packed`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator
from typing import Any

RECOMPUTE_MODES = ("none", "layer", "group", "attention")


@dataclasses.dataclass(eq=False)
class DropoutSeed:
    """Where a block's stateless dropout masks come from: `seed` (int64 [2], e.g.
    `dropout.step_seed(...)`) and the index of the next dropout call (`next_call`).

    Each `dropout.Dropout` call with training=True in the block takes the next index (in
    trace order: with cross-layer sharing one layer is called L times, each call its own
    index) and draws its mask from fold_in(seed, index). The counter is the one mutable
    part of the trace options: it belongs to the block that set this object.
    """

    seed: Any
    next_call: int = 0

    def take(self) -> int:
        """The next call's index; advances the counter."""
        index = self.next_call
        self.next_call += 1
        return index

    def bookmark(self) -> DropoutSeed:
        """A copy from the current position: a block set with it later draws the masks
        the next calls draw now (activation recomputation replays part of a pass)."""
        return DropoutSeed(self.seed, self.next_call)


@dataclasses.dataclass(frozen=True)
class TraceOptions:
    """How models trace in the current block; the defaults are the plain training and
    inference graph.

    dropout: None, Keras' own (stateful) dropout; a `DropoutSeed`, masks that are a
      function of (seed, call index): what the trainer sets, with the seed folded from
      (run seed, step, micro-batch, replica), so that a resumed run draws the masks of an
      uninterrupted one (`albert_tf.modeling.dropout`).
    portable_kernels: trace the plain TensorFlow ops instead of the XLA-compiled GELU,
      LayerNorm and softmax kernels even where gradients are recorded (same values): for
      SavedModels meant for runtimes built without XLA (`albert_tf.modeling.kernels`).
    looped_layers: an encoder whose blocks are one shared block traces them as one
      tf.while_loop (LiteRT files: the weights packed once; `albert_tf.modeling.layer_loop`).
    packed: encoders called without an explicit `packed` argument compute only the real
      tokens outside attention (the serving signatures; `albert_tf.modeling.packing`).
    recompute: activation recomputation when gradients are taken, one of
      `RECOMPUTE_MODES`: "none", "layer", "group", "attention"
      (`albert_tf.modeling.recompute`).
    """

    dropout: DropoutSeed | None = None
    portable_kernels: bool = False
    looped_layers: bool = False
    packed: bool = False
    recompute: str = "none"

    def __post_init__(self):
        if self.recompute not in RECOMPUTE_MODES:
            raise ValueError(f"recompute={self.recompute!r} is not one of {RECOMPUTE_MODES}")


_DEFAULT = TraceOptions()
# Unset until a block sets it (then back to unset): a context without it reads _DEFAULT.
_CURRENT: contextvars.ContextVar[TraceOptions] = contextvars.ContextVar("albert_tf_trace_options")


def current_trace_options() -> TraceOptions:
    """The options in force in this thread (context): `TraceOptions()` outside any block."""
    return _CURRENT.get(_DEFAULT)


@contextlib.contextmanager
def trace_options(**changes) -> Iterator[TraceOptions]:
    """Within the block, the options in force with the named fields replaced (e.g.
    `packed=True`); yields the new value. An unknown field is a TypeError and an unknown
    recompute mode a ValueError, both before the block begins."""
    options = dataclasses.replace(current_trace_options(), **changes)
    token = _CURRENT.set(options)
    try:
        yield options
    finally:
        _CURRENT.reset(token)
