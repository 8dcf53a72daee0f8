"""Words cut out of a batch of texts in TensorFlow ops, at a cost linear in the text.

`tf.strings.substr(tf.gather(text, rows), begin, length)` (one substring per word)
copies its row's whole text once per word before cutting: N words of a T-byte text
cost N × T bytes, 1.7 GB for one 100 KB SQuAD context. `word_substrings` takes the same
bytes from the text's bytes instead: every tensor is linear in the text's bytes.
"""

from __future__ import annotations


def word_substrings(text, rows, begin, end):
    """string [N]: text[rows[i]][begin[i]:end[i]] (byte offsets), as `tf.strings.substr`.
    text: string [B]; rows, begin, end: integer [N] (begin ≤ end ≤ the row's bytes)."""
    import tensorflow as tf

    raw = tf.strings.bytes_split(text)  # [B, (bytes)]: one string of one byte each
    base = tf.gather(raw.row_starts(), tf.cast(rows, tf.int64))
    index = tf.ragged.range(base + tf.cast(begin, tf.int64), base + tf.cast(end, tf.int64))
    return tf.strings.reduce_join(tf.gather(raw.flat_values, index), axis=1)
