"""Unlabelled text for distillation (`--distill_unlabelled_file`): one example a line
(UTF-8; for a sentence-pair task the two texts separated by a tab), appended to a task's
training records.

The teacher labels them (soft targets only: albert_tf.training.distillation), so they are
stored as ordinary training records, a placeholder label id 0 each, their example_index
after the labelled ones: index < `labelled` marks a labelled example. One file holds both
so that training shuffles them together; it is cached beside the training records
(rebuilt, atomically, when those records or the text file change), so a resumed run reads
the same records and a refused one writes nothing.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from data_pipeline.classification.examples import Example
from data_pipeline.io import filesystem

FLAG = "--distill_unlabelled_file"


def read_unlabelled(path: str, pairs: bool) -> list[Example]:
    """The examples of `path`; `pairs`: a line is `text_a<TAB>text_b`. ValueError (one
    line, naming the flag, file and line) for a missing file, invalid UTF-8, an empty
    line, a pair task's line without its tab, or a file without any line."""
    if not filesystem.isfile(path):
        raise ValueError(f"{FLAG}={path}: no such file")
    with filesystem.open(path, "rb") as f:
        raw = f.read()
    examples = []
    for n, line in enumerate(raw.splitlines(), start=1):
        try:
            text = line.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            raise ValueError(f"{FLAG}={path}:{n}: not UTF-8 text") from None
        if not text.strip():
            raise ValueError(f"{FLAG}={path}:{n}: an empty line (one example a line)")
        parts = text.split("\t")
        if pairs and len(parts) != 2:
            raise ValueError(
                f"{FLAG}={path}:{n}: {len(parts)} tab-separated text(s); this sentence-pair "
                f"task needs two, text_a<TAB>text_b"
            )
        a, b = (parts[0], parts[1]) if pairs else (text, None)
        examples.append(Example(f"unlabelled-{n - 1}", a, b, None, n))
    if not examples:
        raise ValueError(f"{FLAG}={path}: no example (an empty file)")
    return examples


def with_unlabelled(train, features: dict, cache_dir: str):
    """`train` (TaskFeatures of the training split) with the unlabelled `features`
    (convert_examples' arrays, label ids 0) appended in one TFRecord file in `cache_dir`:
    (their TaskFeatures, the number of labelled records first)."""
    import hashlib
    import json

    from data_pipeline.io.atomic import write_json
    from data_pipeline.records import (
        AtomicRecordWriter,
        complete_records,
        encode_examples,
        read_records,
    )

    count = len(features["input_ids"])
    flat = {k: np.asarray(v).reshape(count, -1) for k, v in features.items()}
    flat["label_ids"] = np.zeros((count, 1), np.int64)
    flat["example_index"] = np.arange(train.count, train.count + count).reshape(count, 1)
    appended = encode_examples(flat)
    digest = hashlib.sha256()
    with filesystem.open(train.path, "rb") as f:  # (the labelled records, as they are)
        digest.update(f.read())
    for record in appended:
        digest.update(record)
    key = digest.hexdigest()
    path = os.path.join(cache_dir, f"{train.task}-train+unlabelled.tfrecord")
    meta = path[: -len(".tfrecord")] + ".json"
    total = train.count + count
    found = None
    if filesystem.exists(meta) and filesystem.exists(path):
        with filesystem.open(meta) as f:
            found = json.load(f).get("fingerprint")
    if found != key or not complete_records(path, total):
        filesystem.makedirs(cache_dir)
        writer = AtomicRecordWriter(path)
        try:
            writer.write_all(list(read_records(train.path)))
            writer.write_all(appended)
        except BaseException:
            writer.abort()
            raise
        writer.commit()
        write_json(meta, {"fingerprint": key, "count": total}, indent=None, sort_keys=False)
    info = dict(train.info, unlabelled=count)
    combined = dataclasses.replace(
        train, split="train+unlabelled", path=path, count=train.count + count, info=info
    )
    return combined, train.count
