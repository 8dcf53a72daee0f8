"""Long documents in the classifier's SavedModel: each text cut into the windows
run_classifier's `--doc_stride` made (data_pipeline.classification.long_documents), the
model run on every window, the windows' logits combined per document, in the graph.

A request's windows are one flat list [W, S] (row by row, window by window: W is the sum
of its rows' windows, not rows × the longest's), scored in length-sorted groups
(text_ops.by_length); every tensor is linear in the request's windows. The request may
need at most `max_windows` windows and `max_request_bytes` bytes of text
(classifier_limits): beyond either, an InvalidArgumentError naming the limit and the
request's size, the bytes checked before any tokenization. The token classifier's
SavedModel (tasks.token_classifier) is bounded by the same two checks.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.classifier_limits import bytes_message, windows_message
from albert_tf.serving.squad_limits import max_request_bytes
from albert_tf.serving.squad_windows import window_rows


def check_text_bytes(text, max_windows: int, max_seq_length: int, noun: str = "classifier"):
    """`text` (string [B]) after an InvalidArgumentError unless its bytes fit (the
    message names the model by `noun`, classifier_limits)."""
    size = tf.reduce_sum(tf.cast(tf.strings.length(text), tf.int64))
    message = tf.strings.format(bytes_message("{}", max_windows, max_seq_length, noun), [size])
    check = tf.debugging.Assert(size <= max_request_bytes(max_windows, max_seq_length), [message])
    with tf.control_dependencies([check]):
        return tf.identity(text)


def check_windows(counts, max_windows: int, max_seq_length: int, noun: str = "classifier"):
    """`counts` (int32 [B], each text's windows) after an InvalidArgumentError unless their
    sum is at most `max_windows`."""
    total = tf.reduce_sum(counts)
    message = tf.strings.format(
        windows_message("{}", "{}", max_windows, max_seq_length, noun), [total, tf.size(counts)]
    )
    with tf.control_dependencies([tf.debugging.Assert(total <= max_windows, [message])]):
        return tf.identity(counts)


def window_counts(pieces, room: int, doc_stride: int, max_document_windows: int = 0):
    """int32 [B]: each row's windows (data_pipeline.windows.doc_spans of its `pieces`
    int32 [B] with windows of `room` pieces, then the first `max_document_windows`).
    Every window but the last is `room` long, so the next starts min(room, doc_stride)
    later and a row of P > room pieces has ceil((P − room) / step) + 1."""
    step = min(room, doc_stride)
    windows = tf.where(pieces > room, (pieces - room + step - 1) // step + 1, 1)
    return tf.minimum(windows, max_document_windows) if max_document_windows > 0 else windows


def windowed_inputs(ids, room: int, doc_stride: int, windows, cls_id: int, sep_id: int):
    """Ragged int32 ids [B, (P)] and each row's `windows` [B] → (input_ids, input_mask,
    segment_ids) int32 [W, room + 2] (`[CLS] pieces [SEP]`, zero padded) and row int32
    [W]: the row of each window."""
    row, k = window_rows(windows)
    start = k * min(room, doc_stride)  # [W]
    pieces = tf.cast(ids.row_lengths(), tf.int32)
    length = tf.minimum(tf.gather(pieces, row) - start, room)  # [W]
    p = tf.range(room + 2)[None, :]  # [1, S]
    first = tf.cast(tf.gather(ids.row_starts(), row), tf.int32) + start  # [W]
    inside = (p >= 1) & (p <= length[:, None])
    flat = tf.concat([ids.flat_values, [0]], 0)  # (a valid index for positions off the text)
    at = tf.where(inside, first[:, None] + p - 1, tf.size(flat) - 1)
    input_ids = tf.where(inside, tf.gather(flat, at), 0)
    input_ids = tf.where(p == 0, cls_id, tf.where(p == length[:, None] + 1, sep_id, input_ids))
    input_mask = tf.cast(p <= length[:, None] + 1, tf.int32)
    return (input_ids, input_mask, tf.zeros_like(input_mask)), row


def aggregate(logits, row, rows, how: str):
    """float32 window logits [W, L] of rows `row` [W] (ascending, each present) →
    document logits [rows, L]: the mean (mean_logits) or the largest log-probability
    (max_prob), as long_documents.aggregate_logits."""
    if how == "mean_logits":
        return tf.math.unsorted_segment_mean(logits, row, rows)
    if how == "max_prob":
        return tf.math.unsorted_segment_max(tf.nn.log_softmax(logits), row, rows)
    raise ValueError(f"aggregate={how!r} is not one of mean_logits, max_prob")
