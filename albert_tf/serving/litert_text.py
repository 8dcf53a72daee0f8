"""Text → model inputs with LiteRT builtin ops only (plus one tensorflow-text custom op).

The SavedModels tokenize with regex, Unicode-normalization, lowercasing and ragged ops
(`data_pipeline.tokenization.sentencepiece_tokenizer.GraphTokenizer`, `text_ops.pack`); none of them
is a LiteRT
builtin, and the Flex delegate that could run them is not in the pip interpreters nor in a
plain mobile runtime. This module computes the same ids from ops a LiteRT interpreter has:

  1. `FastSentencepieceTokenizer` on the raw text: the TFLite custom op
     `TFText>FastSentencepieceTokenize` (registered by `tensorflow_text.tflite_registrar`),
     with ALBERT's normalization baked into the model's charsmap
     (`data_pipeline.tokenization.baked_normalization`);
  2. the official "<digit>," quirk as an id table (`AlbertTokenizer.digit_comma_rewrites`):
     equal + argmax + gather + boolean_mask;
  3. `pack`: `[CLS] a [SEP] (b [SEP])` truncated as in training (`text_ops.truncated_lengths`)
     by gathers from the flat ids, at the request's longest row (or max_seq_length).

A WordPiece vocabulary (`LiteWordPieceTokenizer`) replaces steps 1-2 by three
tensorflow-text ops (`data_pipeline.tokenization.baked_wordpiece`): `FastSentencepieceTokenizer`
with
BERT's basic tokenization baked into its rewrite table, `FastWordpieceDetokenize` joining
the characters back into words, and `FastWordpieceTokenizer` on those words.

Ids equal the Python tokenizer's except where a context-free rewrite table cannot follow
Python (final sigma; see `baked_normalization` and `baked_wordpiece`). Invalid UTF-8 is not
repaired in the graph (LiteRT has no transcoding op): the runner decodes with
errors="replace" first, as the SavedModel's `valid_utf8` does; strings from
Java/Kotlin/Swift are valid already.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from albert_tf.serving.text_ops import truncated_lengths


class LiteTokenizer:
    """text [B] string → (ids [N] int32, starts [B] int32, lengths [B] int32): the flat ids
    of every row and where each row's ids start and how many there are."""

    def __init__(self, tokenizer):
        import tensorflow_text as tf_text

        from data_pipeline.tokenization.baked_normalization import albert_normalized_spm

        self.spm_model = albert_normalized_spm(tokenizer)
        self.fast = tf_text.FastSentencepieceTokenizer(self.spm_model)
        self.cls_id, self.sep_id = tokenizer.cls_id, tokenizer.sep_id
        rewrites = tokenizer.digit_comma_rewrites()
        self.rewritten = None
        if rewrites:
            width = max(len(v) for v in rewrites.values())
            table = np.full([len(rewrites), width], -1, np.int32)
            for row, ids in enumerate(rewrites.values()):
                table[row, : len(ids)] = ids
            self.rewritten = np.array(list(rewrites), np.int32)  # [K]
            self.rewrites = table  # [K, M], -1 = nothing

    def _digit_comma(self, ids, splits):
        """The official quirk on flat ids: a "<digit>," piece becomes its rewrite."""
        if self.rewritten is None:
            return ids, splits
        width = self.rewrites.shape[1]
        hit = tf.equal(ids[:, None], self.rewritten[None, :])  # [N, K]
        found = tf.reduce_any(hit, axis=1)
        which = tf.argmax(tf.cast(hit, tf.int32), axis=1, output_type=tf.int32)
        own = tf.pad(ids[:, None], [[0, 0], [0, width - 1]], constant_values=-1)
        rows = tf.where(found[:, None], tf.gather(self.rewrites, which), own)  # [N, M]
        keep = rows >= 0
        ends = tf.concat([[0], tf.cumsum(tf.reduce_sum(tf.cast(keep, tf.int32), axis=1))], 0)
        return tf.boolean_mask(rows, keep), tf.gather(ends, splits)

    def __call__(self, text):
        ragged = self.fast.tokenize(text)
        ids, splits = self._digit_comma(
            tf.cast(ragged.flat_values, tf.int32), tf.cast(ragged.row_splits, tf.int32)
        )
        return ids, splits[:-1], splits[1:] - splits[:-1]


