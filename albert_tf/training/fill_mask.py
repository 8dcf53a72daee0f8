"""Fill-mask from text: the pretraining model's masked-LM head at each "[MASK]" of a text →
the top-k pieces, their probabilities and the texts with each filled in.

The text side is `data_pipeline.tokenization.masked_text` (one mask = one piece). The
model side runs `AlbertPretrainer` with the mask positions as `masked_lm_positions` and
its last block only at [CLS] and those positions (the same logits, fewer FLOPs), then a
softmax over the whole vocabulary and top-k, in one traced function with dynamic batch,
length and mask count (one trace serves every input).

Each mask is predicted alone, from the text with every other mask still masked (as
Hugging Face's fill-mask pipeline does): candidates for several masks are not joint.
Whole words are out of scope: a mask is one piece, and a word that needs several pieces
needs several masks.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from data_pipeline.tokenization.masked_text import (
    MaskedText,
    encode_masked,
    filled_text,
    padded_batch,
)
from data_pipeline.tokenization.wordpiece import WordPieceTokenizer


@dataclasses.dataclass(frozen=True)
class Fill:
    """One candidate for one mask.

    token_id: the piece's id; token: the piece as the vocabulary spells it ("▁paris",
    "##is"); score: its softmax probability at the mask; sequence: the text with this mask
    replaced by the piece's text (other masks kept): a SentencePiece "▁" is a space (none
    at a word start), a WordPiece "##" is dropped, and a WordPiece word-start piece glued
    to a preceding letter or digit gets a space.
    """

    token_id: int
    token: str
    score: float
    sequence: str


class MaskFiller:
    """`fill_mask` bound to one model and tokenizer, its traced function kept.

    Args:
      model: an `AlbertPretrainer` (anything with its call signature and `mlm_logits`).
      tokenizer: the model's `AlbertTokenizer` or `WordPieceTokenizer`.
      max_seq_length: longest input in tokens (default: the model's position table).
      batch_size: texts per model call.
    """

    def __init__(self, model, tokenizer, max_seq_length: int | None = None, batch_size: int = 32):
        self.model = model
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length or model.config.max_position_embeddings
        self.batch_size = batch_size
        spec = tf.TensorSpec([None, None], tf.int32)
        self._top_k = tf.function(
            self._scores, input_signature=[spec] * 3 + [tf.TensorSpec([], tf.int32)]
        )

    def _scores(self, input_ids, input_mask, positions, k):
        """int32 [B, S], [B, S], [B, P], k → (probabilities [B, P, k], ids [B, P, k])."""
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
        probabilities = tf.nn.softmax(outputs["mlm_logits"], axis=-1)  # [B, P, V]
        return tf.math.top_k(probabilities, k=k)

    def __call__(self, texts: list[str], top_k: int = 5) -> list[list[list[Fill]]]:
        """Texts with one or more "[MASK]" → for each text, for each mask (text order),
        the `top_k` candidates, most probable first. One-line ValueErrors for a text
        without "[MASK]", one too long, or top_k outside 1..vocab size."""
        if isinstance(texts, str):
            raise TypeError("fill_mask takes a list of texts; got one str")
        vocab_size = self.tokenizer.vocab_size
        if not 1 <= top_k <= vocab_size:
            raise ValueError(f"top_k={top_k}: expected 1..{vocab_size} (the vocabulary size)")
        encoded = []
        for n, text in enumerate(texts):
            try:
                encoded.append(encode_masked(self.tokenizer, text, self.max_seq_length))
            except ValueError as e:
                raise ValueError(f"text {n}: {e}") from None
        results = []
        for i in range(0, len(encoded), self.batch_size):
            results += self._batch(encoded[i : i + self.batch_size], top_k)
        return results

    def _batch(self, encoded: list[MaskedText], top_k: int) -> list[list[list[Fill]]]:
        ids, input_mask, positions = padded_batch(encoded)
        scores, token_ids = (t.numpy() for t in self._top_k(ids, input_mask, positions, top_k))
        out = []
        for row, e in enumerate(encoded):
            per_mask = []
            for m, span in enumerate(e.mask_spans):
                per_mask.append(
                    [
                        self._fill(e.text, span, int(t), float(s))
                        for t, s in zip(token_ids[row, m], scores[row, m])
                    ]
                )
            out.append(per_mask)
        return out

    def _fill(self, text: str, span: tuple[int, int], token_id: int, score: float) -> Fill:
        token = self.tokenizer.id_to_piece(token_id)
        wordpiece = isinstance(self.tokenizer, WordPieceTokenizer)
        return Fill(token_id, token, score, filled_text(text, span, token, wordpiece))


def fill_mask(model, tokenizer, texts: list[str], top_k: int = 5) -> list[list[list[Fill]]]:
    """`MaskFiller(model, tokenizer)(texts, top_k)`: for each text, for each "[MASK]" in
    it, the `top_k` most probable pieces as `Fill`s (class docstrings)."""
    return MaskFiller(model, tokenizer)(texts, top_k)
