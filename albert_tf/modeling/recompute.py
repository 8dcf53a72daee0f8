"""Activation recomputation: keep only the input of each segment of the encoder's blocks
(a layer, or a group of layers sharing one parameter set) and recompute the segment's
activations in the backward pass.

What a training step keeps for the backward pass is, without recomputation, every
intermediate of every block: for one layer at sequence length S and batch B, the
[B, heads, S, S] attention logits and probabilities (and their dropout mask), the
[B*S, I] FFN pre-activation and GELU output, and several [B*S, H] tensors; L layers keep
L times that. ALBERT's cross-layer sharing makes the parameters small, not the
activations. With recomputation a segment keeps only its input x [B*S, H]; its backward
runs the segment's forward again (from x, under a fresh tape) and back-propagates through
that copy at once, so only one segment's intermediates are alive at a time. The cost is
one more forward pass of the encoder per step (less its last segment).

Mode "layer": one segment per layer (its `inner_group_num` blocks). Mode "group": one
segment per hidden group (the consecutive layers that share a parameter set); with the
released configs (one group) that is the whole stack, whose recomputation keeps every
intermediate alive at once again. The encoder runs its last segment without
recomputation (the backward begins with it, so recomputing it would save nothing at the
peak): with one group, "group" is the plain path (docs/design/recompute.md).

How it stays exact:
- Shared weights. The encoder prepares each distinct sub-layer's weights once per forward
  pass (fused Q|K|V, cast once under mixed precision, `_BlockRunner`). The segment takes
  them as explicit inputs of its `tf.custom_gradient`, so the gradient it returns for
  them flows back through the fusing and casting ops to the shared variables and is
  summed there over the L uses, as without recomputation. A low-precision copy
  (`cast_once.CastOnce`) is passed as its float32 source and its low-precision value: the
  value is computed with, the gradient goes to the source in float32 per use (as
  `layers._tensor` does), so sums over layers stay float32. Variables read inside a
  segment (LayerNorm gamma and beta) get their gradients through `variables`.
- Shared weights' gradients. The segment passes its weight inputs through as outputs,
  and the next segment computes with those: the backward then hands each segment the
  gradient sum of the segments after it, and it adds its own. A shared weight's gradient
  is one running sum instead of L per-use tensors that TensorFlow keeps until it adds
  them all at the end (for xxlarge, 12 × 0.75 GB: more than the activations of a small
  batch).
- Dropout. Masks are drawn statelessly from the trace options' `DropoutSeed` and the
  call's index in the pass (`albert_tf.modeling.dropout`). The segment notes the seed
  and its first call index in the forward (`DropoutSeed.bookmark`) and replays them in
  the recomputation: the same masks, bit for bit. Without a `DropoutSeed`, dropout would
  draw new masks on recomputation, so recomputing with active dropout there is an
  error.
- Ordering, Grappler and XLA. The recomputation must run in the backward pass, not be
  merged with the forward (common-subexpression elimination would bring back the very
  tensors recomputation frees) nor hoisted before the gradient arrives. Its input, and
  the dropout seed, are therefore offset by a zero computed from the incoming gradient
  that no optimizer can fold (0 when the gradient's first element equals itself, i.e.
  is not NaN): a data dependency, which XLA respects where it drops control
  dependencies. `tf.recompute_grad` uses the same device.

Mode "attention" (selective recomputation, Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models"): no block is recomputed (the blocks run as
with "none"); inside every attention sub-layer only the core is. The forward keeps q
[B, N, Q, D], k and v [B, N, S, D] (N heads of width D) and drops what the core makes
from them: the logits q·kᵀ and the probabilities softmax(logits + bias) [B, N, Q, S]
each, and the dropout output on them; the backward recomputes them from q, k, v (same
dropout masks, replayed as above) and back-propagates through the copy at once
(`AttentionSublayer.call` runs the core through `recomputed`). At sequence 512 with 64
heads (xxlarge) those [B, N, S, S] tensors are most of a layer's activations, while the
core's two matmuls (2·B·S²·H FLOPs each) are S/(6H) of the layer's GEMMs (about
24·B·S·H² with I = 4H): 2% at S = 512, H = 4096. The recomputation adds that once more
per step, where "layer" adds a whole forward. The projections, the FFN and the
LayerNorms keep their activations; the mode needs a `DropoutSeed` when attention dropout
is active, as the others.

Memory is saved where TensorFlow frees tensors with no remaining consumer: inside a
`tf.function` (the trainer's step always is one) and in an XLA computation. Run eagerly,
the outer tape records the forward's intermediates and holds them anyway.

The mode is chosen for a block of code with `trace_options(recompute=mode)`
(`albert_tf.modeling.trace_options`); the trainer opens it around its training forward
pass (`TrainerConfig.recompute`), so evaluation and inference never pay for it.
"""

from __future__ import annotations

import contextlib

import tensorflow as tf

from albert_tf.modeling.cast_once import CastOnce
from albert_tf.modeling.trace_options import (
    RECOMPUTE_MODES,
    DropoutSeed,
    current_trace_options,
    trace_options,
)

