"""The ALBERT encoder: factorized embeddings, shared Transformer blocks, pooler.

Cross-layer sharing (paper Section 3.1, Table 4) is decided once, in `sharing_plan`, and
realized as object reuse: the block list holds the same `TransformerBlock` (or the same
sub-layer) object at every position that shares it.
"""

from __future__ import annotations

from typing import NamedTuple

import keras
import tensorflow as tf

from albert_tf.modeling import packing, recompute
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.layers import (
    AlbertEmbeddings,
    AttentionSublayer,
    FeedForwardSublayer,
    TransformerBlock,
    dense,
)
from albert_tf.modeling.trace_options import current_trace_options


class BlockSlot(NamedTuple):
    """Where one of the L × inner_group_num blocks takes its parameters from.

    `attention` and `ffn` are keys ("group", g, k) for a parameter set shared by the
    layers of group g, or ("layer", i, k) for one owned by layer i alone.
    """

    layer: int
    inner: int
    attention: tuple
    ffn: tuple


def sharing_plan(config: AlbertConfig) -> list[BlockSlot]:
    """Official layer→group map (group int(i·G/L)) combined with the sharing mode."""
    share_attention = config.sharing in ("all", "attention")
    share_ffn = config.sharing in ("all", "ffn")
    plan = []
    for i in range(config.num_hidden_layers):
        g = config.group_of_layer(i)
        for k in range(config.inner_group_num):
            shared, own = ("group", g, k), ("layer", i, k)
            plan.append(
                BlockSlot(i, k, shared if share_attention else own, shared if share_ffn else own)
            )
    return plan


def _key_name(key: tuple) -> str:
    kind, index, inner = key
    return f"{kind}_{index}_inner_group_{inner}"


