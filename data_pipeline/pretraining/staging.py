"""The data writer's local staging for URLs: create_pretraining_data with inputs, a
SentencePiece model or an output directory on gs://, s3://, hdfs:// or ram://.

The writer's worker processes never import TensorFlow (speed; they are forked), and
TensorFlow's file systems are what reads and writes URLs. So the workers only ever see
local files, and the parent process moves bytes across:

- remote input files and the SentencePiece model are downloaded once into the staging
  directory before the workers start. Workers read their blocks with seeks into the files
  (documents.py), which on an object store would be one ranged request per seek; a
  download is one streamed read per file, and ram:// (the test file system) is visible to
  this process only, so a forked worker could not read it anyway;
- with a remote output directory, workers write shards and their statistics into the
  staging directory exactly as into a local output directory (temporary name, fsync,
  rename: atomicity and the crash behaviour are unchanged), and the parent copies each
  finished shard up, its statistics file after it. A shard counts as complete only when
  both exist (`shards.load_stats`), and the resume check reads the remote directory, so an
  interrupted job resumes from what reached the bucket. meta_data.json is written last,
  straight to the output directory, when every shard is there.

Local disk needs room for the remote inputs of the job and for the shards being written
at once (each is removed locally once copied). The staging directory is a fresh
temporary directory (under $TMPDIR) unless one is given, and is removed at the end.
Nothing here imports TensorFlow unless a path is a URL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator

from data_pipeline.io import filesystem


def needed(config, files: list[str]) -> bool:
    """Whether the job touches a URL (its inputs, tokenizer file or output directory)."""
    paths = [config.output_dir, config.tokenizer.path, *files]
    return any(filesystem.is_url(p) for p in paths)


@dataclasses.dataclass
class Staging:
    """Where the workers of one job read and write. `config` is the job's config with the
    tokenizer file and output directory the workers use (local), `files` the inputs
    they read (local copies of remote ones, in the same order)."""

    root: str
    output_dir: str  # the user's output directory (a URL or a local path)
    config: object
    files: list[str]

    def publish(self, shard_name: str) -> None:
        """Copies a finished shard, then its statistics file, to the output directory and
        removes the local copies (no-op when the output directory is local)."""
        if self.output_dir == self.config.output_dir:
            return
        local_shard = os.path.join(self.config.output_dir, shard_name)
        local_stats = os.path.join(self.config.output_dir, "stats", shard_name + ".json")
        filesystem.copy(local_shard, filesystem.join(self.output_dir, shard_name))
        filesystem.copy(
            local_stats, filesystem.join(self.output_dir, "stats", shard_name + ".json")
        )
        os.remove(local_shard)
        os.remove(local_stats)


@contextlib.contextmanager
def staged(config, files: list[str], root: str | None = None) -> Iterator[Staging]:
    """The staging of a job with URLs (see the module docstring), removed at the end when
    this created it. `root`: a local directory to use (e.g. on a large disk)."""
    own = root is None
    root = tempfile.mkdtemp(prefix="albert-pretraining-data-") if own else root
    try:
        local_files = []
        for i, path in enumerate(files):
            if filesystem.is_url(path):
                local = os.path.join(root, "input", str(i), path.rsplit("/", 1)[-1])
                os.makedirs(os.path.dirname(local), exist_ok=True)
                filesystem.copy(path, local)
                path = local
            local_files.append(path)
        changes = {}
        if filesystem.is_url(config.tokenizer.path):
            spec = config.tokenizer.with_path(os.path.join(root, config.tokenizer.file_name))
            filesystem.copy(config.tokenizer.path, spec.path)
            changes["tokenizer"] = spec
        if filesystem.is_url(config.output_dir):
            changes["output_dir"] = os.path.join(root, "output")
            os.makedirs(os.path.join(changes["output_dir"], "stats"), exist_ok=True)
        yield Staging(root, config.output_dir, dataclasses.replace(config, **changes), local_files)
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
