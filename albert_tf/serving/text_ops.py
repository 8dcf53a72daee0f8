"""In-graph text primitives of the SavedModels: the steps between a tokenizer's ids and the
model's inputs, as TensorFlow ops on a batch (no model, no tokenizer of their own).

    valid_utf8          invalid UTF-8 → U+FFFD, as Python's decode(errors="replace")
    truncated_lengths   the official pair truncation in closed form
    same_rows           one clear error for inputs of different row counts
    at_least_one_row    a "" row for an empty request (outputs cut back by the caller)
    bucket_length       the training buckets' length that holds a request
    by_length           a request's rows computed in length-sorted groups, each at its bucket
    pack                `[CLS] a [SEP] (b [SEP])` → input_ids, input_mask, segment_ids
"""

from __future__ import annotations

import tensorflow as tf

from data_pipeline.length_buckets import bucket_sizes


def valid_utf8(text):
    """Invalid UTF-8 bytes → U+FFFD, as Python's decode(errors="replace")."""
    return tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )


def truncated_lengths(la, lb, budget):
    """The lengths the official `_truncate_seq_pair` leaves (pop from the longer, B on
    ties) in closed form: the shorter keeps its length s when 2s ≤ budget and the longer
    gets the rest; otherwise A keeps ceil(budget/2) and B floor(budget/2)."""
    fits = la + lb <= budget
    short = tf.minimum(la, lb)
    half = 2 * short <= budget
    a = tf.where(fits, la, tf.where(half, tf.where(la > lb, budget - lb, la), (budget + 1) // 2))
    b = tf.where(fits, lb, tf.where(half, tf.where(la > lb, lb, budget - la), budget // 2))
    return a, b


def same_rows(**inputs):
    """The inputs (in order), after checking that they have the same number of rows: a
    clear InvalidArgumentError ("text_a has 3 rows but text_b has 2") rather than a shape
    error deep in the graph, or a one-row input silently broadcast over the batch."""
    (first, x), *rest = inputs.items()
    rows = tf.shape(x)[0]
    checks = []
    for name, y in rest:
        other = tf.shape(y)[0]
        message = tf.strings.format(f"{first} has {{}} rows but {name} has {{}}", (rows, other))
        checks.append(tf.debugging.Assert(tf.equal(rows, other), [message]))
    with tf.control_dependencies(checks):
        return [tf.identity(t) for t in inputs.values()]


def at_least_one_row(x):
    """`x` with one empty row ("" or 0) added when it has none: the model and the span
    search need a row. Callers cut the outputs back to the request's rows (`[:batch]`),
    so a non-empty batch computes exactly what it did without this."""
    missing = tf.maximum(1 - tf.shape(x)[0], 0)
    paddings = [[0, missing]] + [[0, 0]] * (x.shape.rank - 1)
    return tf.pad(x, paddings, constant_values="" if x.dtype == tf.string else 0)


def _take(ragged, lengths):
    """Row i of `ragged` cut to lengths[i]. (The mask is built on the flat values: a ragged
    `<` against a [B, 1] tensor goes through ragged broadcasting, hundreds of graph ops.)"""
    position = tf.ragged.range(ragged.row_lengths())  # [B, (n)]
    limit = tf.gather(tf.cast(lengths, tf.int64), position.value_rowids())
    return tf.ragged.boolean_mask(ragged, position.with_flat_values(position.flat_values < limit))


def bucket_length(longest, max_seq_length: int):
    """int32 scalar: the smallest of `bucket_sizes(max_seq_length)` (the buckets of the
    training and evaluation batches, data_pipeline.length_buckets) ≥ `longest`. Serving
    pads a request to it: a short sentence costs what its length costs, and the model's
    kernels see a handful of shapes rather than one per length."""
    return bucket_lengths(tf.reshape(longest, [1]), max_seq_length)[0]


def bucket_lengths(longest, max_seq_length: int):
    """`bucket_length` of each of int [n] lengths → int32 [n]."""
    sizes = tf.constant(bucket_sizes(max_seq_length), tf.int32)
    index = tf.searchsorted(sizes, tf.cast(longest, tf.int32))
    return tf.gather(sizes, tf.minimum(index, tf.size(sizes) - 1))


# A request's rows are computed in length-sorted groups (`by_length`) of at most this many
# rows, and at most GROUP_POSITIONS grid positions (rows × the group's longest): the
# serving modules' packed encoder (albert_tf.modeling.packing) puts only real tokens
# through its projections and FFN, so a group's padding costs only attention, and a large
# group of short rows gives the matmuls more rows; the position cap bounds the attention
# grid ([rows, heads, L, L]) of long rows: 8 rows of 128, 2 of 512. Measured on SST-2 dev
# at batch 32 (ALBERT-base, docs/performance-history.md): caps of 512, 1,024, 2,048 and 4,096
# positions served 18.9, 20.0, 17.1 and 13.1 sentences/s.
LENGTH_GROUP = 32
GROUP_POSITIONS = 1024


def by_length(
    forward,
    input_ids,
    input_mask,
    segment_ids,
    max_seq_length: int,
    group=LENGTH_GROUP,
    exact=False,
    positions=GROUP_POSITIONS,
):
    """`forward(input_ids, input_mask, segment_ids)` → float32 [rows, ...] computed on the
    request's rows sorted by length, in groups of consecutive rows, each cut to its own
    bucket (`bucket_length` of its longest row; with `exact`, to that longest row itself:
    more distinct shapes, no padding beyond the group's longest), and returned in the
    request's order. A group is as many rows as fit both `group` and `positions` (rows ×
    its cut length ≤ positions; one row at least). Inputs int32 [B, L] or [B, C, L]
    (multiple choice: a row's length is its longest choice, and it counts C × that). A
    batch of 32 mixed sentences then costs about what its tokens cost instead of 32 times
    its longest."""
    lengths = tf.reduce_sum(input_mask, axis=-1)
    per_row = 1
    if input_mask.shape.rank == 3:
        lengths = tf.reduce_max(lengths, axis=1)
        per_row = tf.shape(input_mask)[1]
    order = tf.argsort(lengths, stable=True)  # [B]
    rows = tf.shape(order)[0]
    sorted_lengths = tf.gather(lengths, order)
    parts = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False)

    def cut_length(longest):  # int32 [n] → [n]
        return longest if exact else bucket_lengths(longest, max_seq_length)

    def body(i, start, parts):
        # The longest run of rows from `start` within both limits: sorted, so a run's
        # longest row is its last, and the cost grows with the run.
        ends = start + tf.range(1, group + 1)  # candidate exclusive ends
        last = tf.gather(sorted_lengths, tf.minimum(ends, rows) - 1)
        cost = (ends - start) * per_row * cut_length(last)
        fits = (ends <= rows) & (cost <= positions)
        end = start + tf.maximum(tf.reduce_sum(tf.cast(fits, tf.int32)), 1)
        take = order[start:end]
        length = cut_length(sorted_lengths[end - 1 : end])[0]
        cut = [tf.gather(x, take)[..., :length] for x in (input_ids, input_mask, segment_ids)]
        return i + 1, end, parts.write(i, forward(*cut))

    _, _, parts = tf.while_loop(
        lambda i, start, _: start < rows, body, (tf.constant(0), tf.constant(0), parts)
    )
    ordered = parts.concat()  # rows in `order`
    return tf.scatter_nd(order[:, None], ordered, tf.shape(ordered))


def pack(ids_a, ids_b, max_seq_length: int, cls_id: int, sep_id: int, length_aware=False):
    """`[CLS] a [SEP] (b [SEP])` per row, truncated as in training (`classifier_features.
    _pack`; a row with an empty b is a single sentence). Ragged int32 [B, (.)] →
    (input_ids, input_mask, segment_ids) int32 [B, L]: L = max_seq_length, or with
    `length_aware` the request's longest row rounded up to a bucket (`bucket_length`;
    padding beyond a row changes none of its outputs: attention masks it)."""
    la = tf.cast(ids_a.row_lengths(), tf.int32)
    lb = tf.cast(ids_b.row_lengths(), tf.int32)
    has_b = tf.cast(lb > 0, tf.int32)
    a_len, b_len = truncated_lengths(la, lb, max_seq_length - 2 - has_b)
    a, b = _take(ids_a, a_len), _take(ids_b, b_len)
    batch = tf.shape(la)[0]
    one = tf.RaggedTensor.from_row_lengths(tf.fill([batch], cls_id), tf.ones([batch], tf.int64))
    sep = tf.RaggedTensor.from_row_lengths(tf.fill([batch], sep_id), tf.ones([batch], tf.int64))
    sep_b = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(has_b)], sep_id), tf.cast(has_b, tf.int64)
    )
    ids = tf.concat([one, a, sep, b, sep_b], axis=1)
    first = a_len + 2
    total = first + b_len + has_b
    length = bucket_length(tf.reduce_max(total), max_seq_length) if length_aware else None
    length = max_seq_length if length is None else length
    positions = tf.range(length)[None, :]
    dense = ids.to_tensor(0)
    input_ids = tf.pad(dense, [[0, 0], [0, length - tf.shape(dense)[1]]])
    if not length_aware:  # (the static shape the tokenize signature has always declared)
        input_ids = tf.ensure_shape(input_ids, [None, max_seq_length])
    input_mask = tf.cast(positions < total[:, None], tf.int32)
    segment_ids = tf.cast((positions >= first[:, None]) & (positions < total[:, None]), tf.int32)
    return input_ids, input_mask, segment_ids
