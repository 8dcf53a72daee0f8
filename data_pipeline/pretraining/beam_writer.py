"""create_pretraining_data on Apache Beam: the local writer's shards, byte for byte, written
by a Beam pipeline, so that corpora beyond one machine run on Dataflow, Flink or Spark (and
small ones on DirectRunner).

    python -m data_pipeline.pretraining.create_pretraining_data --runner beam \\
        --input_file 'corpus/*.txt' --output_dir data/pretrain --spm_model_file 30k.model \\
        [every setting of the local writer: --max_seq_length, --dupe_factor, ...] \\
        [--beam_runner DirectRunner|DataflowRunner|FlinkRunner|SparkRunner] \\
        [--beam_options '--direct_num_workers=2 --direct_running_mode=multi_processing']

Apache Beam is optional and lives in its own venv (requirements-beam.txt, `make
install-beam`): apache-beam 2.77 needs protobuf<7, the main stack's sentencepiece needs 7.
This module imports it at its top; create_pretraining_data imports this module only for
`--runner beam` (without Beam: a one-line error saying where to get it).

`--beam_runner` (default DirectRunner) picks the runner; `--beam_options` is one string of
Beam pipeline options passed through unchanged (split like a shell command line), e.g. for
Dataflow `--project=P --region=R --temp_location=gs://B/tmp --extra_package=dist/X.tar.gz`
(the workers need this package; build it with `python -m build --sdist`). `--num_workers`,
`--num_tasks` and `--task_index` belong to the local writer and are refused with `--runner
beam`: the runner spreads the shards over its workers.

Why Beam: it is the TF ecosystem's engine for data beyond one machine (TFDS, seqio, TFX);
the same pipeline runs locally and on a cluster, which schedules, retries and scales it.

The pipeline is the local writer's job, one shard per element:

    Create((shard, its blocks) for every shard) → Reshuffle → WriteShard → ToList → WriteMeta

- WriteShard is the local writer's per-shard work, from the same functions
  (`shards.start_shard`, `block_examples`, `shard_stats`, `stats_text`):
  the shard's blocks (block b → shard b mod num_output_shards) in block order, each block
  part's instances from its own seeded generator, the masker's calibration reset at the
  shard's start. A shard's bytes are therefore a pure function of the input bytes and the
  settings, whichever worker writes it, in whatever order, however often (a retried
  bundle writes the same bytes again). The shard is one element, not one per block,
  because the masker's calibration carries from block to block within a shard.
- Files go through `apache_beam.io.filesystems.FileSystems` (local paths, gs://, s3://,
  hdfs:// with Beam's extras): the shard is streamed to `NAME.tmp-<unique>`, its stats to
  `stats/NAME.json.tmp-<unique>`, then the shard and then its stats are renamed into place,
  as the local writer does. The unique suffix keeps two attempts at one shard (a retry
  beside a straggler) from writing into one file. A failed write (a full disk) removes
  both temporaries and is one line naming the shard (`atomic.write_failure`: Beam
  re-raises a step's error with the step's name appended to its first argument, which an
  errno-style OSError cannot take).
- WriteMeta gets every shard's statistics (as read back from their JSON, in shard order)
  and writes meta_data.json last (temporary name, then rename) with
  `meta_data.job_meta_data` and `atomic.json_text`: the same bytes. No instances at all is
  an error and no meta_data.json, as in the local writer.

Memory per worker: one block part × dupe_factor for each shard it writes at a time (the
instances of a part are encoded and written before the next part is read), whatever the
corpus or shard size; plus the runner's own overhead and its write buffer. Parallelism is
at most `--num_output_shards`: ask for at least as many shards as workers.

Resume: a shard whose file and stats file both exist, with this job's fingerprint, is
skipped (its stats are read back); a shard of other inputs or settings is an error; every
other shard is written. So re-running an interrupted pipeline finishes it, and a complete
one rewrites only meta_data.json (same bytes). Local and Beam runs of one job may take over
from each other. For a local `--output_dir`, the driver holds
`data_pipeline.io.locks.output_lock` on it for the whole run (one job per directory, as the
local writer), removes temporary files that killed attempts left, and refuses shard files
of another job; on a remote one, no lock exists: start one writer per directory.

The driver lists the input files, plans the blocks and reads each input once for the job's
fingerprint (its bytes' CRC-32C, `fingerprint.py`), and the workers read their byte
ranges, through `data_pipeline.io.filesystem`: local paths (every worker must see them: a
shared mount) or URLs, which in this TensorFlow-free environment go through Beam's own
FileSystems (`data_pipeline.io.beam_files`; gs:// needs apache-beam[gcp]). The SentencePiece
model travels to the workers inside the pipeline. With `--zh_whole_word_mask` every worker
needs jieba (requirements-beam.txt; on a cluster, in the workers' image or packages), the
same version and dictionary as the driver's: a worker whose segmenter differs refuses to
write (its words, and so the bytes, would differ under the same fingerprint). On
Dataflow, Flink and Spark nothing here has been run: only DirectRunner (Beam 2.77 tries
its Prism engine first and falls back to the FnApiRunner when Prism cannot be fetched, as
offline here; the bytes are the same either way).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import shlex
import tempfile
import time
import uuid

from data_pipeline import documents as documents_lib
from data_pipeline.io.atomic import json_text, write_failure
from data_pipeline.io.filesystem import is_url
from data_pipeline.io.locks import output_lock
from data_pipeline.pretraining import chinese_words, shards
from data_pipeline.pretraining.data_config import META_FILE, DataConfig
from data_pipeline.pretraining.fingerprint import check_existing, check_fingerprint, job_fingerprint
from data_pipeline.pretraining.instances import InstanceStats
from data_pipeline.pretraining.meta_data import job_meta_data
from data_pipeline.records import frame_records

_LOGGING_DISABLED = logging.root.manager.disable
try:
    logging.disable(logging.WARNING)  # its import warns about GCP clients we do not use
    import apache_beam as beam
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions
except ImportError as e:
    raise ImportError(
        f"--runner beam needs Apache Beam ({e}): run it with the Python of the Beam venv "
        f"(make install-beam; requirements-beam.txt: apache-beam needs protobuf<7, this stack 7)"
    ) from None
finally:
    logging.disable(_LOGGING_DISABLED)

RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner")


@dataclasses.dataclass(frozen=True)
class BeamSettings:
    """Where the pipeline runs: a Beam runner and pass-through pipeline options."""

    runner: str = "DirectRunner"
    options: tuple[str, ...] = ()

    def __post_init__(self):
        if self.runner not in RUNNERS:
            raise ValueError(f"--beam_runner={self.runner} is not one of {', '.join(RUNNERS)}")
        if any(o == "--runner" or o.startswith("--runner=") for o in self.options):
            raise ValueError("give the runner with --beam_runner, not in --beam_options")

    @classmethod
    def from_flags(cls, runner: str, options: str) -> BeamSettings:
        return cls(runner, tuple(shlex.split(options or "")))

    def pipeline_options(self) -> PipelineOptions:
        return PipelineOptions([f"--runner={self.runner}", *self.options])


def _say(text: str) -> None:
    """A progress line (on a cluster: in the worker's log)."""
    print(f"[create_pretraining_data] {text}", flush=True)


def _join(*parts: str) -> str:
    return FileSystems.join(*parts)


def _write_bytes(path: str, data: bytes) -> None:
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)
        _sync(f)