def unpack_inputs(inputs):
    """Accepts a dict (`input_ids`, optional `input_mask`, `segment_ids`), a list/tuple
    in that order, or a bare `input_ids` tensor; returns three int32 [batch, seq] tensors."""
    if isinstance(inputs, dict):
        if "input_ids" not in inputs:
            raise ValueError(f"encoder inputs need 'input_ids'; got keys {sorted(inputs)}")
        ids, mask, segments = (
            inputs["input_ids"],
            inputs.get("input_mask"),
            inputs.get("segment_ids"),
        )
    elif isinstance(inputs, (list, tuple)):
        ids, mask, segments = (list(inputs) + [None, None])[:3]
    else:
        ids, mask, segments = inputs, None, None
    ids = tf.cast(ids, tf.int32)
    mask = tf.ones_like(ids) if mask is None else tf.cast(mask, tf.int32)
    segments = tf.zeros_like(ids) if segments is None else tf.cast(segments, tf.int32)
    return ids, mask, segments


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEncoder(keras.Model):
    """ALBERT backbone (Lan et al. 2019): embeddings → E→H projection → blocks → pooler.

    Args:
      config: an `AlbertConfig`.

    Call args:
      inputs: dict with `input_ids` int32 [batch, seq], `input_mask` [batch, seq] (1 for
        real tokens, 0 for padding; default all ones) and `segment_ids` [batch, seq]
        (default zeros).
      training: enables dropout.
      output_hidden_states: also return every block's output.

    Under `trace_options(recompute="layer" | "group")` the blocks run as
    segments whose activations are recomputed in the backward pass (same values and
    gradients; see `albert_tf.modeling.recompute`); under "attention" only each
    attention sub-layer's core is (`AttentionSublayer`).
      output_positions: optional int [batch, P]: only these positions of the last
        block's output are needed (pretraining: the masked positions). The last block
        is then computed only there and at [CLS] (for the pooler): the same values,
        ~6% fewer FLOPs for ALBERT-base at 20 of 128 positions, forward and backward.

    Returns a dict:
      sequence_output: float32 [batch, seq, H], the last block's output.
      pooled_output: float32 [batch, H], tanh(dense(sequence_output[:, 0])).
      with output_hidden_states: `embedding_output` [batch, seq, H] (the blocks' input)
      and `encoder_outputs`, a list of L × inner_group_num tensors [batch, seq, H].
      with output_positions: `positions_output` [batch, P, H] (= sequence_output at those
      positions) and `pooled_output`, no `sequence_output`.
      packed: compute only the real tokens: the embedding projection, every projection,
        FFN and LayerNorm run on the [T, H] matrix of the T real tokens (T = the mask's
        sum) instead of [batch*seq, H]; only each attention core sees the [batch, seq]
        grid (`AttentionSublayer`'s `token_rows`). The same values at real positions
        (equal within float32 rounding); `sequence_output` and `encoder_outputs` are 0 at
        padding. What a batch of mixed lengths saves is its padding: the serving
        signatures compute a request this way (`albert_tf.modeling.packing`; None: as
        the trace options' `packed` says, off by default;
        `albert_tf.modeling.trace_options`). With `output_positions` too, the last block
        runs at the packed rows of those positions (a position at padding then has no
        defined output).
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        kwargs.setdefault("name", "albert_encoder")
        # Variable reads in `call` stay float32: shared weights are cast once per pass
        # (`_BlockRunner`, layers.compute_weights); sub-layers still compute in the
        # policy's dtype.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.config = config
        self.embeddings = AlbertEmbeddings(config, name="embeddings")
        # The official code projects only when E != H (modeling.transformer_model).
        self.embedding_hidden_mapping_in = (
            dense(config, config.hidden_size, "embedding_hidden_mapping_in")
            if config.embedding_size != config.hidden_size
            else None
        )

        self.plan = sharing_plan(config)
        attention, ffn, blocks = {}, {}, {}
        for slot in self.plan:
            if slot.attention not in attention:
                attention[slot.attention] = AttentionSublayer(config, name="attention")
            if slot.ffn not in ffn:
                ffn[slot.ffn] = FeedForwardSublayer(config, name="ffn")
            pair = (slot.attention, slot.ffn)
            if pair not in blocks:
                name = _key_name(
                    slot.attention
                    if slot.attention == slot.ffn
                    else ("layer", slot.layer, slot.inner)
                )
                blocks[pair] = TransformerBlock(attention[slot.attention], ffn[slot.ffn], name=name)
                # A named attribute (not a list entry) so that tf.train.Checkpoint tracks it.
                setattr(self, name, blocks[pair])
        # The same object appears at every position that shares it.
        self.blocks = tuple(blocks[(s.attention, s.ffn)] for s in self.plan)
        self.pooler = dense(config, config.hidden_size, "pooler", activation="tanh")

    def get_config(self) -> dict:
        """What `from_config` rebuilds the encoder from: the `AlbertConfig` as its JSON
        fields, name, dtype policy, trainable (a `keras.Model` holding the encoder then
        saves to and loads from a `.keras` file; the weights travel beside the config)."""
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
            "albert_config": self.config.to_dict(),
        }

    @classmethod
    def from_config(cls, config: dict) -> AlbertEncoder:
        config = dict(config)
        fields = config.pop("albert_config")
        return cls(AlbertConfig.from_dict(fields, source="AlbertEncoder config"), **config)

    def build(self, input_shape=None):
        c = self.config
        self.embeddings.build()
        if self.embedding_hidden_mapping_in is not None:
            self.embedding_hidden_mapping_in.build((None, c.embedding_size))
        for block in self.blocks:
            if not block.built:
                block.build((None, c.hidden_size))
        self.pooler.build((None, c.hidden_size))

    def call(
        self,
        inputs,
        training=False,
        output_hidden_states=False,
        output_positions=None,
        packed=None,
    ):
        input_ids, input_mask, segment_ids = unpack_inputs(inputs)
        if packed is None:
            packed = current_trace_options().packed
        x = self.embeddings(input_ids, segment_ids, training=training)  # [B, S, E], normalized
        run = _BlockRunner(self, input_ids, input_mask, training, packed)  # shared weights once
        x = self._project_to_hidden(run.pack(x))  # [B*S, H], or [T, H] packed
        if output_positions is not None:  # the losses or the head read only a few positions
            return self._last_block_at_positions(
                run, x, input_ids, output_positions, output_hidden_states
            )
        hidden_states = [x]
        # L × inner_group_num blocks, shared objects reused; every block's output when
        # all of them are asked for.
        if output_hidden_states:
            for segment in run.segments(per_block=True):
                x = run.segment(segment, x)
                hidden_states.append(x)
        else:
            x = run.run_segments(run.segments(), x)
        sequence_output = run.unflatten(x)  # [B, S, H]
        outputs = {
            "sequence_output": sequence_output,
            "pooled_output": self._pool(sequence_output[:, 0]),
        }  # [B, H]
        if output_hidden_states:
            outputs["embedding_output"] = run.unflatten(hidden_states[0])
            outputs["encoder_outputs"] = [run.unflatten(h) for h in hidden_states[1:]]
        return outputs

    def _project_to_hidden(self, embeddings):
        """[rows, E] embeddings → the [rows, H] matrix the blocks work on (the official
        code projects only when E != H)."""
        x = tf.reshape(embeddings, [-1, self.config.embedding_size])
        if self.embedding_hidden_mapping_in is not None:
            x = self.embedding_hidden_mapping_in(x)
        return x

    def _pool(self, first_token):
        """tanh(dense(h_[CLS])): [batch, H] → float32 [batch, H]."""
        return tf.cast(self.pooler(first_token), tf.float32)

    def _last_block_at_positions(self, run, x, input_ids, output_positions, output_hidden_states):
        """The blocks with the last one computed only at [CLS] (for the pooler) and at
        `output_positions` int [batch, P]; `x` is the blocks' input [batch*seq, H] (packed:
        [T, H], the positions then mapped to their packed rows).

        Exact: the last block's keys and values are still computed at every position, its
        queries, attention output, FFN and LayerNorms only at those 1 + P rows (see
        `AttentionSublayer`'s `query_rows`). Returns `positions_output` [batch, P, H] and
        `pooled_output` [batch, H].
        """
        if output_hidden_states:
            raise ValueError(
                "output_positions and output_hidden_states exclude each other "
                "(with output_positions the last block skips other positions)"
            )
        # [CLS] and the requested positions, as rows of the [batch*seq, H] hidden matrix.
        positions = tf.concat(
            [tf.zeros_like(input_ids[:, :1]), tf.cast(output_positions, tf.int32)], axis=1
        )  # [B, 1+P]
        query_rows = tf.reshape(
            positions + run.seq_length * tf.range(run.batch_size)[:, None], [-1]
        )
        if run.token_rows is not None:  # x holds the real tokens only
            query_rows = run.token_rows.packed_index(query_rows)
        *body, last = run.segments()
        x = run.run_segments(body, x)
        x = run.segment(last, x, query_rows)  # the last block at query_rows only
        gathered = tf.reshape(
            tf.cast(x, tf.float32), [run.batch_size, tf.shape(positions)[1], run.hidden_size]
        )  # [B, 1+P, H]
        return {"positions_output": gathered[:, 1:], "pooled_output": self._pool(gathered[:, 0])}


class _BlockRunner:
    """Applies the encoder's blocks within one forward pass over the [batch*seq, H] matrix.

    What every block application needs is computed once, here, rather than per block: the
    additive attention mask, the shape to unflatten with, and each distinct sub-layer's
    weights (`compute_weights`: Q|K|V fused, cast once under mixed precision). With
    cross-layer sharing one set of weights then serves all L layers.

    Blocks run in segments (`segment`): one block each, or under a block recomputation
    mode (`trace_options(recompute=...)`) a layer's or a group's blocks whose activations
    are recomputed in the backward pass from the segment's input and these prepared
    weights.
    """

    def __init__(self, encoder: AlbertEncoder, input_ids, input_mask, training, packed=False):
        self.batch_size, self.seq_length = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
        self.token_rows = (
            packing.TokenRows.of_mask(input_mask, encoder.config.num_attention_heads)
            if packed
            else None
        )
        self.config = encoder.config
        self.hidden_size = encoder.config.hidden_size
        self.training = training
        self.blocks = encoder.blocks
        self.recompute = current_trace_options().recompute
        # float32 [B, 1, 1, S]: 0 for real tokens, -10000 for padding (official). Built
        # with expand_dims, not `[:, None, None, :]`: on a dynamic S the slice becomes a
        # StridedSlice with new_axis_mask that LiteRT has no builtin for.
        padding = 1.0 - tf.cast(input_mask, tf.float32)
        self.attention_bias = tf.expand_dims(tf.expand_dims(padding, 1), 1) * -10000.0
        sublayers = dict.fromkeys(s for b in encoder.blocks for s in (b.attention, b.ffn))
        self.weights = {s: s.compute_weights(s.compute_dtype) for s in sublayers}

    def segments(self, per_block: bool = False) -> list[range]:
        """The block indices run as one segment each (see `recompute.segments`); single
        blocks with `per_block` (every block's output is wanted, hence kept anyway)."""
        mode = self.recompute
        return recompute.segments(self.config, "none" if per_block else mode)

    def run_segments(self, segments: list[range], x):
        """The `segments` in turn on x [rows, H]; traced as one tf.while_loop over the
        block (`layer_loop`) under `trace_options(looped_layers=True)` when every segment
        is the same single block (one shared layer, no recomputation), else one after
        another."""
        blocks = {id(self.blocks[i]) for segment in segments for i in segment}
        if current_trace_options().looped_layers and len(segments) > 1 and len(blocks) == 1:
            if all(len(segment) == 1 for segment in segments):
                count, first = len(segments), segments[0]
                _, x = tf.while_loop(
                    lambda i, x: i < count,
                    lambda i, x: (i + 1, self.segment(first, x)),
                    (tf.constant(0), x),
                    parallel_iterations=1,
                )
                return x
        for segment in segments:
            x = self.segment(segment, x)
        return x

    def segment(self, indices: range, x, query_rows=None):
        """The blocks at `indices` in turn on x [batch*seq, H], the last of them only at
        `query_rows` if given; recomputed in the backward pass under a recomputation
        scope, except the encoder's last segment: the backward starts with it, right
        after its forward, so keeping its intermediates costs no more at the peak than
        recomputing them and saves that forward."""
        blocks = [self.blocks[i] for i in indices]
        sublayers = list(dict.fromkeys(s for b in blocks for s in (b.attention, b.ffn)))
        where = {s: n for n, s in enumerate(sublayers)}

        def run(x, weights):
            for n, block in enumerate(blocks):
                rows = query_rows if n == len(blocks) - 1 else None
                pair = (weights[where[block.attention]], weights[where[block.ffn]])
                x = self._apply(block, x, pair, rows)
            return x

        weights = tuple(self.weights[s] for s in sublayers)
        if self.recompute not in recompute.BLOCK_MODES or indices[-1] == len(self.blocks) - 1:
            return run(x, weights)
        c = self.config
        dropout = c.hidden_dropout_prob > 0 or c.attention_probs_dropout_prob > 0
        training = self.training if isinstance(self.training, bool) else True
        y, weights = recompute.recomputed(run, x, weights, dropout_active=training and dropout)
        # The next segments use the passed-through weights: their gradients then arrive
        # as one running sum (see `recompute.recomputed`).
        self.weights.update(zip(sublayers, weights))
        return y

    def _apply(self, block, x, weights, query_rows):
        return block(
            x,
            self.attention_bias,
            self.batch_size,
            self.seq_length,
            training=self.training,
            query_rows=query_rows,
            token_rows=self.token_rows,
            weights=weights,
        )

    def pack(self, embeddings):
        """[batch, seq, E] → [batch*seq, E], or packed the [T, E] rows of real tokens."""
        x = tf.reshape(embeddings, [-1, embeddings.shape[-1]])
        return x if self.token_rows is None else self.token_rows.pack(x)

    def unflatten(self, t, length=None):
        """[batch*length, H] (length: seq unless given; packed: [T, H], 0 at padding) →
        float32 [batch, length, H]."""
        length = self.seq_length if length is None else length
        t = tf.cast(t, tf.float32)
        if self.token_rows is not None:
            t = self.token_rows.unpack(t, self.batch_size * length)
        return tf.reshape(t, [self.batch_size, length, self.hidden_size])


def count_parameters(config: AlbertConfig, heads: bool = False) -> int:
    """Parameters of `AlbertEncoder(config)` (pooler included) without building it;
    with `heads`, of `AlbertPretrainer(config)` (tied MLM head + SOP head).

    Equals `model.count_params()` (tested); useful for tables of sizes that would take
    gigabytes to build.
    """
    c = config
    h, e, i = c.hidden_size, c.embedding_size, c.intermediate_size
    total = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * e + 2 * e
    if e != h:
        total += e * h + h
    plan = sharing_plan(c)
    attention = 4 * (h * h + h) + 2 * h
    ffn = (h * i + i) + (i * h + h) + 2 * h
    total += attention * len({s.attention for s in plan}) + ffn * len({s.ffn for s in plan})
    total += h * h + h  # pooler
    if heads:
        total += (h * e + e) + 2 * e + c.vocab_size  # MLM: dense, LayerNorm, output bias
        total += 2 * h + 2  # SOP
    return total
