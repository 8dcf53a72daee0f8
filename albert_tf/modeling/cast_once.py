"""A float32 weight and its one low-precision copy, made once per forward pass.

Under mixed precision a shared block is called L times per pass; its float32 weights are
cast once (`layers.compute_weights`) and every use computes with the same copy, while
its gradient goes back to the float32 source per use (`layers._tensor`). Activation
recomputation (`recompute.recomputed`) passes both halves into its segments. Its own
module so that both `layers` and `recompute` can use it without an import circle.
"""

from __future__ import annotations

import tensorflow as tf


class CastOnce:
    """A float32 tensor (`source`) and its one low-precision copy (`value`)."""

    def __init__(self, source, dtype):
        self.source, self.value = source, tf.cast(source, dtype)

    @classmethod
    def of(cls, source, value):
        """The pair from an existing `value` (activation recomputation passes both)."""
        out = cls.__new__(cls)
        out.source, out.value = source, value
        return out