def _sync(f) -> None:
    """fsync a local file before its rename (as the local writer); no-op elsewhere."""
    try:
        f.flush()
        os.fsync(f.fileno())
    except (OSError, AttributeError):  # io.UnsupportedOperation is an OSError
        pass


def _read_json(path: str):
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return json.load(io.TextIOWrapper(f, encoding="utf-8"))


def _rename(source: str, target: str) -> None:
    FileSystems.rename([source], [target])


class WriteShard(beam.DoFn):
    """(shard, its blocks) → (shard, stats): writes the shard and its stats file unless
    they are complete already (then reads the stats back)."""

    def __init__(
        self, config: DataConfig, fingerprint: str, tokenizer_bytes: bytes, segmenter=None
    ):
        self.config = config
        self.fingerprint = fingerprint
        # the SentencePiece model or vocab.txt: workers may not see the driver's path
        self.tokenizer_bytes = tokenizer_bytes
        self.segmenter = segmenter  # the driver's chinese_words.identity(), or None
        self.maker = None

    def setup(self):
        if self.segmenter is not None and chinese_words.identity() != self.segmenter:
            raise ValueError(
                f"--zh_whole_word_mask: this worker's segmenter {chinese_words.identity()} "
                f"is not the driver's {self.segmenter}; install the same jieba everywhere"
            )
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, self.config.tokenizer.file_name)
            try:
                with open(path, "wb") as f:
                    f.write(self.tokenizer_bytes)
            except OSError as e:  # (the worker's temporary directory)
                raise write_failure(e, path, "the worker cannot load the tokenizer") from None
            worker_config = dataclasses.replace(
                self.config, tokenizer=self.config.tokenizer.with_path(path)
            )
            self.maker = shards.make_instance_maker(worker_config)  # holds the model's bytes

    def process(self, element):
        shard, blocks = element
        config = self.config
        name = config.shard_name(shard)
        path = _join(config.output_dir, name)
        stats_path = _join(config.output_dir, "stats", name + ".json")
        if FileSystems.exists(path) and FileSystems.exists(stats_path):
            stats = check_fingerprint(config, _read_json(stats_path), self.fingerprint)
            _say(f"{name} already complete ({stats['instances']:,} instances)")
            yield shard, stats
            return
        suffix = f".tmp-{uuid.uuid4().hex}"
        read_stats, stats = documents_lib.ReadStats(), InstanceStats()
        count = 0
        shards.start_shard(self.maker)
        writing = path
        try:
            with FileSystems.create(
                path + suffix, compression_type=CompressionTypes.UNCOMPRESSED
            ) as f:
                for block in blocks:
                    for _, examples in shards.block_examples(
                        config, self.maker, block, read_stats, stats
                    ):
                        f.write(frame_records(examples))
                        count += len(examples)
                _sync(f)
            result = shards.shard_stats(config, shard, self.fingerprint, count, read_stats, stats)
            text = shards.stats_text(result)
            writing = stats_path
            _write_bytes(stats_path + suffix, text.encode("utf-8"))
        except BaseException as e:
            for leftover in (path + suffix, stats_path + suffix):
                if FileSystems.exists(leftover):
                    FileSystems.delete([leftover])
            if isinstance(e, OSError) and not isinstance(e.args[0] if e.args else None, str):
                raise write_failure(e, writing, "nothing of this shard was kept") from None
            raise
        _rename(path + suffix, path)
        _rename(stats_path + suffix, stats_path)
        _say(f"{name} written ({count:,} instances)")
        yield shard, json.loads(text)


