"""Raw text → the words a token classifier tags, in TensorFlow ops: the rule of
data_pipeline.tagging.text_words (whitespace tokens; a token holding a CJK character cut
into its characters, as resume_zh's one-character-a-line sentences are), with byte and
character offsets, at a cost linear in the text's bytes."""

from __future__ import annotations

import dataclasses

import tensorflow as tf
import tensorflow_text as tf_text

from data_pipeline.squad.graph_words import word_substrings
from data_pipeline.tokenization.sentencepiece_tokenizer import _whitespace_class
from data_pipeline.tokenization.wordpiece import CJK_RANGES

_CJK = "[" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in CJK_RANGES) + "]"


@dataclasses.dataclass(frozen=True)
class Words:
    """The words of a batch of texts, ragged [B, (W)]: text (string), byte_start /
    byte_end (int64: the word is text[byte_start:byte_end] in bytes) and char_start /
    char_end (int32: the same in characters, Python's str indices)."""

    text: tf.RaggedTensor
    byte_start: tf.RaggedTensor
    byte_end: tf.RaggedTensor
    char_start: tf.RaggedTensor
    char_end: tf.RaggedTensor


def _parts(words, begin, has_cjk):
    """Each word [N] → its characters when `has_cjk`, else itself: (parts [N, (P)],
    byte offsets of each part inside its word, start and end)."""
    chars, starts = tf.strings.unicode_split_with_offsets(words, "UTF-8")  # [N, (C)]
    ends = starts + tf.cast(tf.strings.length(chars), tf.int64)
    n = tf.shape(words, out_type=tf.int64)[0]
    c_rows = chars.value_rowids()
    keep = tf.gather(has_cjk, c_rows)
    whole = tf.where(~has_cjk)[:, 0]

    def choose(char_values, word_values):
        return tf.concat(
            [
                tf.RaggedTensor.from_value_rowids(
                    tf.boolean_mask(char_values, keep), tf.boolean_mask(c_rows, keep), n
                ),
                tf.RaggedTensor.from_value_rowids(word_values, whole, n),
            ],
            axis=1,
        )

    zero = tf.zeros_like(whole)
    parts = choose(chars.flat_values, tf.gather(words, whole))
    start = choose(starts.flat_values, zero) + begin[:, None]
    end = choose(ends.flat_values, tf.gather(tf.cast(tf.strings.length(words), tf.int64), whole))
    return parts, start, end + begin[:, None]


def split_words(text) -> Words:
    """`Words` of text [B] (valid UTF-8)."""
    # regex_split_with_offsets stops at a NUL byte: split a copy whose NULs are \x01 (one
    # byte, not whitespace either), then cut the words out of the text itself.
    _, begin, end = tf_text.regex_split_with_offsets(
        tf.strings.regex_replace(text, "\\x00", "\x01"), _whitespace_class() + "+", ""
    )  # [B, (T)] int64
    tokens = word_substrings(text, begin.value_rowids(), begin.flat_values, end.flat_values)
    has_cjk = tf.strings.regex_full_match(tokens, f"(?s).*{_CJK}.*")
    parts, start, stop = _parts(tokens, begin.flat_values, has_cjk)
    nest = lambda x: begin.with_flat_values(x).merge_dims(1, 2)  # noqa: E731  [B, (W)]
    words, byte_start, byte_end = nest(parts), nest(start), nest(stop)
    # Characters: each row's character byte offsets, searched for the words' offsets.
    _, char_bytes = tf.strings.unicode_decode_with_offsets(text, "UTF-8")  # [B, (C)]
    table = char_bytes.to_tensor(tf.int64.max)
    find = lambda x: tf.RaggedTensor.from_tensor(  # noqa: E731
        tf.cast(tf.searchsorted(table, x.to_tensor(tf.int64.max)), tf.int32), x.row_lengths()
    )
    return Words(words, byte_start, byte_end, find(byte_start), find(byte_end))
