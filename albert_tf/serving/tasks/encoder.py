"""The encoder's serving modules: the SavedModel (`EncoderServing`: embed text, encode ids)
and the LiteRT file (`LiteEncoder`), and their builders (`TASK`)."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.base import LiteModule, Serving, ServingTask, string_spec
from albert_tf.serving.text_ops import at_least_one_row, pack, same_rows


class EncoderServing(Serving):
    """embed(text [B]) → pooled_output [B, H], sequence_output [B, S, H], input_mask
    [B, S] (S = max_seq_length); encode(input_ids, input_mask, segment_ids [B, S]);
    tokenize."""

    def embed(self, text):
        batch = tf.shape(text)[0]
        text = at_least_one_row(text)
        ids = pack(
            self._ids(text),
            self._ids(tf.zeros_like(text)),
            self.max_seq_length,
            self.cls_id,
            self.sep_id,
            length_aware=True,
        )
        out = self._forward(*ids)
        # Computed at the request's bucket length, returned at max_seq_length as before;
        # every padding position (input_mask 0) is a zero vector, whatever the bucket.
        extra = self.max_seq_length - tf.shape(ids[1])[1]
        mask = tf.cast(ids[1], tf.float32)[:batch, :, None]
        sequence = tf.cast(out["sequence_output"], tf.float32)[:batch] * mask
        return {
            "pooled_output": tf.cast(out["pooled_output"], tf.float32)[:batch],
            "sequence_output": tf.pad(sequence, [[0, 0], [0, extra], [0, 0]]),
            "input_mask": tf.pad(ids[1][:batch], [[0, 0], [0, extra]]),
        }

    def encode(self, input_ids, input_mask, segment_ids):
        ids = same_rows(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids)
        batch = tf.shape(input_ids)[0]
        out = self._forward(*(at_least_one_row(x) for x in ids))
        return {
            "pooled_output": tf.cast(out["pooled_output"], tf.float32)[:batch],
            "sequence_output": tf.cast(out["sequence_output"], tf.float32)[:batch],
        }

    def signatures(self):
        embed = tf.function(self.embed, input_signature=[tf.TensorSpec([None], tf.string, "text")])
        ids = [
            tf.TensorSpec([None, None], tf.int32, n)
            for n in ("input_ids", "input_mask", "segment_ids")
        ]
        encode = tf.function(self.encode, input_signature=ids)
        embed_fn = embed.get_concrete_function()
        return {
            "serving_default": embed_fn,
            "embed": embed_fn,
            "encode": encode.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


class LiteEncoder(LiteModule):
    def embed(self, text):
        ids = self._single(text)
        out = self._forward(*ids)
        extra = self.max_seq_length - tf.shape(ids[1])[1]
        mask = tf.expand_dims(tf.cast(ids[1], tf.float32), -1)  # (no [..., None]: see encoder)
        sequence = tf.cast(out["sequence_output"], tf.float32) * mask
        return {
            "pooled_output": tf.cast(out["pooled_output"], tf.float32),
            "sequence_output": tf.pad(sequence, [[0, 0], [0, extra], [0, 0]]),
            "input_mask": tf.pad(ids[1], [[0, 0], [0, extra]]),
        }

    def functions(self):
        fn = tf.function(self.embed, input_signature=[string_spec("text")])
        return {"serving_default": fn, "embed": fn, "tokenize": self._tokenize_function()}


def _saved_model(resolved):
    return EncoderServing(resolved.model, resolved.text_tokenizer(), resolved.max_seq_length)


def _litert(resolved, fixed_length: bool):
    module = LiteEncoder(
        resolved.model,
        resolved.python_tokenizer,
        resolved.max_seq_length,
        fixed_length=fixed_length,
    )
    return module, {}, {}


TASK = ServingTask(saved_model=_saved_model, litert=_litert)
