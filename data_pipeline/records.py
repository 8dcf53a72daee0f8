"""Pretraining TFRecord features, declared once: the writer and the reader both use this.

Names are the official ones (the official create_pretraining_data.py's), so records
written here feed the official trainer and records written by the official tool feed ours:

  input_ids, input_mask, segment_ids, token_boundary   int64 [max_seq_length]
  masked_lm_positions, masked_lm_ids                   int64 [max_predictions_per_seq]
  masked_lm_weights                                    float [max_predictions_per_seq]
  next_sentence_labels                                 int64 [1]   (the SOP label)

With dynamic masking the records carry no `masked_lm_*` features: the input pipeline draws
the masks each epoch from `token_boundary`.

Writing does not import TensorFlow (its import alone costs seconds per worker process, more
than the whole job on small corpora): `tf.train.Example` is a small protobuf, encoded here
with numpy for a whole block of instances at once, and TFRecord framing is
length + masked CRC32C (google-crc32c). Tests check the bytes against TensorFlow's parser.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct

import numpy as np

from data_pipeline.io import filesystem
from data_pipeline.io.atomic import naming, write_json

INT_FEATURES = ("input_ids", "input_mask", "segment_ids", "token_boundary")
MLM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
LABEL_FEATURE = "next_sentence_labels"


def feature_lengths(
    max_seq_length: int, max_predictions_per_seq: int, dynamic_masking: bool = False
) -> dict[str, int]:
    """Feature name → fixed length, in the (sorted) order written to every record."""
    lengths = {name: max_seq_length for name in INT_FEATURES}
    lengths[LABEL_FEATURE] = 1
    if not dynamic_masking:
        lengths.update({name: max_predictions_per_seq for name in MLM_FEATURES})
    return dict(sorted(lengths.items()))


def parse_spec(
    max_seq_length: int,
    max_predictions_per_seq: int,
    dynamic_masking: bool = False,
    with_token_boundary: bool = True,
):
    """`tf.io.parse_example` spec for records of `feature_lengths`. `with_token_boundary`
    False reads records of the official tool before it had that feature."""
    import tensorflow as tf

    spec = {}
    for name, length in feature_lengths(
        max_seq_length, max_predictions_per_seq, dynamic_masking
    ).items():
        if name == "token_boundary" and not with_token_boundary:
            continue
        dtype = tf.float32 if name == "masked_lm_weights" else tf.int64
        spec[name] = tf.io.FixedLenFeature([length], dtype)
    return spec


# --- protobuf encoding -------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL_VARINTS = [_varint(n) for n in range(1 << 14)]


def _len_prefix(n: int) -> bytes:
    return _SMALL_VARINTS[n] if n < (1 << 14) else _varint(n)


def _packed_varints(values: np.ndarray) -> tuple[bytes, np.ndarray]:
    """[R, L] non-negative ints → (bytes of every row's varints, row byte offsets [R+1])."""
    values = np.asarray(values, np.uint64)
    top = int(values.max()) if values.size else 0
    if top >= (1 << 35):
        raise ValueError(f"feature value {top} too large for this encoder (>= 2**35)")
    width = max(1, (top.bit_length() + 6) // 7)  # bytes of the largest value
    nbytes = np.ones(values.shape, np.int64)
    for j in range(1, width):
        nbytes += values >= (1 << (7 * j))
    j = np.arange(width)
    groups = ((values[..., None] >> (np.uint64(7) * j.astype(np.uint64))) & np.uint64(0x7F)).astype(
        np.uint8
    )  # [R, L, width]
    groups |= ((j < nbytes[..., None] - 1) * 0x80).astype(np.uint8)
    stream = groups[j < nbytes[..., None]].tobytes()
    offsets = np.zeros(values.shape[0] + 1, np.int64)
    np.cumsum(nbytes.sum(axis=1), out=offsets[1:])
    return stream, offsets


def _row_payloads(values: np.ndarray) -> list[bytes]:
    """Packed Int64List/FloatList payload of each row of [R, L] values."""
    rows, length = values.shape
    if values.dtype.kind == "f":
        raw, step = values.astype("<f4").tobytes(), 4 * length
    elif values.size and values.min() < 0:
        raise ValueError("negative feature values cannot be written (int64 varints)")
    elif values.size == 0 or values.max() < 0x80:  # one byte per value
        raw, step = values.astype(np.uint8).tobytes(), length
    else:
        raw, offsets = _packed_varints(values)
        offsets = offsets.tolist()
        return [raw[offsets[r] : offsets[r + 1]] for r in range(rows)]
    return [raw[r * step : (r + 1) * step] for r in range(rows)]


def _entry_head(key: bytes, kind_tag: int, payload_length: int) -> bytes:
    """Bytes before the payload of one map entry {key: Feature{kind: List{packed}}}."""
    # protobuf omits an empty packed field (an empty list is 0 bytes): so do we.
    packed = b"\x0a" + _len_prefix(payload_length) if payload_length else b""
    inner = len(packed) + payload_length
    feature = 1 + len(_len_prefix(inner)) + inner
    key_part = b"\x0a" + _len_prefix(len(key)) + key
    entry = len(key_part) + 1 + len(_len_prefix(feature)) + feature
    return (
        b"\x0a"
        + _len_prefix(entry)
        + key_part
        + b"\x12"
        + _len_prefix(feature)
        + bytes((kind_tag,))
        + _len_prefix(inner)
        + packed
    )


def encode_examples(features: dict[str, np.ndarray]) -> list[bytes]:
    """Serialized `tf.train.Example`s for a batch: {name: [R, length] array} (ints for
    Int64List, floats for FloatList) → R byte strings, equal to protobuf's deterministic
    serialization. Features are written in sorted name order: equal inputs, equal bytes."""
    columns = []
    for name in sorted(features):
        values = np.asarray(features[name])
        kind_tag = 0x12 if values.dtype.kind == "f" else 0x1A
        key = name.encode()
        payloads = _row_payloads(values)
        heads = {}
        column = []
        for p in payloads:
            head = heads.get(len(p))
            if head is None:
                head = heads[len(p)] = _entry_head(key, kind_tag, len(p))
            column.append(head + p)
        columns.append(column)
    bodies = [b"".join(parts) for parts in zip(*columns)]
    return [b"\x0a" + _len_prefix(len(body)) + body for body in bodies]


# --- TFRecord framing --------------------------------------------------------------------


def _masked_crc(data: bytes) -> int:
    import google_crc32c

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    """One TFRecord: uint64 length, masked CRC32C of the length, data, masked CRC32C."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", _masked_crc(header))
        + data
        + struct.pack("<I", _masked_crc(data))
    )


def frame_records(records: list[bytes]) -> bytes:
    """The TFRecord file bytes of `records`, in order."""
    return b"".join(frame_record(r) for r in records)


class AtomicRecordWriter:
    """Writes TFRecords to `path + '.tmp'` and renames to `path` on `commit()`: a reader
    (or a resumed run) never sees a truncated shard. Without commit (an exception, a kill)
    the temporary file is removed or left to be replaced by the next run. The temporary
    file is created new (`filesystem.open_new`: never through a planted link); a failing
    write (a full disk) is an OSError naming `path`."""

    def __init__(self, path: str):
        self.path = path
        self.tmp = path + ".tmp"
        self.count = 0
        with naming(self.path):
            self._f = filesystem.open_new(self.tmp, "wb")

    def write_all(self, records: list[bytes]) -> None:
        with naming(self.path):
            self._f.write(frame_records(records))
        self.count += len(records)

    def commit(self) -> None:
        with naming(self.path):
            self._f.flush()
            if not filesystem.is_url(self.path):
                os.fsync(self._f.fileno())
            self._f.close()
        filesystem.replace(self.tmp, self.path)

    def abort(self) -> None:
        if not self._f.closed:
            with contextlib.suppress(OSError):  # the write error being reported matters
                self._f.close()
        if filesystem.exists(self.tmp):
            filesystem.remove(self.tmp)


def read_records(path: str):
    """Yields the data of each TFRecord in `path`, checking both CRCs (pure Python; for
    tests and tools that must not import TensorFlow; URLs load it). A bad record is a
    ValueError of one line naming the file, the record's number and its byte offset."""
    with filesystem.open(path, "rb") as f:
        n = offset = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise ValueError(
                    f"{path}: record {n} is truncated (at byte {offset}: "
                    f"{len(header)} of its 12 header bytes)"
                )
            length, crc = struct.unpack("<QI", header)
            if _masked_crc(header[:8]) != crc:
                raise ValueError(f"{path}: record {n}: corrupt length")
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise ValueError(
                    f"{path}: record {n} is truncated (at byte {offset}: {len(data)} of its "
                    f"{length} data bytes, {len(footer)} of 4 CRC bytes)"
                )
            if _masked_crc(data) != struct.unpack("<I", footer)[0]:
                raise ValueError(f"{path}: record {n}: corrupt or truncated data")
            yield data
            n += 1
            offset += 16 + length


# ----------------------------------------------------------------------------- task-feature cache
def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with filesystem.open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(source_file: str, tokenizer, **settings) -> str:
    payload = {
        "source_sha256": _sha256(source_file),
        "spm_sha256": tokenizer.checksum,
        "do_lower_case": tokenizer.do_lower_case,
        **settings,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def complete_records(record_path: str, count: int) -> bool:
    """Whether `record_path` is exactly `count` whole, intact TFRecords: both CRCs of each
    checked (`read_records`), so that a cache with one flipped bit is rebuilt here rather
    than failing as tf.data's DataLossError in the middle of training or evaluation."""
    records = 0
    try:
        for _ in read_records(record_path):
            records += 1
    except ValueError:
        return False
    return records == count


def cached_features(path: str, key: str, build, info: dict | None = None) -> tuple[str, int, bool]:
    """`path`.tfrecord for fingerprint `key`: reused when `path`.json holds the same key and
    the file holds that many whole, intact records (`complete_records`), else rebuilt from `build()`
    (→ feature arrays) atomically. `info` (filled by `build`, e.g. truncation counts) is
    stored in `path`.json and, on reuse, read back into `info`.
    Returns (tfrecord path, number of records, reused?)."""
    record_path, meta_path = path + ".tfrecord", path + ".json"
    if filesystem.exists(record_path) and filesystem.exists(meta_path):
        with filesystem.open(meta_path) as f:
            meta = json.load(f)
        if meta.get("fingerprint") == key:
            if complete_records(record_path, meta["count"]):
                if info is not None:
                    info.update(meta.get("info", {}))
                return record_path, meta["count"], True
            # Records that do not match their metadata (a copy cut short, a full disk, a
            # flipped bit) are rebuilt rather than trusted: tf.data would fail on them
            # mid-training.
            print(
                f"note: {record_path} does not hold the {meta['count']:,} intact records its "
                f"metadata says: rebuilding",
                flush=True,
            )
    features = build()
    count = len(next(iter(features.values())))
    flat = {
        k: (v.reshape(count, -1) if v.ndim > 1 else v.reshape(count, 1))
        for k, v in features.items()
    }
    flat["example_index"] = np.arange(count, dtype=np.int64).reshape(count, 1)
    filesystem.makedirs(os.path.dirname(record_path) or ".")
    writer = AtomicRecordWriter(record_path)
    try:
        writer.write_all(encode_examples(flat))
    except BaseException:
        writer.abort()
        raise
    writer.commit()
    write_json(
        meta_path,
        {
            "fingerprint": key,
            "count": count,
            "info": info or {},
            "shapes": {k: list(v.shape[1:]) for k, v in features.items()},
        },
        indent=None,
        sort_keys=False,
    )
    return record_path, count, False


def record_dataset(
    record_path: str,
    batch_size: int,
    parse,
    is_training: bool = False,
    seed: int | None = None,
    input_context=None,
    drop_remainder: bool = True,
    length_buckets=None,
    sequence_features=(),
    max_seq_length: int | None = None,
):
    """Task-feature TFRecords → batches: sharded by the input context, shuffled and
    repeated for training (always full batches then), parsed batch-wise by `parse`. With
    `length_buckets`, the parsed examples are regrouped into batches of similar length,
    their `sequence_features` ([..., max_seq_length]) cut to the batch's bucket
    (data_pipeline.length_buckets)."""
    import tensorflow as tf

    ds = tf.data.TFRecordDataset(record_path)
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        ds = ds.shuffle(10_000, seed=seed, reshuffle_each_iteration=True).repeat()
    full = drop_remainder or is_training
    ds = ds.batch(batch_size, drop_remainder=full)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    if length_buckets is None:
        return ds.prefetch(tf.data.AUTOTUNE)
    from data_pipeline.length_buckets import length_bucketed

    return length_bucketed(
        ds.unbatch(), batch_size, max_seq_length, sequence_features, length_buckets, full
    )
