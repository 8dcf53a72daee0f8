"""Batches grouped by length and padded to a bucket: the model computes the tokens that
exist, with a fixed, small set of shapes.

Task records hold every sequence padded to max_seq_length. `length_bucketed` cuts each
example to its length (the last 1 of `input_mask`; for multiple choice, the longest
choice), groups examples of similar length (tf.data's `bucket_by_sequence_length`) and
pads each batch to its bucket: the smallest of `bucket_sizes(max_seq_length, buckets)`
that holds the batch's longest sequence. A traced (or XLA-compiled) step then sees at most
`len(bucket_sizes(...))` sequence lengths (times two batch sizes when the last batch is
short). Padding never changes an output: masked keys get -10000 before the softmax
(exp → 0 exactly in float32), positions beyond a sequence are never read.

Training order: the records are shuffled (record_dataset's 10,000-example buffer, every
epoch anew) and repeated *before* grouping, so each bucket fills in shuffled order (random
within a bucket) and batches leave in the order their bucket fills (a random interleaving
of the buckets: a long batch is as likely at step 1 as at step 1,000, in proportion to how
many long examples there are). Grouping only delays an example until its bucket fills, so
every example is seen once per epoch's worth of batches, give or take those waiting in a
partly filled bucket (fewer than a batch per bucket), which carry over into the next
epoch; none is dropped. Every batch is full (drop_remainder), as the trainer's global
losses and the replicas need.

Static shapes (TPUs, `--pad_to_max_seq_length`): don't call this; the padded batches are
the records as they are.
"""

from __future__ import annotations

# The default buckets (capped at max_seq_length, which is always one): every 16 tokens up
# to 128, every 32 to 256, every 64 to 512. Steps of 16 waste at most 15 tokens per short
# sentence: on SST-2 dev (German 30k vocabulary, max_seq_length 128) the batches compute
# 1.16x the tokens present, against 1.45x with powers of two and 2.64x padded (and 1.88x
# with dynamic padding of batches of 32 in file order). 16 shapes in all, 8 up to 128.
LENGTH_BUCKETS = (16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512)


def bucket_sizes(max_seq_length: int, buckets=LENGTH_BUCKETS) -> list[int]:
    """The lengths batches are padded to: the buckets below max_seq_length, then it."""
    return sorted({int(b) for b in buckets if 0 < b < max_seq_length} | {max_seq_length})


def parse_buckets(text: str) -> tuple[int, ...]:
    """ "16,32,64" → (16, 32, 64); ValueError (one line) unless positive, increasing ints."""
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"length buckets {text!r}: expected comma-separated integers") from None
    if not sizes or any(b <= 0 for b in sizes) or list(sizes) != sorted(set(sizes)):
        raise ValueError(f"length buckets {text!r}: expected positive increasing integers")
    return sizes


def length_bucketed(
    examples,
    batch_size: int,
    max_seq_length: int,
    sequence_features,
    buckets=LENGTH_BUCKETS,
    drop_remainder: bool = False,
):
    """Single examples (a tf.data.Dataset of dicts; the `sequence_features` are [...,
    max_seq_length], e.g. [S] or [choices, S], and include `input_mask`) → batches of
    `batch_size` with those features [B, ..., L], L the batch's bucket; other features
    [B, ...] as they are. Batches come out grouped, not in file order: carry an index
    feature to put results back. `drop_remainder`: every batch full (training)."""
    import tensorflow as tf

    sequence_features = set(sequence_features)

    def cut(x):
        mask = tf.reshape(x["input_mask"], [-1, max_seq_length])  # [choices or 1, S]
        length = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1))
        return {k: (v[..., :length] if k in sequence_features else v) for k, v in x.items()}

    sizes = bucket_sizes(max_seq_length, buckets)
    # A bucket holds lengths in [boundary_i-1, boundary_i) and is padded to boundary - 1:
    # boundaries at size + 1 pad to exactly the sizes.
    return (
        examples.map(cut, num_parallel_calls=tf.data.AUTOTUNE)
        .bucket_by_sequence_length(
            lambda x: tf.shape(x["input_ids"])[-1],
            [size + 1 for size in sizes],
            [batch_size] * (len(sizes) + 1),
            pad_to_bucket_boundary=True,
            drop_remainder=drop_remainder,
        )
        .prefetch(tf.data.AUTOTUNE)
    )


def batch_buckets(length_buckets: str, padded: bool, strategy: str) -> tuple[int, ...] | None:
    """The lengths batches are grouped by and padded to, or None: batches padded to
    max_seq_length (`padded`, an empty `length_buckets`, and on TPUs, `strategy` "tpu",
    which need static shapes). A ValueError names --length_buckets."""
    if padded or strategy == "tpu" or not length_buckets:
        return None
    try:
        return parse_buckets(length_buckets)
    except ValueError as e:
        raise ValueError(f"--length_buckets: {e}") from None