class LiteWordPieceTokenizer:
    """`LiteTokenizer` for a WordPiece vocabulary (`WordPieceTokenizer`): text [B] string →
    (ids [N] int32, starts [B] int32, lengths [B] int32), ids equal to
    `WordPieceTokenizer.encode`'s (`data_pipeline.tokenization.baked_wordpiece`)."""

    def __init__(self, tokenizer):
        import tensorflow_text as tf_text

        from data_pipeline.tokenization.baked_wordpiece import baked_wordpiece
        from data_pipeline.tokenization.wordpiece import CONTINUATION

        baked = baked_wordpiece(tokenizer)
        self.cls_id, self.sep_id = tokenizer.cls_id, tokenizer.sep_id
        self.characters = tf_text.FastSentencepieceTokenizer(baked.normalizer_model)
        self.joiner = tf_text.FastWordpieceTokenizer(
            vocab=list(baked.joiner_vocab),
            suffix_indicator=CONTINUATION,
            unknown_token=baked.joiner_vocab[0],
            token_out_type=tf.int32,
            support_detokenization=True,
        )
        self.wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(baked.vocab),
            suffix_indicator=CONTINUATION,
            max_bytes_per_word=baked.max_bytes_per_word,
            token_out_type=tf.int32,
            unknown_token=baked.unknown_token,
            no_pretokenization=False,  # split the joined words at their spaces
        )

    def __call__(self, text):
        characters = self.characters.tokenize(text)  # [B, (characters)], "▁" between words
        words = self.joiner.detokenize(characters.with_row_splits_dtype(tf.int64))  # [B]
        pieces = self.wordpiece.tokenize(words)  # [B, (pieces)]
        splits = tf.cast(pieces.row_splits, tf.int32)
        return pieces.flat_values, splits[:-1], splits[1:] - splits[:-1]


def lite_tokenizer(tokenizer):
    """`LiteTokenizer` of a SentencePiece `AlbertTokenizer`, `LiteWordPieceTokenizer` of a
    `WordPieceTokenizer`."""
    from data_pipeline.tokenization.spec import tokenizer_kind

    if tokenizer_kind(tokenizer) == "wordpiece":
        return LiteWordPieceTokenizer(tokenizer)
    return LiteTokenizer(tokenizer)


def _gather_or_zero(ids, index):
    """ids[index], 0 where index is outside ids (the row's tokens are all inside)."""
    padded = tf.concat([ids, [0]], 0)
    return tf.gather(padded, tf.clip_by_value(index, 0, tf.size(ids)))


def pack(a, b, max_seq_length: int, cls_id: int, sep_id: int, fixed_length: bool = False):
    """`[CLS] a [SEP] (b [SEP])` per row, as `text_ops.pack` (a row with no b tokens is a
    single sentence; the longer side loses tokens first). `a`, `b`: (ids [N], starts [B],
    lengths [B]) from `lite_tokenizer`. Returns input_ids, input_mask, segment_ids int32
    [B, L]: L = the longest packed row (padding beyond a row changes none of its outputs),
    or max_seq_length with `fixed_length` (static shapes for delegates that need them)."""
    (ids_a, start_a, la), (ids_b, start_b, lb) = a, b
    has_b = tf.cast(lb > 0, tf.int32)
    a_len, b_len = truncated_lengths(la, lb, max_seq_length - 2 - has_b)
    a_len, b_len, has_b = a_len[:, None], b_len[:, None], has_b[:, None]
    first = a_len + 2  # where b starts
    total = first + b_len + has_b
    longest = tf.reduce_max(tf.concat([[2], total[:, 0]], 0))  # ≥ [CLS] [SEP], 0 rows too
    length = max_seq_length if fixed_length else longest
    j = tf.range(length)[None, :]  # [1, L]
    from_a = _gather_or_zero(ids_a, start_a[:, None] + j - 1)
    from_b = _gather_or_zero(ids_b, start_b[:, None] + j - first)
    tokens = tf.where(j <= a_len, from_a, tf.where(j < first + b_len, from_b, 0))
    separator = (j == a_len + 1) | ((j == total - 1) & (has_b > 0))
    input_ids = tf.where(j == 0, cls_id, tf.where(separator, sep_id, tokens))
    inside = j < total
    input_ids = tf.where(inside, input_ids, 0)
    input_mask = tf.cast(inside, tf.int32)
    segment_ids = tf.cast((j >= first) & inside, tf.int32)
    return input_ids, input_mask, segment_ids


def take_rows(tokens, rows):
    """(ids, starts, lengths) of `rows` (int32 [R]) of a `LiteTokenizer` result; the flat
    ids are shared, not copied."""
    ids, starts, lengths = tokens
    return ids, tf.gather(starts, rows), tf.gather(lengths, rows)
