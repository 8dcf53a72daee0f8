"""The fill-mask SavedModel (`FillMaskServing`): raw text with one or more "[MASK]" → the
top-k pieces at each mask, their ids, probabilities and the filled-in texts, as
`albert_tf.training.fill_mask.MaskFiller` answers (the text side in the graph:
`masked_text_ops`). Each mask is predicted alone, the other masks kept;
a mask is one piece (whole words that take several pieces are out of scope). Its LiteRT
file (`LiteFillMask`) takes ids and mask positions; the on-device runner does the text side
with the Python rule (`lite_runner`)."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.base import Serving, ServingTask, model_inputs
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.request_windows import Wording
from albert_tf.serving.tasks.fill_mask.masked_text_ops import (
    GraphMaskedText,
    SentencePieceGlued,
    WordPieceGlued,
    filled_texts,
    mask_offsets,
)
from albert_tf.serving.text_ops import valid_utf8


class FillMaskServing(Serving):
    """fill_mask(text [B]) → token_ids int32 [B, M, k], tokens string [B, M, k], scores
    float32 [B, M, k] (softmax probabilities over the vocabulary), sequences string
    [B, M, k] (the text with that mask filled), mask_count int32 [B]; M = the most masks
    of a text in the request (beyond a text's own: id -1, score 0, ""), k = top_k.
    encode_masked(text [B]) → input_ids, input_mask [B, L], mask_positions [B, M],
    mask_count [B]: the ids, to compare with a client's own. A text without "[MASK]" or
    too long for max_seq_length fails the request (InvalidArgumentError naming it)."""

    wording = Wording("fill-mask model")  # (the request cap's errors)

    def __init__(self, model, text, max_seq_length: int, top_k: int):
        super().__init__(model, text, max_seq_length)
        python = text.python_tokenizer
        self.wordpiece = text.spec.is_wordpiece
        if self.wordpiece:
            self.glued = WordPieceGlued(self.tokenizer, python)
        else:
            from data_pipeline.tokenization.masked_text import no_prefix_model_proto
            from data_pipeline.tokenization.sentencepiece_tokenizer import GraphTokenizer

            inside = GraphTokenizer(
                no_prefix_model_proto(python.model_proto),
                python.do_lower_case,
                python.keep_accents,
                python.split_words,
                name="inside_sentencepiece",  # (not the model's: see GraphTokenizer)
            )
            self.glued = SentencePieceGlued(self.tokenizer, inside)
        self.masked = GraphMaskedText(
            self.tokenizer, self.glued, self.cls_id, self.sep_id, python.mask_id, max_seq_length
        )
        self.top_k = min(top_k, python.vocab_size)
        self.pieces = tf.Variable(
            [python.id_to_piece(i) for i in range(python.vocab_size)], trainable=False
        )

    def encode_masked(self, text):
        input_ids, input_mask, positions, count = self.masked.encode(
            self.masked.fragments(valid_utf8(text))
        )
        return {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "mask_positions": positions,
            "mask_count": count,
        }

    def fill_mask(self, text):
        text = valid_utf8(text)
        fragments = self.masked.fragments(text)
        input_ids, input_mask, positions, count = self.masked.encode(fragments)
        outputs = self.model(
            {
                "input_ids": input_ids,
                "input_mask": input_mask,
                "segment_ids": tf.zeros_like(input_ids),
                "masked_lm_positions": positions,
            },
            training=False,
            last_block_at_masked_only=True,
        )
        probabilities = tf.nn.softmax(tf.cast(outputs["mlm_logits"], tf.float32), axis=-1)
        scores, ids = tf.math.top_k(probabilities, k=self.top_k)  # [B, M, k]
        real = tf.range(tf.shape(positions)[1])[None, :] < count[:, None]  # [B, M]
        tokens = tf.where(real[:, :, None], tf.gather(self.pieces, ids), "")
        return {
            "token_ids": tf.where(real[:, :, None], ids, -1),
            "tokens": tokens,
            "scores": tf.where(real[:, :, None], scores, 0.0),
            "sequences": filled_texts(text, mask_offsets(text, fragments), tokens, self.wordpiece),
            "mask_count": count,
        }

    def signatures(self):
        text = [tf.TensorSpec([None], tf.string, "text")]
        fill = graph_function(self.fill_mask, input_signature=text).get_concrete_function()
        encode = graph_function(self.encode_masked, input_signature=text)
        return {
            "serving_default": fill,
            "fill_mask": fill,
            "encode_masked": encode.get_concrete_function(),
        }


def _saved_model(resolved):
    return FillMaskServing(
        resolved.model,
        resolved.text_tokenizer(),
        resolved.max_seq_length,
        resolved.task.details.top_k,
    )


class LiteFillMask:
    """The on-device file: ids and mask positions in, the top-k out (softmax and top-k in
    the file, as the SavedModel's); "[MASK]" finding and filled texts are the runner's.

    serving_default(input_ids, input_mask int32 [B, S] (S = max_seq_length with
    `fixed_length`), masked_lm_positions int32 [B, M]) → scores float32 [B, M, k],
    token_ids int32 [B, M, k]."""

    def __init__(self, model, max_seq_length: int, top_k: int, fixed_length: bool = False):
        self.model, self.max_seq_length, self.top_k = model, max_seq_length, top_k
        self.fixed_length = fixed_length

    def scores(self, input_ids, input_mask, masked_lm_positions):
        inputs = model_inputs(input_ids, input_mask, tf.zeros_like(input_ids))
        outputs = self.model(
            dict(inputs, masked_lm_positions=masked_lm_positions),
            training=False,
            last_block_at_masked_only=True,
        )
        probabilities = tf.nn.softmax(tf.cast(outputs["mlm_logits"], tf.float32), axis=-1)
        scores, ids = tf.math.top_k(probabilities, k=self.top_k)
        return {"scores": scores, "token_ids": ids}

    def functions(self):
        length = self.max_seq_length if self.fixed_length else None
        specs = [
            tf.TensorSpec([None, length], tf.int32, "input_ids"),
            tf.TensorSpec([None, length], tf.int32, "input_mask"),
            tf.TensorSpec([None, None], tf.int32, "masked_lm_positions"),
        ]
        return {"serving_default": graph_function(self.scores, input_signature=specs)}


def _litert(resolved, fixed_length: bool):
    """The file, its metadata (top_k, the mask id) and its tokenizer (the SentencePiece
    model, or the WordPiece vocab.txt) as metadata entries for the runner."""
    from albert_tf.serving.tflite_predict import SPM_NAME, VOCAB_NAME
    from data_pipeline.io import filesystem

    python = resolved.python_tokenizer
    top_k = min(resolved.task.details.top_k, python.vocab_size)
    module = LiteFillMask(resolved.model, resolved.max_seq_length, top_k, fixed_length)
    if resolved.tokenizer.is_wordpiece:
        entries = {VOCAB_NAME: filesystem.read_bytes(python.vocab_file)}
    else:
        entries = {SPM_NAME: python.model_proto}
    return module, {"top_k": top_k, "mask_id": python.mask_id}, entries


def _onnx(resolved):
    """The ONNX file's function and metadata (albert_tf.serving.onnx_export): the LiteRT
    file's, ids in (the runner cuts and reads back the windows)."""
    module, meta, _ = _litert(resolved, fixed_length=False)
    return module.functions(), meta


TASK = ServingTask("fill_mask", saved_model=_saved_model, litert=_litert, onnx=_onnx)
