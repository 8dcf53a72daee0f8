"""Dropout whose masks are a function of (seed, step, micro-batch, replica, call): a run
killed and resumed from a checkpoint draws exactly the masks an uninterrupted run draws.

Keras' `Dropout` draws from a `SeedGenerator`, a counter advanced by every call and not
part of our checkpoints: a resumed run starts it again from zero and its masks differ
from step one on. Here the trainer opens a `dropout_seed(seed)` scope around each training
forward pass, with `seed` folded from (run seed, global step, micro-batch, replica id).
Inside the scope, the n-th dropout call of the pass (in trace order: with cross-layer
sharing one layer is called L times, and each call gets its own n) draws its mask with
`tf.nn.experimental.stateless_dropout(x, rate, fold_in(seed, n))` — the same kernel Keras
uses, so the cost is the same and XLA compiles it.

The scope is thread-local because `MirroredStrategy` traces each replica's function in its
own thread: the trainer opens it inside the replica function, where the replica id is
known. Outside a scope (a user calling `model(x, training=True)`), this is Keras' Dropout.
"""

from __future__ import annotations

import contextlib
import threading

import keras
import tensorflow as tf

_local = threading.local()


@contextlib.contextmanager
def dropout_seed(seed, first_call: int = 0):
    """Within the block, `Dropout` layers called with training=True draw their masks from
    `seed` (int64 [2], e.g. `step_seed(...)`) and their call index in the block, counted
    from `first_call` (activation recomputation replays a part of a pass: see
    `current_state`)."""
    previous = getattr(_local, "scope", None)
    _local.scope = {"seed": seed, "calls": first_call}
    try:
        yield
    finally:
        _local.scope = previous


def current_state():
    """(seed, index of the next dropout call) of the innermost `dropout_seed` scope, or
    None outside one: `dropout_seed(*current_state())` later draws the masks the next
    calls draw now."""
    scope = getattr(_local, "scope", None)
    return None if scope is None else (scope["seed"], scope["calls"])


def step_seed(seed: int, *parts):
    """int64 [2]: `seed` folded with each of `parts` (ints or scalar tensors: the global
    step, the micro-batch index, the replica id) in order."""
    out = tf.constant([seed, 0], tf.int64)
    for part in parts:
        out = tf.random.experimental.stateless_fold_in(out, tf.cast(part, tf.int64))
    return out


@keras.saving.register_keras_serializable(package="albert_tf")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout`, drawing stateless masks inside a `dropout_seed` scope."""

    def call(self, inputs, training=False):
        scope = getattr(_local, "scope", None)
        if scope is None or not training or self.rate == 0:
            return super().call(inputs, training=training)
        index = scope["calls"]
        scope["calls"] += 1
        seed = tf.random.experimental.stateless_fold_in(scope["seed"], index)
        return tf.nn.experimental.stateless_dropout(inputs, rate=self.rate, seed=seed)
