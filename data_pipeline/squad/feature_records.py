"""The windowed features of a SQuAD file as cached TFRecords (keyed by the file, the
vocabulary and every setting) and the tf.data reader over them, batched by length when
asked."""

from __future__ import annotations

import dataclasses
import os

from data_pipeline.io import filesystem
from data_pipeline.squad.examples import SquadExample, read_squad
from data_pipeline.squad.features import PREDICTION_KEYS, convert_squad_examples

# The per-token features of the records ([max_seq_length] each): what length-grouped
# batches cut and pad to their bucket.
SEQUENCE_FEATURES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "context_mask",
    "max_context",
    "token_start_char",
    "token_end_char",
)
# What the model is trained on (plus `example_index`, read as `feature_index`).
TRAINING_KEYS = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "start_positions",
    "end_positions",
    "is_impossible",
)


def squad_dataset(
    record_path: str,
    batch_size: int,
    max_seq_length: int,
    is_training: bool = False,
    seed: int | None = None,
    input_context=None,
    drop_remainder: bool = True,
    keys=None,
    length_buckets=None,
):
    """Batches of {input_ids, input_mask, segment_ids: int32 [B, S], start_positions,
    end_positions, is_impossible: int32 [B], feature_index int32 [B]} (`keys`: the record
    features to read instead, e.g. the model's inputs and PREDICTION_KEYS, whose
    context_mask, max_context, token_start_char, token_end_char are [B, S];
    feature_index, the record's position in the file, always comes along).

    `length_buckets` (e.g. data_pipeline.length_buckets.LENGTH_BUCKETS; None: every batch
    padded to max_seq_length): windows of similar length are batched together, S being
    the batch's bucket (a window is `[CLS] question [SEP] context [SEP]`: mostly short of
    384 for SQuAD's paragraphs), every per-token feature (SEQUENCE_FEATURES) cut to it.
    Batches then come out of file order: `feature_index` puts the results back
    (`predict_logits(order_by="feature_index")`); training batches are full."""
    import tensorflow as tf

    wanted = tuple(dict.fromkeys((*(keys or TRAINING_KEYS), "example_index")))
    spec = {
        k: tf.io.FixedLenFeature([max_seq_length if k in SEQUENCE_FEATURES else 1], tf.int64)
        for k in wanted
    }

    def parse(records):
        f = tf.io.parse_example(records, spec)
        out = {k: tf.cast(v if k in SEQUENCE_FEATURES else v[:, 0], tf.int32) for k, v in f.items()}
        out["feature_index"] = out.pop("example_index")
        return out

    from data_pipeline.records import record_dataset

    sequences = tuple(k for k in SEQUENCE_FEATURES if k in wanted)
    return record_dataset(
        record_path,
        batch_size,
        parse,
        is_training,
        seed,
        input_context,
        drop_remainder,
        length_buckets,
        sequences,
        max_seq_length,
    )


# Bumped when the cached `info` gains a field older caches lack (2: max_seq_length).
CACHE_FORMAT = 2


@dataclasses.dataclass(frozen=True)
class SquadFeatures:
    """The windowed features of one SQuAD file. source: the JSON file; examples: its
    questions (postprocessing maps features back to them); path: the cached TFRecords;
    count: features; max_seq_length: their length; info: what the conversion counted
    (`convert_squad_examples` stats); reused: read from the cache rather than converted."""

    source: str
    examples: list
    path: str
    count: int
    max_seq_length: int
    info: dict
    reused: bool

    def describe(self) -> str:
        """One line: questions, features, where they are, the conversion's counts."""
        counts = ", ".join(
            f"{k} {v:,}"
            for k, v in sorted(self.info.items())
            if k not in ("features", "examples", "max_seq_length")
        )
        return (
            f"{self.source}: {len(self.examples):,} questions -> {self.count:,} features "
            f"({'cached' if self.reused else 'converted'}: {self.path}); {counts}"
        )

    def dataset(self, batch_size: int, **options):
        """`squad_dataset` of these records (their own length; `length_buckets=...` for
        batches grouped by length)."""
        return squad_dataset(self.path, batch_size, self.max_seq_length, **options)

    def prediction_dataset(self, batch_size: int, length_buckets=None):
        """Every feature once: the model's inputs, PREDICTION_KEYS and feature_index; in
        file order, or with `length_buckets` grouped by length (put the results back in
        order with `feature_index`)."""
        return self.dataset(
            batch_size,
            drop_remainder=False,
            keys=("input_ids", "input_mask", "segment_ids") + PREDICTION_KEYS,
            length_buckets=length_buckets,
        )


def squad_features(
    source: str,
    tokenizer,
    cache_dir: str,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
    examples: list[SquadExample] | None = None,
) -> SquadFeatures:
    """The features of the SQuAD file `source`, from the cache `cache_dir/<name>[-train]`
    or converted into it (`convert_squad_examples`); the cache is keyed by the file's and
    the vocabulary's checksums and every argument. A missing file is a FileNotFoundError
    naming it. `examples`: the file's questions when the caller has read them already
    (`read_squad`). A cache whose records do not match its metadata is rebuilt."""
    from data_pipeline.records import cached_features, fingerprint

    if not filesystem.exists(source):
        raise FileNotFoundError(f"SQuAD file not found: {source}")
    key = fingerprint(
        source,
        tokenizer,
        kind="squad",
        is_training=is_training,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
        cache_format=CACHE_FORMAT,
    )
    examples = read_squad(source) if examples is None else examples
    info = {"max_seq_length": max_seq_length}
    name = os.path.splitext(os.path.basename(source))[0] + ("-train" if is_training else "")
    base = os.path.join(cache_dir, name)

    def build():
        return convert_squad_examples(
            examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training, info
        )

    path, count, reused = cached_features(base, key, build, info)
    return SquadFeatures(source, examples, path, count, info["max_seq_length"], info, reused)
