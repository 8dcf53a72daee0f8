"""Fine-tuning examples → model features, cached as TFRecords, and their tf.data reader.

Sentence (pair): `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, segment 0 then 1; a pair
longer than max_seq_length loses tokens from the end of its longer side, one at a time
(official `_truncate_seq_pair`). Multiple choice (RACE): every option becomes
`[CLS] passage [SEP] question+option [SEP]` (a "_" blank in the question is replaced by
the option, as the official RACE code), padded to `num_choices` with all-zero rows.

The cache (`task_features`): features are written once to `NAME.tfrecord` with `NAME.json`
beside it holding a fingerprint of everything that determines them (the source file's
sha256, the SentencePiece model's sha256, do_lower_case, max_seq_length, labels,
num_choices, columns, the training subset) and what the conversion found: truncations,
whether the sequences are pairs (`text_pair`, which a serving model must know), the
sequence length and choice count the records have. A later run with the same settings
reuses the file and reads that back; any difference rebuilds it, and so does a record file
that does not hold the number of whole records its metadata says (a copy cut short).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from data_pipeline.classification.examples import choice_text
from data_pipeline.classification.long_documents import convert_windowed
from data_pipeline.classification.multi_label import multi_hot
from data_pipeline.io import filesystem
from data_pipeline.records import cached_features, fingerprint, record_dataset

# Bumped when the cached `info` gains a field older caches lack (2: text_pair).
CACHE_FORMAT = 2


def truncate_pair(a: list, b: list, max_tokens: int) -> None:
    """Official `_truncate_seq_pair`: pop from the end of the longer list (B on ties)."""
    while len(a) + len(b) > max_tokens:
        (a if len(a) > len(b) else b).pop()


def _pack(tokenizer, a, b, max_seq_length, stats=None):
    limit = max_seq_length - (3 if b else 2)
    if stats is not None:
        if len(a) + len(b) > limit:
            stats["truncated"] = stats.get("truncated", 0) + 1
        stats["text_pair"] = stats.get("text_pair", False) or bool(b)
    truncate_pair(a, b, limit)
    ids = [tokenizer.cls_id] + a + [tokenizer.sep_id]
    segments = [0] * len(ids)
    if b:
        ids += b + [tokenizer.sep_id]
        segments += [1] * (len(b) + 1)
    pad = max_seq_length - len(ids)
    return ids + [0] * pad, [1] * len(segments) + [0] * pad, segments + [0] * pad


def convert_examples(
    examples,
    tokenizer,
    max_seq_length: int,
    labels: list[str] | None,
    stats: dict | None = None,
    multi_label: bool = False,
):
    """Examples (`examples.Example`) → {input_ids, input_mask, segment_ids [N, S],
    label_ids [N] (int64 class index, or float32 score when `labels` is None; with
    `multi_label`: float32 multi-hot [N, L], `multi_label.multi_hot`)}.
    `stats["truncated"]` counts the examples that did not fit max_seq_length;
    `stats["text_pair"]` says whether any sequence has a second segment."""
    texts_a = tokenizer.encode_batch([e.text_a for e in examples])
    texts_b = tokenizer.encode_batch([e.text_b or "" for e in examples])
    index = {name: i for i, name in enumerate(labels)} if labels else None
    ids, mask, seg, label_ids = [], [], [], []
    for e, a, b in zip(examples, texts_a, texts_b):
        x, m, s = _pack(tokenizer, list(a), list(b) if e.text_b else [], max_seq_length, stats)
        ids.append(x)
        mask.append(m)
        seg.append(s)
        if multi_label:
            continue
        if e.label is None:
            label_ids.append(0)
        elif index is None:
            label_ids.append(float(e.label))
        else:
            label_ids.append(index[str(e.label)])
    if multi_label:
        label_ids = multi_hot(examples, labels)
    return {
        "input_ids": np.array(ids, np.int64),
        "input_mask": np.array(mask, np.int64),
        "segment_ids": np.array(seg, np.int64),
        "label_ids": np.array(label_ids, np.float32 if index is None or multi_label else np.int64),
    }


def convert_multiple_choice(
    examples, tokenizer, max_seq_length: int, num_choices: int = 4, stats: dict | None = None
):
    """`MultipleChoiceExample`s → {input_ids, input_mask, segment_ids [N, C, S],
    label_ids [N]}; questions with fewer options get all-zero rows. `stats["truncated"]`
    counts the (question, option) sequences that did not fit."""
    contexts = tokenizer.encode_batch([e.context for e in examples])
    rows = {"input_ids": [], "input_mask": [], "segment_ids": []}
    labels = []
    for e, context in zip(examples, contexts):
        if len(e.options) > num_choices:
            raise ValueError(f"{e.guid}: {len(e.options)} options > num_choices={num_choices}")
        qas = [choice_text(e.question, o) for o in e.options]
        per = {k: [] for k in rows}
        for qa in tokenizer.encode_batch(qas):
            x, m, s = _pack(tokenizer, list(context), list(qa), max_seq_length, stats)
            per["input_ids"].append(x)
            per["input_mask"].append(m)
            per["segment_ids"].append(s)
        for k in rows:
            per[k] += [[0] * max_seq_length] * (num_choices - len(e.options))
            rows[k].append(per[k])
        labels.append(e.label if e.label is not None else 0)
    out = {k: np.array(v, np.int64) for k, v in rows.items()}
    out["label_ids"] = np.array(labels, np.int64)
    return out


def classifier_dataset(
    record_path: str,
    batch_size: int,
    max_seq_length: int,
    regression: bool = False,
    num_choices: int | None = None,
    is_training: bool = False,
    seed: int | None = None,
    input_context=None,
    drop_remainder: bool = True,
    length_buckets=None,
    multi_hot: int = 0,
):
    """Batches of {input_ids, input_mask, segment_ids: int32 [B, S] (or [B, C, S]),
    label_ids: int32 or float32 [B] (float32 [B, L] with `multi_hot` = L labels),
    example_index int32 [B]}.

    `length_buckets` (e.g. data_pipeline.length_buckets.LENGTH_BUCKETS; None: every batch
    padded to max_seq_length): examples of similar length are batched together, S being
    the batch's bucket (16, 32, 48, ... up to max_seq_length), so the model computes
    the tokens that exist, with a few shapes (data_pipeline.length_buckets says how
    training still shuffles). Batches then come out of file order; `example_index` puts
    the predictions back (`predict_logits(order_by=...)`)."""
    import tensorflow as tf

    shape = [num_choices, max_seq_length] if num_choices else [max_seq_length]
    size = int(np.prod(shape))
    spec = {
        k: tf.io.FixedLenFeature([size], tf.int64)
        for k in ("input_ids", "input_mask", "segment_ids")
    }
    spec["label_ids"] = tf.io.FixedLenFeature(
        [multi_hot or 1], tf.float32 if regression or multi_hot else tf.int64
    )
    spec["example_index"] = tf.io.FixedLenFeature([1], tf.int64)

    def parse(records):
        f = tf.io.parse_example(records, spec)
        out = {
            k: tf.reshape(tf.cast(f[k], tf.int32), [-1] + shape)
            for k in ("input_ids", "input_mask", "segment_ids")
        }
        out["label_ids"] = (
            f["label_ids"]
            if multi_hot
            else f["label_ids"][:, 0]
            if regression
            else tf.cast(f["label_ids"][:, 0], tf.int32)
        )
        out["example_index"] = tf.cast(f["example_index"][:, 0], tf.int32)
        return out

    return record_dataset(
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


SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass(frozen=True)
class TaskFeatures:
    """One split's cached features. path: the TFRecord file; count: its records;
    max_seq_length and num_choices (None: not multiple choice): the records' shape;
    regression: float scores for labels; text_pair: whether any sequence has a second
    segment; info: what the conversion found (truncated, subset_of); reused: read from
    the cache rather than converted; multi_label: the number of labels of the multi-hot
    label_ids (0: one label id a record)."""

    task: str
    split: str
    path: str
    count: int
    max_seq_length: int
    num_choices: int | None
    regression: bool
    text_pair: bool
    info: dict
    reused: bool
    multi_label: int = 0

    def describe(self) -> str:
        """One line: counts, truncation, and where the records are."""
        of = f" (drawn from {self.info['subset_of']:,})" if self.info.get("subset_of") else ""
        unit = "sequences" if self.num_choices else "examples"
        if "document_windows" in self.info:  # long documents (long_documents)
            docs = len(self.info["document_windows"])
            return (
                f"{self.task} {self.split}: {docs:,} documents{of} in {self.count:,} windows "
                f"of max_seq_length={self.max_seq_length}, {self.info['windowed']:,} of more "
                f"than one, {self.info['truncated']:,} cut to --max_document_windows "
                f"({'cached' if self.reused else 'converted'}: {self.path})"
            )
        return (
            f"{self.task} {self.split}: {self.count:,} examples{of}, "
            f"{self.info.get('truncated', 0):,} {unit} truncated to max_seq_length="
            f"{self.max_seq_length} ({'cached' if self.reused else 'converted'}: "
            f"{self.path})"
        )

    def dataset(self, batch_size: int, **options):
        """`classifier_dataset` of these records (their own shape and label kind)."""
        return classifier_dataset(
            self.path,
            batch_size,
            self.max_seq_length,
            self.regression,
            self.num_choices,
            multi_hot=self.multi_label,
            **options,
        )


def split_examples(spec, split, labels, max_examples=0, seed=0, held_out=None, info=None):
    """The examples of `split` that `task_features` converts, in record order (record i
    is example i: its `example_index`): the file's, `max_examples` of them drawn with
    `seed` (> 0), then `held_out`'s part. `info["subset_of"]`: the count drawn from."""
    examples = spec.read(split, spec.source(split))
    spec.check_labels(split, labels, examples)
    if max_examples > 0 and max_examples < len(examples):
        if info is not None:
            info["subset_of"] = len(examples)
        keep = np.random.default_rng(seed).choice(len(examples), max_examples, replace=False)
        examples = [examples[i] for i in sorted(keep)]
    return held_out.select(examples) if held_out else examples


