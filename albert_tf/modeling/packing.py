"""Computing only the real tokens of a padded batch ("packed" encoding, inference).

A batch of mixed lengths padded to its longest row spends most of the encoder on padding
when lengths vary (STS-B sentences at batch 32: 8,416 positions for 5,205 tokens). Every
projection, FFN and LayerNorm is position-wise, so the encoder can run them on the
[T, H] matrix of the T real tokens instead of [batch*seq, H]; only each attention core
needs the [batch, seq] grid, and gets q, k and v gathered onto it (`TokenRows`). The
values at real positions are the same (float32 rounding aside): padding keys are masked
by the attention bias either way, and padding queries are dropped.

`trace_options(packed=True)` (`albert_tf.modeling.trace_options`) turns it on for the
encoders called within the block (read when a function is traced); the serving modules
open it around their forward pass. `AlbertEncoder.call(packed=...)` chooses explicitly.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from albert_tf.modeling.trace_options import trace_options


def packed_tokens(enabled: bool = True):
    """`trace_options(packed=enabled)`: within the block, encoders called without an
    explicit `packed` compute only the real tokens. The name `albert_tf.serving` enters."""
    return trace_options(packed=enabled)


class TokenRows(NamedTuple):
    """Where the real tokens of a [batch, seq] mask sit, as gather indices.

    rows: int32 [T], each real token's position on the flattened [batch*seq] grid (T =
      the mask's sum, or 1 for a mask with none: position 0), in grid order.
    head_rows: int32 [3, batch, heads, seq], for the [T*3*heads, D] rows of the packed
      fused q|k|v projection: the row of q, k or v (first axis), head n, at each grid
      position. A padding position gets the real token before it (any real row would do:
      padding keys are masked and padding queries dropped). One gather puts q, k and v
      in the [batch, heads, seq, D] layout of the attention core, no transpose.
    context_rows: int32 [T, heads], for the [batch*heads*seq, D] rows of the attention
      core's output: each real token's row for head n. One gather back to [T, H].
    packed_rows: int32 [batch*seq], each grid position's row of the packed matrix (a
      padding position: the real token before it).
    """

    rows: tf.Tensor
    head_rows: tf.Tensor
    context_rows: tf.Tensor
    packed_rows: tf.Tensor

    @classmethod
    def of_mask(cls, input_mask, num_heads: int) -> TokenRows:
        """input_mask int [batch, seq] (1 for real tokens)."""
        batch, seq = tf.shape(input_mask)[0], tf.shape(input_mask)[1]
        real = tf.reshape(input_mask, [-1]) > 0  # [B*S]
        # A mask with no real token (an empty request's placeholder row) packs position 0
        # all the same, so that the matrix and its gathers are never empty.
        real = real | ((tf.range(tf.size(real)) == 0) & ~tf.reduce_any(real))
        rows = tf.cast(tf.where(real)[:, 0], tf.int32)  # [T]
        grid_rows = tf.maximum(tf.cumsum(tf.cast(real, tf.int32)) - 1, 0)  # [B*S]
        heads = tf.range(num_heads)
        head_rows = (
            tf.reshape(grid_rows, [1, batch, 1, seq]) * (3 * num_heads)
            + tf.reshape(tf.range(3), [3, 1, 1, 1]) * num_heads
            + tf.reshape(heads, [1, 1, num_heads, 1])
        )
        context_rows = ((rows // seq)[:, None] * num_heads + heads[None, :]) * seq + (rows % seq)[
            :, None
        ]
        return cls(rows, head_rows, context_rows, grid_rows)

    def packed_index(self, grid_rows):
        """int32 [n] rows of the [batch*seq] grid → their rows in the packed [T] matrix (a
        padding position gets the real token before it: its output is not defined)."""
        return tf.gather(self.packed_rows, grid_rows)

    def pack(self, grid):
        """[batch*seq, ...] → the [T, ...] rows of real tokens."""
        return tf.gather(grid, self.rows)

    def unpack(self, t, grid_rows: int | tf.Tensor):
        """[T, D] → [grid_rows, D], 0 at padding."""
        return tf.scatter_nd(self.rows[:, None], t, [grid_rows, tf.shape(t)[1]])

    def attention_inputs(self, qkv, head_size: int):
        """The packed fused projection [T, 3H] → q, k, v [batch, heads, seq, D]."""
        return tf.unstack(tf.gather(tf.reshape(qkv, [-1, head_size]), self.head_rows))

    def key_value_inputs(self, kv, head_size: int):
        """The packed fused key|value projection [T, 2H] → k, v [batch, heads, seq, D]
        (`head_rows` of k and v, renumbered for two parts instead of three): the last
        block computed at a few query rows projects keys and values for every token but
        queries only there."""
        heads = tf.shape(self.head_rows)[2]
        token, part_head = self.head_rows[1:] // (3 * heads), self.head_rows[1:] % (3 * heads)
        rows = token * (2 * heads) + part_head - heads  # k, v: parts 1, 2 → 0, 1
        return tf.unstack(tf.gather(tf.reshape(kv, [-1, head_size]), rows))

    def context(self, context):
        """The attention core's output [batch, heads, seq, D] → [T, H] (real tokens)."""
        d = tf.shape(context)[-1]
        rows = tf.gather(tf.reshape(context, [-1, d]), self.context_rows)  # [T, N, D]
        return tf.reshape(rows, [tf.shape(rows)[0], -1])
