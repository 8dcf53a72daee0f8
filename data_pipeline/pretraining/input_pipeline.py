"""tf.data input pipeline for pretraining: TFRecord shards → batches of model features.

    dataset = pretraining_dataset("data/pretrain/*.tfrecord", batch_size=64,
                                  max_seq_length=512, max_predictions_per_seq=20,
                                  input_context=ctx, seed=12345)

Order of operations (what TPU pods and multi-worker runs need):
1. The shard files (sorted) are split between input pipelines by the
   `tf.distribute.InputContext` (file-level when there are enough files, record-level
   otherwise), so each worker reads a disjoint part.
2. Training: files shuffled and repeated, read `cycle_length` at a time (interleave), then
   records shuffled in a buffer. Evaluation: one pass in order.
3. Batched with `drop_remainder=True` (static shapes, one batch size per replica), parsed
   with the spec of `data_pipeline.records` (the writer's), int64 cast to int32.
4. Dynamic masking (records written with `--dynamic_masking`): each batch is masked by
   `masking.NgramMasker`, the writer's own implementation, with a generator seeded by
   (seed, input pipeline, batch number), so every epoch draws new masks and a run is
   reproducible.
5. Optionally (`length_buckets`, training only) regrouped into batches of similar length,
   each padded to its bucket (data_pipeline.length_buckets): a corpus of short documents
   has many instances far below max_seq_length (every document's last one, and
   short_seq_prob's). Off by default: static shapes, as the official code.
6. Prefetched.

Records of the official tool, which have no `token_boundary`, are read as well (the
feature defaults to zeros; dynamic masking needs it and says so).
"""

from __future__ import annotations

import numpy as np

from data_pipeline import documents as documents_lib
from data_pipeline import records as records_lib

MODEL_FEATURES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


def _parse_spec(max_seq_length: int, max_predictions_per_seq: int, dynamic: bool):
    import tensorflow as tf

    spec = records_lib.parse_spec(max_seq_length, max_predictions_per_seq, dynamic)
    if not dynamic:  # official records have no token_boundary
        spec["token_boundary"] = tf.io.FixedLenFeature(
            [max_seq_length], tf.int64, default_value=[0] * max_seq_length
        )
    return spec


def pretraining_dataset(
    input_files,
    batch_size: int,
    max_seq_length: int,
    max_predictions_per_seq: int,
    is_training: bool = True,
    input_context=None,
    seed: int | None = None,
    dynamic_masker=None,
    special_ids=(2, 3),
    shuffle_buffer: int = 10_000,
    cycle_length: int = 8,
    keep_token_boundary: bool = False,
    length_buckets=None,
):
    """Batches of pretraining features.

    Args:
      input_files: comma-separated globs or a list of paths (TFRecord shards).
      batch_size: per input pipeline (= per replica batch size under a strategy's
        `distribute_datasets_from_function`).
      max_seq_length, max_predictions_per_seq: as written (see meta_data.json).
      is_training: shuffle and repeat forever; otherwise one ordered pass.
      input_context: a `tf.distribute.InputContext`, or None for one pipeline.
      seed: makes file order, shuffling and dynamic masks reproducible.
      dynamic_masker: an `NgramMasker` to draw masks in the pipeline (records written with
        --dynamic_masking), or None when the records carry masks.
      special_ids: ids never masked besides padding ([CLS], [SEP]) for dynamic masking.
      keep_token_boundary: also return `token_boundary` [B, S].
      length_buckets: group instances by length into batches padded to these lengths
        (data_pipeline.length_buckets; S is then the batch's bucket), or None.

    Returns a `tf.data.Dataset` of dicts: input_ids, input_mask, segment_ids [B, S];
    masked_lm_positions, masked_lm_ids [B, P] int32; masked_lm_weights [B, P] float32;
    next_sentence_labels [B, 1] int32.
    """
    import tensorflow as tf

    files = documents_lib.expand_input_files(input_files)
    dynamic = dynamic_masker is not None
    if dynamic and dynamic_masker.max_predictions != max_predictions_per_seq:
        raise ValueError(
            f"dynamic_masker.max_predictions={dynamic_masker.max_predictions} "
            f"!= max_predictions_per_seq={max_predictions_per_seq}"
        )
    pipelines, pipeline_id = 1, 0
    if input_context is not None:
        pipelines, pipeline_id = (
            input_context.num_input_pipelines,
            input_context.input_pipeline_id,
        )
    shard_files = len(files) >= pipelines
    ds = tf.data.Dataset.from_tensor_slices(files)
    if shard_files and pipelines > 1:
        ds = ds.shard(pipelines, pipeline_id)
    if is_training:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(
        tf.data.TFRecordDataset,
        cycle_length=max(1, min(cycle_length, len(files))),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if not shard_files and pipelines > 1:
        ds = ds.shard(pipelines, pipeline_id)
    if is_training:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=True)
    spec = _parse_spec(max_seq_length, max_predictions_per_seq, dynamic)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        return {
            k: (v if v.dtype == tf.float32 else tf.cast(v, tf.int32)) for k, v in parsed.items()
        }

    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if dynamic:
        ds = _add_dynamic_masks(
            ds,
            dynamic_masker,
            special_ids,
            seed or 0,
            pipeline_id,
            batch_size,
            max_seq_length,
            max_predictions_per_seq,
        )
    keep = MODEL_FEATURES + (("token_boundary",) if keep_token_boundary else ())
    ds = ds.map(lambda f: {k: f[k] for k in keep if k in f})
    if length_buckets is not None:
        from data_pipeline.length_buckets import length_bucketed

        sequences = ("input_ids", "input_mask", "segment_ids", "token_boundary")
        return length_bucketed(
            ds.unbatch(), batch_size, max_seq_length, sequences, length_buckets, True
        )
    return ds.prefetch(tf.data.AUTOTUNE)


def _add_dynamic_masks(ds, masker, special_ids, seed, pipeline_id, batch, seq, preds):
    import tensorflow as tf

    def mask(step, input_ids, token_boundary, input_mask):
        if not token_boundary.any():
            raise ValueError(
                "dynamic masking needs token_boundary in the records (write "
                "them with create_pretraining_data --dynamic_masking)"
            )
        rng = np.random.default_rng([seed, pipeline_id, int(step)])
        res = masker.mask_records(input_ids, token_boundary, input_mask, special_ids, rng)
        return (res.tokens, res.positions, res.labels, res.weights)

    def apply(step, f):
        ids, positions, labels, weights = tf.numpy_function(
            mask,
            [step, f["input_ids"], f["token_boundary"], f["input_mask"]],
            # stateful: tf.data must not parallelize or reorder this map (its
            # "map_parallelization" rewrite does so for stateless functions), because the
            # masker's n-gram calibration counts advance in batch order.
            [tf.int32, tf.int32, tf.int32, tf.float32],
            stateful=True,
        )
        out = dict(f)
        out.update(
            input_ids=tf.ensure_shape(ids, [batch, seq]),
            masked_lm_positions=tf.ensure_shape(positions, [batch, preds]),
            masked_lm_ids=tf.ensure_shape(labels, [batch, preds]),
            masked_lm_weights=tf.ensure_shape(weights, [batch, preds]),
        )
        return out

    ds = ds.enumerate().map(apply)
    # The masker is Python state that tf.data cannot checkpoint: an iterator checkpoint
    # (the trainer's) keeps the position and the batch counter (so the same random draws
    # follow), and the n-gram calibration counts restart after a resume.
    options = tf.data.Options()
    options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
    return ds.with_options(options)
