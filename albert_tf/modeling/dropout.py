"""Dropout whose masks are a function of (seed, step, micro-batch, replica, call): a run
killed and resumed from a checkpoint draws exactly the masks an uninterrupted run draws.

Keras' `Dropout` draws from a `SeedGenerator`, a counter advanced by every call and not
part of our checkpoints: a resumed run starts it again from zero and its masks differ
from step one on. Here the trainer sets `trace_options(dropout=DropoutSeed(seed))`
(`albert_tf.modeling.trace_options`) around each training forward pass, with `seed`
folded from (run seed, global step, micro-batch, replica id) by `step_seed`. Inside the
block, the n-th dropout call of the pass (in trace order: with cross-layer sharing one
layer is called L times, and each call gets its own n) draws its mask with
`tf.nn.experimental.stateless_dropout(x, rate, fold_in(seed, n))` — the same kernel Keras
uses, so the cost is the same and XLA compiles it.

The trace options are per thread, and `MirroredStrategy` traces each replica's function in
its own thread: the trainer opens the block inside the replica function, where the
replica id is known. Outside such a block (a user calling `model(x, training=True)`),
this is Keras' Dropout.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from albert_tf.modeling.trace_options import current_trace_options


def step_seed(seed: int, *parts):
    """int64 [2]: `seed` folded with each of `parts` (ints or scalar tensors: the global
    step, the micro-batch index, the replica id) in order."""
    out = tf.constant([seed, 0], tf.int64)
    for part in parts:
        out = tf.random.experimental.stateless_fold_in(out, tf.cast(part, tf.int64))
    return out


@keras.saving.register_keras_serializable(package="albert_tf")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout`, drawing stateless masks where the trace options hold a
    `DropoutSeed`."""

    def call(self, inputs, training=False):
        masks = current_trace_options().dropout
        if masks is None or not training or self.rate == 0:
            return super().call(inputs, training=training)
        seed = tf.random.experimental.stateless_fold_in(masks.seed, masks.take())
        return tf.nn.experimental.stateless_dropout(inputs, rate=self.rate, seed=seed)
