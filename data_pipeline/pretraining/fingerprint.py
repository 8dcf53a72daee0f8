"""The job's identity, and what a re-run of a pretraining-data job may reuse.

A shard's statistics file records the fingerprint of the job that wrote it. A re-run skips
a complete shard only when that fingerprint is its own, and refuses an output directory
holding shards of another job (other settings, tokenizer, segmenter or inputs) with one
line: mixing them would feed a reader both.

The inputs enter the fingerprint by content: each file's path, size and the CRC-32C of all
its bytes (google-crc32c, the checksum TFRecord framing already uses). An input edited in
place, to the same size and with its modification time put back, is therefore another job
(its shards are not reported complete), and a file merely touched or copied with new
times is the same job (it resumes). Why all the bytes rather than size + modification
time + a hash of the head and tail: that cheaper key misses an edit in the middle whose
time was put back, and refuses the resume of a long job whose inputs were only touched or
copied. CRC-32C runs at memory speed, an order of magnitude faster than sha256, so reading
the inputs once more costs a small fraction of the job, which reads them too. It detects
accidental change, which is what a resume must not miss; it is no defence against a
crafted collision.
"""

from __future__ import annotations

import hashlib
import json
import os

from data_pipeline.io import filesystem
from data_pipeline.pretraining import chinese_words
from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.tokenization.spec import SENTENCEPIECE

CHUNK = 1 << 20


def content_crc32c(path: str) -> str:
    """The CRC-32C of every byte of `path` (local or a URL), as 8 hex digits."""
    import google_crc32c

    checksum = google_crc32c.Checksum()
    with filesystem.open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            checksum.update(chunk)
    return checksum.hexdigest().decode()


def input_identity(path: str, local: str | None = None) -> list:
    """[path (absolute when local), size, CRC-32C of the bytes] of input `path`; `local`:
    a local copy of it to read instead (the writer's staging of a URL)."""
    read = local or path
    name = path if filesystem.is_url(path) else os.path.abspath(path)
    return [name, filesystem.getsize(read), content_crc32c(read)]


def job_fingerprint(
    config: DataConfig, files: list[str], tokenizer_sha256: str, local_files=None
) -> str:
    """The job's identity: settings (tokenizer kind and file among them), the inputs by
    content (`input_identity`; `local_files`: local copies of `files` to read, in order),
    the tokenizer file's sha256, and the Chinese word segmenter when it is used."""
    settings = config.settings()
    settings.pop("output_dir")
    settings["input"] = [
        input_identity(f, local)
        for f, local in zip(files, local_files or [None] * len(files), strict=True)
    ]
    if config.tokenizer.kind == SENTENCEPIECE:
        settings["spm_sha256"] = tokenizer_sha256
    else:
        settings["tokenizer"] = {"kind": config.tokenizer.kind, "sha256": tokenizer_sha256}
    if config.zh_whole_word_mask:
        settings["segmenter"] = chinese_words.identity()
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _other_job(config: DataConfig, shard: str, other, fingerprint: str) -> ValueError:
    return ValueError(
        f"{config.output_dir} already holds {shard} made from other inputs or settings "
        f"(fingerprint {other} != {fingerprint}); use a new --output_dir or delete it"
    )


def check_fingerprint(config: DataConfig, stats: dict, fingerprint: str) -> dict:
    """A complete shard's `stats`, if they were made by this job; else a ValueError."""
    if stats.get("fingerprint") != fingerprint:
        raise _other_job(config, stats.get("shard"), stats.get("fingerprint"), fingerprint)
    return stats


def check_existing(config: DataConfig, fingerprint: str) -> None:
    """Refuses an output_dir holding shards of another job: complete shards made with other
    inputs or settings (any shard count: `num_output_shards` is part of the fingerprint),
    or shard files that are not this job's. Mixing them would feed a reader both."""
    names = {config.shard_name(s) for s in range(config.num_output_shards)}
    stats_dir = os.path.join(config.output_dir, "stats")
    for entry in sorted(filesystem.listdir(stats_dir)):
        if not entry.endswith(".tfrecord.json"):
            continue
        with filesystem.open(os.path.join(stats_dir, entry)) as f:
            other = json.load(f).get("fingerprint")
        if other != fingerprint:
            raise _other_job(config, entry[:-5], other, fingerprint)
    for entry in sorted(filesystem.listdir(config.output_dir)):
        if entry.endswith(".tfrecord") and entry not in names:
            raise ValueError(
                f"{config.output_dir} already holds {entry}, which is not a shard of this "
                f"job ({config.num_output_shards} shards); use a new --output_dir or "
                f"delete it"
            )
