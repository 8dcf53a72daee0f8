"""Tagged sentences → windowed token-classification features, their TFRecord cache and
their tf.data reader.

Each window (alignment.py) is `[CLS] pieces [SEP]`, segment 0, padded to max_seq_length:

  input_ids, input_mask, segment_ids  int [F, S]
  label_ids       int [F, S]: the word's label id on the first piece of every word whose
                  first piece is in the window, -1 everywhere else ([CLS], [SEP], the
                  other pieces of a word, padding). -1 is the loss's "not counted" (a
                  label id rather than a separate mask: one tensor, and a padded batch's
                  zeros must not read as label 0, see `tagging_dataset`). A word inside
                  two overlapping windows is trained on in both, with both contexts.
  word_index      int [F, S]: the word's index in its sentence on the first piece of each
                  word *predicted* from this window (its max-context window), -1 elsewhere:
                  over all windows of a sentence every word appears exactly once, which is
                  how predictions go back to words (predictions.py) and how an evaluation
                  counts each word once.
  sentence_index  int [F]: the sentence each window belongs to.

The cache (`tagging_features`) follows data_pipeline/classification/features.py:
`NAME.tfrecord` + `NAME.json` keyed by a fingerprint of the source file, the tokenizer and
every setting; TFRecord int64 features are written as varints without sign, so label_ids
and word_index are stored +1 and shifted back by the reader.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from data_pipeline.io import filesystem
from data_pipeline.records import cached_features, fingerprint, record_dataset
from data_pipeline.tagging.alignment import best_windows, windows, word_pieces
from data_pipeline.tagging.data import check_labels, read_tagged

IGNORED = -1
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "label_ids", "word_index")
_SHIFTED = ("label_ids", "word_index")  # stored +1 in the TFRecords
CACHE_FORMAT = 1


def convert_sentences(
    sentences,
    tokenizer,
    max_seq_length: int,
    doc_stride: int,
    labels: list[str] | None,
    stats: dict | None = None,
) -> dict[str, np.ndarray]:
    """Features (module docstring) of `sentences` (`data.TaggedSentence`); `labels` None:
    label_ids all -1 (prediction). `stats` counts empty_words, windowed_sentences (those
    needing more than one window) and features."""
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for a piece")
    index = {name: i for i, name in enumerate(labels)} if labels is not None else None
    stats = {} if stats is None else stats
    max_pieces = max_seq_length - 2
    rows = {k: [] for k in (*SEQUENCE_FEATURES, "sentence_index")}
    windowed = 0
    for s_index, (sentence, pieces) in enumerate(
        zip(sentences, word_pieces(tokenizer, sentences, stats))
    ):
        ids, first_of = [], []  # first_of[w]: position of word w's first piece
        for word in pieces:
            first_of.append(len(ids))
            ids += word
        word_at = dict(zip(first_of, range(len(pieces))))  # first-piece position → word
        spans = windows(len(ids), max_pieces, doc_stride)
        windowed += len(spans) > 1
        owner = dict(zip(first_of, best_windows(spans, first_of)))  # (first_of ascends)
        for w_index, (start, length) in enumerate(spans):
            label_ids = [IGNORED] * max_seq_length
            word_index = [IGNORED] * max_seq_length
            for p in range(start, start + length):
                word = word_at.get(p)
                if word is None:
                    continue
                if index is not None:
                    label_ids[p - start + 1] = _label_id(index, sentence, word)
                if owner[p] == w_index:
                    word_index[p - start + 1] = word
            n = length + 2
            rows["input_ids"].append(
                [tokenizer.cls_id]
                + ids[start : start + length]
                + [tokenizer.sep_id]
                + [0] * (max_seq_length - n)
            )
            rows["input_mask"].append([1] * n + [0] * (max_seq_length - n))
            rows["segment_ids"].append([0] * max_seq_length)
            rows["label_ids"].append(label_ids)
            rows["word_index"].append(word_index)
            rows["sentence_index"].append(s_index)
    stats["windowed_sentences"] = stats.get("windowed_sentences", 0) + windowed
    stats["features"] = stats.get("features", 0) + len(rows["sentence_index"])
    count = len(rows["sentence_index"])
    out = {k: np.array(rows[k], np.int64).reshape(count, max_seq_length) for k in SEQUENCE_FEATURES}
    out["sentence_index"] = np.array(rows["sentence_index"], np.int64)
    return out


def _label_id(index: dict, sentence, word: int) -> int:
    tag = sentence.tags[word]
    if tag not in index:
        raise ValueError(
            f"the sentence of line {sentence.line}: tag {tag!r} is not one of the "
            f"{len(index)} labels"
        )
    return index[tag]


def tagging_dataset(
    record_path: str,
    batch_size: int,
    max_seq_length: int,
    is_training: bool = False,
    seed: int | None = None,
    input_context=None,
    drop_remainder: bool = True,
    length_buckets=None,
):
    """Batches of {input_ids, input_mask, segment_ids, label_ids, word_index: int32 [B, S],
    sentence_index, feature_index: int32 [B]} from `tagging_features` records.

    `length_buckets` (data_pipeline.length_buckets): windows of similar length batched
    together, S the batch's bucket, every per-token feature cut to it; batches leave file
    order and `feature_index` (the record's position) puts results back. Padding added by
    bucketing is 0 in the stored (+1) values, i.e. -1 after the shift: never a label."""
    import tensorflow as tf

    spec = {k: tf.io.FixedLenFeature([max_seq_length], tf.int64) for k in SEQUENCE_FEATURES}
    spec["sentence_index"] = tf.io.FixedLenFeature([1], tf.int64)
    spec["example_index"] = tf.io.FixedLenFeature([1], tf.int64)

    def parse(records):
        f = tf.io.parse_example(records, spec)
        out = {k: tf.cast(f[k], tf.int32) for k in SEQUENCE_FEATURES}
        out["sentence_index"] = tf.cast(f["sentence_index"][:, 0], tf.int32)
        out["feature_index"] = tf.cast(f["example_index"][:, 0], tf.int32)
        return out

    def unshift(batch):
        return {k: (v - 1 if k in _SHIFTED else v) for k, v in batch.items()}

    ds = record_dataset(
        record_path,
        batch_size,
        parse,
        is_training,
        seed,
        input_context,
        drop_remainder,
        length_buckets,
        SEQUENCE_FEATURES,
        max_seq_length,
    )
    return ds.map(unshift, num_parallel_calls=tf.data.AUTOTUNE)


@dataclasses.dataclass(frozen=True)
class TaggingFeatures:
    """One split's cached features: the TFRecord `path` with `count` windows of
    `max_seq_length`; `info`: what the conversion found (sentences, windowed_sentences,
    empty_words, features); reused: read from the cache rather than converted."""

    split: str
    path: str
    count: int
    max_seq_length: int
    info: dict
    reused: bool

    def describe(self) -> str:
        return (
            f"{self.split}: {self.info.get('sentences', 0):,} sentences in {self.count:,} "
            f"windows ({self.info.get('windowed_sentences', 0):,} sentences windowed, "
            f"{self.info.get('empty_words', 0):,} words without pieces; "
            f"{'cached' if self.reused else 'converted'}: {self.path})"
        )

    def dataset(self, batch_size: int, **options):
        return tagging_dataset(self.path, batch_size, self.max_seq_length, **options)


def tagging_features(
    source: str,
    split: str,
    tokenizer,
    cache_dir: str,
    labels: list[str],
    max_seq_length: int,
    doc_stride: int,
) -> TaggingFeatures:
    """The features of the tagged file `source` (checked against `labels`), from the cache
    `cache_dir/tagging-<split>` or converted into it."""
    if not filesystem.exists(source):
        raise FileNotFoundError(f"tagging {split} file not found: {source}")
    key = fingerprint(
        source,
        tokenizer,
        split=split,
        labels=labels,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        cache_format=CACHE_FORMAT,
    )
    info = {}

    def build():
        sentences = read_tagged(source)
        check_labels(sentences, labels, source)
        info["sentences"] = len(sentences)
        features = convert_sentences(sentences, tokenizer, max_seq_length, doc_stride, labels, info)
        for k in _SHIFTED:
            features[k] = features[k] + 1
        return features

    base = os.path.join(cache_dir, f"tagging-{split}")
    path, count, reused = cached_features(base, key, build, info)
    return TaggingFeatures(split, path, count, max_seq_length, info, reused)
