"""The encoder's serving modules: the SavedModel (`EncoderServing`: embed text, vectors
alone, compare two texts, encode ids) and the LiteRT file (`LiteEncoder`), and their
builders (`TASK`).

The sentence embedding is the one chosen at export (`EncoderFields`: pooling, normalize,
encoder_outputs; recorded in the SavedModel's assets.extra/task.json and the LiteRT
metadata), computed by `albert_tf.modeling.pooling` as `AlbertEmbedder` computes it, over
the request's real tokens only (its padding, to the request's bucket in `embed`, to each
length-sorted group's longest row in `vectors` and `similarity`, never counts)."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.checkpoints.task_kinds.encoder import EncoderFields
from albert_tf.modeling.packing import packed_tokens
from albert_tf.modeling.pooling import l2_normalize, pool
from albert_tf.serving.base import LiteModule, Serving, ServingTask, model_inputs, string_spec
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.request_windows import Wording
from albert_tf.serving.text_ops import at_least_one_row, by_length, pack, same_rows


def embedding_outputs(model, ids, fields: EncoderFields, max_seq_length: int) -> dict:
    """The encoder on packed `ids` (input_ids, input_mask, segment_ids int32 [B, L]) →
    pooled_output [B, H], sequence_output [B, S, H] (S = max_seq_length; padding rows are
    zero vectors), input_mask [B, S], embeddings [B, H] (`fields.pooling`, L2-normalized
    with `fields.normalize`), and with `fields.encoder_outputs` encoder_outputs
    [B, N, S, H]: every block's output (N = layers × inner_group_num, the last one the
    sequence_output), padding zero, as `AlbertEmbedder(output_hidden_states=True)`."""
    out = model(model_inputs(*ids), training=False, output_hidden_states=fields.encoder_outputs)
    extra = max_seq_length - tf.shape(ids[1])[1]
    mask = tf.expand_dims(tf.cast(ids[1], tf.float32), -1)  # [B, L, 1]

    def padded(sequence):  # [B, L, H] → [B, S, H], padding zero
        return tf.pad(tf.cast(sequence, tf.float32) * mask, [[0, 0], [0, extra], [0, 0]])

    embeddings = pool(out, ids[1], fields.pooling)
    if fields.normalize:
        embeddings = l2_normalize(embeddings)
    result = {
        "pooled_output": tf.cast(out["pooled_output"], tf.float32),
        "sequence_output": padded(out["sequence_output"]),
        "input_mask": tf.pad(ids[1], [[0, 0], [0, extra]]),
        "embeddings": embeddings,
    }
    if fields.encoder_outputs:
        result["encoder_outputs"] = tf.stack([padded(h) for h in out["encoder_outputs"]], 1)
    return result


def cosine(a, b):
    """float [B, H], [B, H] → [B]: the cosine of each row pair (a zero row gives 0)."""
    return tf.reduce_sum(l2_normalize(a) * l2_normalize(b), axis=-1)


class EncoderServing(Serving):
    """vectors(text [B]) → embeddings [B, H] only, the request's rows computed in
    length-sorted groups (`text_ops.by_length`, as the classifier's); embed(text [B]) →
    `embedding_outputs` (the sequence and pooled outputs too, the request padded to one
    bucket); similarity(text_a [B], text_b [B]) → similarity [B], the cosine of the two
    texts' vectors; encode(input_ids, input_mask, segment_ids [B, S]) → pooled_output,
    sequence_output; tokenize."""

    wording = Wording("encoder", "text", "texts", "embeds")  # (the request cap's errors)

    def __init__(self, model, text, max_seq_length: int, fields: EncoderFields):
        super().__init__(model, text, max_seq_length)
        self.fields = fields

    def _pack(self, text):
        """text [B ≥ 1] → `[CLS] text [SEP]` ids int32 [B, L], L the request's bucket."""
        return pack(
            self._ids(text),
            self._ids(tf.zeros_like(text)),
            self.max_seq_length,
            self.cls_id,
            self.sep_id,
            length_aware=True,
        )

    def _pooled(self, input_ids, input_mask, segment_ids):
        """One group's ids [G, L] → its embeddings float32 [G, H] (`fields`' pooling and
        normalization, over the real tokens)."""
        out = self._forward(input_ids, input_mask, segment_ids)
        embeddings = pool(out, input_mask, self.fields.pooling)
        return l2_normalize(embeddings) if self.fields.normalize else embeddings

    def vectors(self, text):
        """text [B] → embeddings [B, H]: groups of `text_ops.LENGTH_GROUP` rows, each
        cut to its own longest row (`exact`: sentences are short, ~20 pieces, and a
        bucket's 16-token steps would pad a group by a large fraction of its length);
        nothing of [B, S, H] leaves the group."""
        batch = tf.shape(text)[0]
        ids = self._pack(at_least_one_row(text))
        embeddings = by_length(self._pooled, *ids, self.max_seq_length, exact=True)
        return {"embeddings": embeddings[:batch]}

    def embed(self, text):
        batch = tf.shape(text)[0]
        ids = self._pack(at_least_one_row(text))
        with packed_tokens():  # (as `_forward`: the request's padding only in attention)
            outputs = embedding_outputs(self.model, ids, self.fields, self.max_seq_length)
        return {k: v[:batch] for k, v in outputs.items()}

    def similarity(self, text_a, text_b):
        text_a, text_b = same_rows(text_a=text_a, text_b=text_b)
        batch = tf.shape(text_a)[0]
        embeddings = self.vectors(tf.concat([text_a, text_b], 0))["embeddings"]
        return {"similarity": cosine(embeddings[:batch], embeddings[batch : 2 * batch])}

    def encode(self, input_ids, input_mask, segment_ids):
        ids = same_rows(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids)
        batch = tf.shape(input_ids)[0]
        out = self._forward(*(at_least_one_row(x) for x in ids))
        return {
            "pooled_output": tf.cast(out["pooled_output"], tf.float32)[:batch],
            "sequence_output": tf.cast(out["sequence_output"], tf.float32)[:batch],
        }

    def signatures(self):
        text = tf.TensorSpec([None], tf.string, "text")
        embed = graph_function(self.embed, input_signature=[text])
        vectors = graph_function(self.vectors, input_signature=[text])
        pair = [tf.TensorSpec([None], tf.string, n) for n in ("text_a", "text_b")]
        similarity = graph_function(self.similarity, input_signature=pair)
        ids = [
            tf.TensorSpec([None, None], tf.int32, n)
            for n in ("input_ids", "input_mask", "segment_ids")
        ]
        encode = graph_function(self.encode, input_signature=ids)
        embed_fn = embed.get_concrete_function()
        return {
            "serving_default": embed_fn,
            "embed": embed_fn,
            "vectors": vectors.get_concrete_function(),
            "similarity": similarity.get_concrete_function(),
            "encode": encode.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


class LiteEncoder(LiteModule):
    """embed(text [B]) → `embedding_outputs` at the request's longest row (or
    max_seq_length with fixed_length); the runner computes similarities from two embeds."""

    def __init__(self, model, python_tokenizer, max_seq_length, fields, fixed_length=False):
        super().__init__(model, python_tokenizer, max_seq_length, fixed_length=fixed_length)
        self.fields = fields

    def embed(self, text):
        return self._from_ids(self._single(text))

    def _from_ids(self, ids):
        return embedding_outputs(self.model, ids, self.fields, self.max_seq_length)

    def functions(self):
        fn = graph_function(self.embed, input_signature=[string_spec("text")])
        return {"serving_default": fn, "embed": fn, "tokenize": self._tokenize_function()}


def _saved_model(resolved):
    return EncoderServing(
        resolved.model, resolved.text_tokenizer(), resolved.max_seq_length, resolved.task.details
    )


def _litert(resolved, fixed_length: bool):
    fields = resolved.task.details
    module = LiteEncoder(
        resolved.model,
        resolved.python_tokenizer,
        resolved.max_seq_length,
        fields,
        fixed_length=fixed_length,
    )
    meta = {
        "pooling": fields.pooling,
        "normalize": fields.normalize,
        "encoder_outputs": fields.encoder_outputs,
    }
    return module, meta, {}


def _onnx(resolved):
    """The ONNX file's ids-in function (`embedding_outputs` of packed ids) and metadata
    (albert_tf.serving.onnx_export); the runner packs each text (`text_inputs`)."""
    module, meta, _ = _litert(resolved, fixed_length=False)
    return module.ids_functions(), dict(meta, text_inputs=["text"])


TASK = ServingTask("encoder", saved_model=_saved_model, litert=_litert, onnx=_onnx)
