"""The fill-mask SavedModel (`FillMaskServing`): raw text with one or more "[MASK]" → the
top-k pieces at each mask, their ids, probabilities and the filled-in texts, as
`albert_tf.training.fill_mask.MaskFiller` answers (the text side in the graph:
`albert_tf.serving.masked_text_ops`). Each mask is predicted alone, the other masks kept;
a mask is one piece (whole words that take several pieces are out of scope). No LiteRT
file yet (`TaskKind.on_device`)."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.base import Serving, ServingTask
from albert_tf.serving.masked_text_ops import GraphMaskedText, filled_texts, mask_offsets
from albert_tf.serving.text_ops import valid_utf8


class FillMaskServing(Serving):
    """fill_mask(text [B]) → token_ids int32 [B, M, k], tokens string [B, M, k], scores
    float32 [B, M, k] (softmax probabilities over the vocabulary), sequences string
    [B, M, k] (the text with that mask filled), mask_count int32 [B]; M = the most masks
    of a text in the request (beyond a text's own: id -1, score 0, ""), k = top_k.
    encode_masked(text [B]) → input_ids, input_mask [B, L], mask_positions [B, M],
    mask_count [B]: the ids, to compare with a client's own. A text without "[MASK]" or
    too long for max_seq_length fails the request (InvalidArgumentError naming it)."""

    def __init__(self, model, text, max_seq_length: int, top_k: int):
        super().__init__(model, text, max_seq_length)
        from data_pipeline.tokenization.masked_text import no_prefix_model_proto
        from data_pipeline.tokenization.sentencepiece_tokenizer import GraphTokenizer

        python = text.python_tokenizer
        self.inside = GraphTokenizer(
            no_prefix_model_proto(python.model_proto),
            python.do_lower_case,
            python.keep_accents,
            python.split_words,
        )
        self.inside_model = self.inside.sp  # tracked: its model buffer is saved
        self.masked = GraphMaskedText(
            self.tokenizer, self.inside, self.cls_id, self.sep_id, python.mask_id, max_seq_length
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
            "sequences": filled_texts(text, mask_offsets(text, fragments), tokens),
            "mask_count": count,
        }

    def signatures(self):
        text = [tf.TensorSpec([None], tf.string, "text")]
        fill = tf.function(self.fill_mask, input_signature=text).get_concrete_function()
        encode = tf.function(self.encode_masked, input_signature=text)
        return {
            "serving_default": fill,
            "fill_mask": fill,
            "encode_masked": encode.get_concrete_function(),
        }


def _saved_model(resolved):
    if resolved.tokenizer.is_wordpiece:
        raise ValueError(
            "--task fill_mask: the SavedModel needs a SentencePiece model (a WordPiece word's "
            "inside has no graph form here); use albert_tf.training.fill_mask in Python"
        )
    return FillMaskServing(
        resolved.model,
        resolved.text_tokenizer(),
        resolved.max_seq_length,
        resolved.task.details.top_k,
    )


def _litert(resolved, fixed_length: bool):
    raise ValueError(
        "--task fill_mask: no on-device file yet (TaskKind.on_device refuses it first)"
    )


TASK = ServingTask(saved_model=_saved_model, litert=_litert)