def write_meta(shard_stats, config, files, tokenizer_sha256, vocab_size):
    """Every shard's (shard, stats) → meta_data.json, written last and atomically. (No
    type hints: Beam would read them as the step's element types.)"""
    stats = [s for _, s in sorted(shard_stats, key=lambda item: item[0])]
    if len(stats) != config.num_output_shards:
        raise RuntimeError(f"got {len(stats)} shards' statistics of {config.num_output_shards}")
    meta = job_meta_data(config, files, stats, tokenizer_sha256, vocab_size)
    path = _join(config.output_dir, META_FILE)
    tmp = path + f".tmp-{uuid.uuid4().hex}"
    try:
        _write_bytes(tmp, json_text(meta).encode("utf-8"))
    except OSError as e:
        if FileSystems.exists(tmp):
            FileSystems.delete([tmp])
        raise write_failure(
            e, path, "the shards are complete: the same command writes it"
        ) from None
    _rename(tmp, path)


def build_pipeline(pipeline, config: DataConfig, blocks, fingerprint, files, tokenizer):
    """Adds the job to `pipeline` (a `beam.Pipeline`)."""
    n = config.num_output_shards
    with open(config.tokenizer.path, "rb") as f:
        tokenizer_bytes = f.read()
    work = [(s, tuple(blocks[s::n])) for s in range(n)]
    segmenter = chinese_words.identity() if config.zh_whole_word_mask else None
    return (
        pipeline
        | "Shards" >> beam.Create(work, reshuffle=False)
        | "Spread" >> beam.Reshuffle()  # one shard per worker (no fusion with Create)
        | "WriteShard" >> beam.ParDo(WriteShard(config, fingerprint, tokenizer_bytes, segmenter))
        | "AllStats" >> beam.combiners.ToList()
        | "WriteMeta"
        >> beam.Map(write_meta, config, files, tokenizer.checksum, tokenizer.vocab_size)
    )


def _remove_temporaries(output_dir: str) -> None:
    """Temporary files of attempts that were killed (only while the directory is ours)."""
    patterns = [
        _join(output_dir, "pretrain-*.tfrecord.tmp-*"),
        _join(output_dir, "stats", "pretrain-*.tfrecord.json.tmp-*"),
        _join(output_dir, META_FILE + ".tmp-*"),
    ]
    stale = [m.path for r in FileSystems.match(patterns) for m in r.metadata_list]
    if stale:
        FileSystems.delete(stale)


@contextlib.contextmanager
def _quiet_direct_runner(settings: BeamSettings):
    """DirectRunner runs in this process and re-raises a step's exception here (the tool
    prints it as one line, as the local writer does): its own log adds only noise (its
    choice between local engines, a traceback of the same error). Other runners keep
    their log (the job's address, workers' errors)."""
    logger = logging.getLogger("apache_beam")
    level = logger.level
    if settings.runner == "DirectRunner":
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def create_pretraining_data_beam(config: DataConfig, settings: BeamSettings) -> dict:
    """Runs the job as a Beam pipeline on `settings.runner` (waiting for it to finish);
    returns the meta data."""
    files = documents_lib.expand_input_files(config.input_file)
    tokenizer = config.tokenizer.build()
    fingerprint = job_fingerprint(config, files, tokenizer.checksum)
    blocks = documents_lib.plan_blocks(files, config.block_size, config.input_format)
    options = settings.pipeline_options()
    remote = is_url(config.output_dir)
    if not remote:
        shards.check_output_dir(config.output_dir)
    with output_lock(config.output_dir, "create_pretraining_data --runner beam"):
        if not remote:
            check_existing(config, fingerprint)
            _remove_temporaries(config.output_dir)
        print(
            f"[create_pretraining_data] {len(files)} files, {len(blocks)} blocks, "
            f"{config.num_output_shards} shards, on Beam's {settings.runner}",
            flush=True,
        )
        start = time.time()
        pipeline = beam.Pipeline(options=options)
        build_pipeline(pipeline, config, blocks, fingerprint, files, tokenizer)
        with _quiet_direct_runner(settings):
            pipeline.run().wait_until_finish()
    meta = _read_json(_join(config.output_dir, META_FILE))
    print(
        f"[create_pretraining_data] {meta['instances']:,} instances in "
        f"{config.num_output_shards} shards → {config.output_dir} "
        f"({time.time() - start:.1f}s this run)",
        flush=True,
    )
    return meta
