"""The bounded cost of one SQuAD request: its windows laid out flat, the most-context rule
over the few windows that can hold a token, the model run a group of windows at a time,
and the request's limit.

The SQuAD SavedModel (`modules`) windows each context as the runner does
(data_pipeline.windows.doc_spans). A request's windows are one flat list [W, S] (W =
the sum of its rows' windows, row by row, window by window), not a [rows, most windows]
grid: a batch of one long and many short contexts costs its windows, not rows × the
longest's windows. The most-context rule looks, for a token, only at the windows that can
hold it (at most `candidate_windows`: a window holds `room` ≤ S − 3 tokens and the next
starts `step` tokens later), not at every window of its context: a [W, S, C] tensor
instead of [W, S, W], which grew with the square of the context. The model sees at most
`WINDOW_GROUP` windows at once. Every tensor is then linear in the request's windows and
bytes, and `max_windows` (albert_tf.serving.request_windows, in SQuAD's words) bounds
both: beyond it the request is an InvalidArgumentError naming the limit and the request's
size.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.request_windows import bytes_message, max_request_bytes
from albert_tf.serving.tasks.squad.lite_runner import WORDING

# Windows the model scores at once: its activations are those of this many windows
# however long the request (an xxlarge model's attention of 16 × 384² × 64 heads is
# 600 MB in float32).
WINDOW_GROUP = 16


def check_request_bytes(question, context, max_windows: int, max_seq_length: int):
    """(question, context) [B] strings, after an InvalidArgumentError unless their bytes
    fit `max_request_bytes`: checked before any tokenization."""
    limit = max_request_bytes(max_windows, max_seq_length)
    length = lambda x: tf.reduce_sum(tf.cast(tf.strings.length(x), tf.int64))  # noqa: E731
    size = length(question) + length(context)
    message = tf.strings.format(bytes_message("{}", max_windows, max_seq_length, WORDING), [size])
    check = tf.debugging.Assert(size <= limit, [message])
    with tf.control_dependencies([check]):
        return tf.identity(question), tf.identity(context)


def candidate_windows(max_seq_length: int, doc_stride: int, max_query_length: int) -> int:
    """The most windows that can hold one context token: ceil(room / step) with the
    largest room (S − 3, an empty question) over the smallest step (min(doc_stride,
    S − max_query_length − 3))."""
    step = max(1, min(doc_stride, max_seq_length - max_query_length - 3))
    return -(-(max_seq_length - 3) // step)


def max_context(j, k, w_start_of, w_len_of, windows_of, step, candidates: int):
    """bool [W, S]: whether window k gives doc token j its most context: the largest
    min(left, right) + 0.01 × length over the windows holding j, the first window on ties
    (data_pipeline.squad.features._is_max_context). Only windows k' ∈ [j // step −
    candidates + 1, j // step] can hold j; they are scored in increasing k' as the runner
    scores all.

    j: int32 [W, S] doc index of each position (any value off the context); k: int32 [W];
    w_start_of(kk), w_len_of(kk): int32 [W, S, C] start and length of windows kk of each
    window's row; windows_of, step: int32 [W] of each window's row."""
    c = tf.range(candidates)[None, None, :]  # [1, 1, C]
    kk = (tf.math.floordiv(j, step[:, None]))[:, :, None] - (candidates - 1) + c  # [W, S, C]
    ws, wl = w_start_of(kk), w_len_of(kk)
    jk = j[:, :, None]
    inside = (kk >= 0) & (kk < windows_of[:, None, None]) & (jk >= ws) & (jk < ws + wl)
    score = tf.where(
        inside,
        tf.cast(tf.minimum(jk - ws, ws + wl - 1 - jk), tf.float32) + 0.01 * tf.cast(wl, tf.float32),
        -1e9,
    )
    best = tf.gather(kk, tf.argmax(score, axis=-1, output_type=tf.int32), batch_dims=2)
    return tf.equal(best, k[:, None])


def forward_in_groups(forward, inputs, group: int = WINDOW_GROUP) -> dict:
    """`forward(*inputs)` ({name: [n, ...]}) on the rows of `inputs` (each [W, L], W ≥ 1),
    `group` rows at a time, concatenated back in order: what the model holds at once is
    one group's activations."""
    rows = tf.shape(inputs[0])[0]
    first = forward(*(x[:group] for x in inputs))
    names = sorted(first)
    groups = (rows + group - 1) // group
    parts = [
        tf.TensorArray(first[n].dtype, size=groups, infer_shape=False).write(0, first[n])
        for n in names
    ]

    def body(i, parts):
        out = forward(*(x[i * group : (i + 1) * group] for x in inputs))
        return i + 1, [p.write(i, out[n]) for p, n in zip(parts, names)]

    _, parts = tf.while_loop(lambda i, _: i < groups, body, (tf.constant(1), parts))
    return {n: p.concat() for n, p in zip(names, parts)}


def best_per_row(values, row, rows):
    """(best value, index of its first occurrence) per row: values float32 [W, M] (each
    window's candidates), row int32 [W] (ascending, every row present) → float32 [rows],
    int32 [rows] indices into the flattened [W × M]: the argmax over the row's windows
    in order, the first on ties, as tf.argmax over the row's [windows × M]."""
    m = tf.shape(values)[1]
    flat = tf.reshape(values, [-1])
    seg = tf.reshape(tf.repeat(row, m), [-1])
    best = tf.math.unsorted_segment_max(flat, seg, rows)
    index = tf.range(tf.size(flat))
    first = tf.math.unsorted_segment_min(
        tf.where(flat == tf.gather(best, seg), index, tf.int32.max), seg, rows
    )
    return best, first