MODES = RECOMPUTE_MODES  # "none", "layer", "group", "attention" (validated there)
# The modes that recompute whole blocks (the encoder's segments); "attention" recomputes
# only the attention core inside each block.
BLOCK_MODES = ("layer", "group")


def segments(config, mode: str) -> list[range]:
    """The encoder's L × inner_group_num blocks (in `sharing_plan` order) cut into the
    segments recomputed as one: each block alone ("none"), each layer's blocks ("layer"),
    each hidden group's consecutive layers ("group"); "attention" recomputes no whole
    block, so each block alone as with "none"."""
    k = config.inner_group_num
    if mode in ("none", "attention"):
        return [range(i, i + 1) for i in range(config.num_blocks)]
    if mode == "layer":
        return [range(i * k, (i + 1) * k) for i in range(config.num_hidden_layers)]
    if mode == "group":
        out, start = [], 0
        for i in range(1, config.num_hidden_layers + 1):
            if i == config.num_hidden_layers or config.group_of_layer(i) != config.group_of_layer(
                i - 1
            ):
                out.append(range(start * k, i * k))
                start = i
        return out
    raise ValueError(f"recompute={mode!r} is not one of {MODES}")


def recomputed(fn, x, weights, dropout_active: bool):
    """`fn(x, weights)` ([batch*seq, H] → [batch*seq', H]) whose intermediates are not
    kept for the backward pass but recomputed there from `x` and `weights`.

    Returns (y, weights'): weights' are `weights` passed through, for the next segment
    to use instead. Their gradient (what the later segments sent back) arrives in this
    segment's backward, which adds its own and sends the sum on: a shared weight's
    gradient is a running sum over the segments, one weight-sized tensor, where taking
    the L uses' gradients separately keeps L of them until the final sum (TensorFlow's
    aggregation; for xxlarge 12 × 0.75 GB).

    `fn` must be a function of `x`, `weights` (a nest of tensors and `cast_once.CastOnce`
    copies: the segment's sub-layer weights), of variables it reads itself, and of
    tensors that need no gradient (the attention bias, query rows). The gradient it
    gets for `x`, `weights` and those variables is the gradient of `fn` itself.
    """
    leaves = tf.nest.flatten(weights)
    # Each leaf as flat inputs: a tensor → itself; a CastOnce → (source, value).
    flat, kinds = [], []
    for leaf in leaves:
        if isinstance(leaf, CastOnce):
            flat += [leaf.source, leaf.value]
            kinds.append(2)
        else:
            flat.append(tf.convert_to_tensor(leaf))
            kinds.append(1)

    def rebuild(inputs):
        out, i = [], 0
        for kind in kinds:
            out.append(CastOnce.of(inputs[i], inputs[i + 1]) if kind == 2 else inputs[i])
            i += kind
        return tf.nest.pack_sequence_as(weights, out)

    masks = current_trace_options().dropout
    state = None if masks is None else masks.bookmark()
    if dropout_active and state is None:
        raise ValueError(
            "activation recomputation with dropout needs a DropoutSeed in the trace "
            "options (albert_tf.modeling.dropout; the trainer sets one): without it the "
            "recomputed masks would differ from the forward's"
        )

    @tf.custom_gradient
    def segment(x, *inputs):
        y = fn(x, rebuild(inputs))
        passed = [tf.identity(t) for t in inputs]

        def grad(dy, *later, variables=None):
            variables = list(variables or [])
            zero = _zero_after(dy)
            with tf.GradientTape() as tape:
                replay_x = x + tf.cast(zero, x.dtype)
                tape.watch([replay_x, *inputs])
                with _replaying(state, zero):
                    replay_y = fn(replay_x, rebuild(inputs))
            grads = tape.gradient(
                replay_y,
                [replay_x, *inputs, *variables],
                output_gradients=dy,
                unconnected_gradients=tf.UnconnectedGradients.NONE,
            )
            n = 1 + len(inputs)
            own = [_add(g, d) for g, d in zip(grads[1:n], later)]
            return [grads[0], *own], grads[n:]

        return (y, *passed), grad

    y, *passed = segment(x, *flat)
    return y, rebuild(passed)


def _add(a, b):
    """a + b where either may be None (no gradient)."""
    return b if a is None else a if b is None else a + b


def _zero_after(dy):
    """int32 scalar 0 that depends on `dy` (1 only when its first element is NaN): what
    the recomputation's inputs are offset by so that it runs after `dy` exists and is
    not merged with the forward."""
    first = tf.reshape(dy, [-1])[:1]
    return tf.reduce_max(tf.where(tf.equal(first, first), 0, 1))


@contextlib.contextmanager
def _replaying(state, zero):
    """The forward's dropout seed again (`state`: its bookmark, same seed and first call
    index), the seed offset by `zero` so that the masks are drawn anew rather than kept
    from the forward."""
    if state is None:
        yield
        return
    seed = state.seed + tf.cast(zero, state.seed.dtype)
    with trace_options(dropout=DropoutSeed(seed, state.next_call)):
        yield