def task_features(
    spec,
    split: str,
    tokenizer,
    cache_dir: str,
    max_seq_length: int,
    labels: list[str] | None,
    max_examples: int = 0,
    seed: int = 0,
    held_out=None,
    windows=None,
) -> TaskFeatures:
    """The features of `split` of the task `spec` (a `tasks.TaskSpec`), from the cache
    `cache_dir/<task>-<split>` or converted into it. `max_examples` > 0 keeps that many
    examples at most, drawn at random with `seed` (learning curves, low-resource runs);
    `held_out` (a `held_out.HeldOut`) then keeps its part of them only. `windows` (a
    long_documents.DocumentWindows, enabled): long texts as windows.
    A missing file is a FileNotFoundError naming it."""
    # Windows trained on are stored shuffled; evaluated ones (dev, test, the held-out
    # tune part of train) in document order, to be combined per document.
    trained = split == "train" and (held_out is None or held_out.part == "fit")
    source = spec.source(split)
    if not filesystem.exists(source):
        raise FileNotFoundError(f"{spec.name} {split} file not found: {source}")
    choices = spec.choices
    subset = max_examples if max_examples > 0 else 0
    key = fingerprint(
        source,
        tokenizer,
        task=spec.name,
        split=split,
        labels=labels,
        max_seq_length=max_seq_length,
        num_choices=choices,
        columns=[spec.text_a_column, spec.text_b_column, spec.label_column],
        cache_format=CACHE_FORMAT,
        **({"subset": subset, "subset_seed": seed} if subset else {}),
        **({"multi_label": spec.label_delimiter} if spec.multi_label else {}),
        **(held_out.key() if held_out else {}),
        **({"windows": windows.fingerprint()} if windows and windows.enabled else {}),
        **({"windows_shuffled": seed} if windows and windows.enabled and trained else {}),
    )
    info = {"truncated": 0}

    def build():
        examples = split_examples(spec, split, labels, max_examples, seed, held_out, info)
        info.update(
            max_seq_length=max_seq_length,
            num_choices=choices,
            regression=labels is None and not choices,
        )
        if windows and windows.enabled and not choices:
            shuffle = seed if trained else None  # (long_documents: training order)
            return convert_windowed(
                examples,
                tokenizer,
                max_seq_length,
                labels,
                windows,
                info,
                source,
                shuffle,
                spec.multi_label,
            )
        if choices:
            return convert_multiple_choice(examples, tokenizer, max_seq_length, choices, info)
        return convert_examples(examples, tokenizer, max_seq_length, labels, info, spec.multi_label)

    part = f"{split}-{held_out.part}" if held_out else split
    base = os.path.join(cache_dir, f"{spec.name}-{part}")
    path, count, reused = cached_features(base, key, build, info)
    return TaskFeatures(
        spec.name,
        part,
        path,
        count,
        info["max_seq_length"],
        info["num_choices"],
        info["regression"],
        bool(info.get("text_pair")),
        info,
        reused,
        len(labels) if spec.multi_label else 0,
    )
