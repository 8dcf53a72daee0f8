"""Which tokenizer a checkpoint was trained with, wherever that is recorded, and the check
that a fine-tuning run tokenizes with that one.

A model's word embeddings belong to one vocabulary: fine-tuning it with another
SentencePiece model of the same size runs without error and learns from ids that mean
other pieces. So every kind of `--init_checkpoint` that can say which tokenizer it was
trained with does, and fine-tuning compares (kind and sha256 of the file):

- a run's checkpoints (run_pretraining, run_classifier, run_squad): the run's
  run_config.json (`RunRecord`: its identity, or for older files the records'
  meta_data.json tokenizer it copied);
- an encoder export (`export_encoder`) and a `convert` output whose source ships its
  vocabulary: `tokenizer.json` beside the checkpoint ({"kind", "file", "sha256",
  "source"}), this module's file;
- a fine-tuned model directory: its own spm.model / vocab.txt (task.json names it);
- an ONNX export's directory (`albert_tf.serving.onnx_export`): tokenizer.json beside the
  copied vocabulary, which its runner (`albert_tf.serving.onnx_predict`) tokenizes with.

A plain checkpoint (official TF1 weights, a hand-made one) records nothing and is not
checked.
"""

from __future__ import annotations

import hashlib
import json
import os

from data_pipeline.io import filesystem

TOKENIZER_RECORD_FILE = "tokenizer.json"
NAMES = {"sentencepiece": "SentencePiece model", "wordpiece": "WordPiece vocab.txt"}


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with filesystem.open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_tokenizer_record(directory: str, record: dict) -> str:
    """`directory`/tokenizer.json from `record` ({"kind", "sha256", "file"?, "source"?});
    returns its path."""
    from data_pipeline.io.atomic import write_json

    path = os.path.join(directory, TOKENIZER_RECORD_FILE)
    write_json(path, record)
    return path


def file_record(path: str, kind: str, source: str | None = None) -> dict:
    """The record of a tokenizer file: {"kind", "file" (base name), "sha256", "source"}."""
    return {
        "kind": kind,
        "file": os.path.basename(path),
        "sha256": file_sha256(path),
        "source": source or path,
    }


def read_tokenizer_record(directory: str) -> dict | None:
    """The record of `directory`/tokenizer.json ({"kind", "sha256", "file", ...}), or None
    when there is none; ValueError (one line naming the file) when it is not a JSON object
    with a sha256."""
    path = os.path.join(directory, TOKENIZER_RECORD_FILE)
    if not filesystem.isfile(path):
        return None
    with filesystem.open(path) as f:
        try:
            record = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    if not isinstance(record, dict) or not record.get("sha256"):
        raise ValueError(f"{path}: not a tokenizer record (no sha256)")
    return record


def recorded_in(directory: str) -> tuple[str, dict] | None:
    """(where, {"kind", "sha256"}) recorded in one directory (its task.json's vocabulary,
    tokenizer.json, run_config.json), or None."""
    from albert_tf.checkpoints.run_record import RunRecord
    from albert_tf.checkpoints.task_info import TASK_FILE, TaskInfo

    if filesystem.isfile(os.path.join(directory, TASK_FILE)):
        spec = TaskInfo.read(directory).tokenizer()
        if spec is not None:
            return spec.path, {"kind": spec.kind, "sha256": file_sha256(spec.path)}
    record_path = os.path.join(directory, TOKENIZER_RECORD_FILE)
    if filesystem.isfile(record_path):
        with filesystem.open(record_path) as f:
            try:
                record = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{record_path}:{e.lineno}: invalid JSON: {e.msg}") from None
        if isinstance(record, dict) and record.get("sha256"):
            return record_path, record
    run = RunRecord.read(directory)
    if run is not None and isinstance(run.identity.tokenizer, dict):
        if run.identity.tokenizer.get("sha256"):
            return run.describe(), run.identity.tokenizer
    return None


def recorded_tokenizer(checkpoint_prefix: str) -> tuple[str, dict] | None:
    """(where it is recorded, {"kind", "sha256", ...}) of the tokenizer the checkpoint at
    `checkpoint_prefix` was trained with: looked up in its directory, then in the parent
    (a run's output directory above `checkpoints/` and `best/`); None when nothing
    records one."""
    prefix = checkpoint_prefix
    here = os.path.dirname(prefix if filesystem.is_url(prefix) else os.path.abspath(prefix))
    for directory in dict.fromkeys((here, os.path.dirname(here))):
        found = recorded_in(directory)
        if found is not None:
            return found
    return None


def check_tokenizer(init_checkpoint: str, tokenizer_record: dict, given: str) -> None:
    """ValueError (one line naming both files and their sha256 prefixes) unless the
    tokenizer `tokenizer_record` ({"kind", "sha256"} of the tokenizer given as `given`,
    e.g. "--spm_model_file=30k.model") is the one `init_checkpoint` records; nothing
    recorded: no check."""
    from albert_tf.checkpoints.own import resolve_checkpoint

    found = recorded_tokenizer(resolve_checkpoint(init_checkpoint))
    if found is None:
        return
    where, recorded = found
    kind, sha = recorded.get("kind", "sentencepiece"), recorded.get("sha256")
    now_kind, now_sha = tokenizer_record["kind"], tokenizer_record["sha256"]
    if kind != now_kind:
        raise ValueError(
            f"--init_checkpoint={init_checkpoint} was trained with a {NAMES.get(kind, kind)} "
            f"({where}), but {given} is a {NAMES.get(now_kind, now_kind)}"
        )
    if sha and sha != now_sha:
        raise ValueError(
            f"--init_checkpoint={init_checkpoint} was trained with a {NAMES.get(kind, kind)} "
            f"of sha256 {sha[:16]}... ({where}), but {given} has sha256 {now_sha[:16]}...: "
            f"give the model's own vocabulary"
        )
