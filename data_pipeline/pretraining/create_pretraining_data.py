"""Raw text → ALBERT pretraining TFRecords (SOP pairs + n-gram masks) and meta_data.json.

    python -m data_pipeline.pretraining.create_pretraining_data --input_file 'corpus/*.txt' \\
        --output_dir data/pretrain --spm_model_file 30k-clean.model \\
        (or --vocab_file vocab.txt: a WordPiece vocabulary, as the official Chinese models)
        [--max_seq_length 512 --max_predictions_per_seq 20 --dupe_factor 40 ...] \\
        [--num_workers 8] [--num_output_shards 64] [--num_tasks 4 --task_index 0]
        [--runner beam [--beam_runner DataflowRunner] [--beam_options '...']]

`--runner local` (the default) is this module's writer: worker processes on this machine,
`--num_tasks` machines by hand. `--runner beam` writes the same bytes from an Apache Beam
pipeline (DirectRunner, Dataflow, Flink, Spark): see beam_writer.py for its flags.

What it writes is a pure function of the input bytes and the settings (never of
`--num_workers`, `--num_tasks` or timing):
- The corpus is cut into blocks (`--block_size` bytes, at document starts; see
  `documents.py`); block b goes to output shard b mod `--num_output_shards`.
- Every block part has its own random generator, seeded by (random_seed, file index, block,
  part); its instances for all `dupe_factor` passes are shuffled within the part and
  appended to the shard in block order.
- A worker process writes whole shards; task t of `--num_tasks` writes the shards
  s ≡ t (mod num_tasks), so machines each take a disjoint slice and together write exactly
  what one machine would.
- Each shard is written to `NAME.tmp` and renamed when complete, then its statistics go to
  `stats/NAME.json`. A re-run skips complete shards (an interrupted run resumes); settings
  that differ from those of existing shards are refused. When every shard is complete,
  `meta_data.json` sums the statistics (deterministic: no times, no worker counts).
- One job per output directory: the run holds `data_pipeline.io.atomic.output_lock` on it
  from before it looks at existing shards to the end, so a second run started on the same
  directory fails at once (exit 1, naming the first). The `--num_tasks` tasks of one job
  share the directory (a shared lock) and each task index is exclusive. Worker processes
  die with the tool (Linux): a `kill -9` leaves no orphan still writing.

The tokenizer is a SentencePiece model (`--spm_model_file`) or a WordPiece vocab.txt
(`--vocab_file`; with both, the model, as officially: `data_pipeline.tokenization.spec`).
Its kind, file name and sha256 are part of the job's fingerprint (shards of another
tokenizer are refused) and of meta_data.json ("tokenizer"). Whole-word masking takes the
word starts from the tokenizer (`vocab_tables`): pieces with "▁" for SentencePiece,
pieces without "##" for WordPiece. `--zh_whole_word_mask` (off by default, as officially)
also makes each jieba word of Chinese text one unit (`chinese_words.py`; jieba is an
optional dependency); the segmenter's identity (jieba version, dictionary sha256, HMM) is
then part of the fingerprint and of meta_data.json ("zh_whole_word_mask").

Memory is bounded by one block part × dupe_factor per worker, whatever the corpus size.
Nothing here imports TensorFlow (see features.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import multiprocessing
import os
import sys
import time

import numpy as np

from data_pipeline import documents as documents_lib
from data_pipeline.io import filesystem
from data_pipeline.io.atomic import output_lock, write_json
from data_pipeline.records import AtomicRecordWriter, encode_examples, feature_lengths
from data_pipeline.pretraining import chinese_words, staging
from data_pipeline.tokenization.spec import TokenizerSpec
from data_pipeline.pretraining.masking import NgramMasker
from data_pipeline.pretraining.instances import (
    SENTENCE_ORDERS,
    SHORT_SEQ_SCOPES,
    InstanceMaker,
    InstanceOptions,
    InstanceStats,
)

META_FILE = "meta_data.json"
RUNNERS = ("local", "beam")
FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Every setting that determines the output (the official flags and ours)."""

    input_file: str
    output_dir: str
    spm_model_file: str | None = None
    do_lower_case: bool = True
    keep_accents: bool = False
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    ngram: int = 3
    favor_shorter_ngram: bool = True
    do_whole_word_mask: bool = True
    calibrate_ngrams: bool = True
    short_seq_prob: float = 0.1
    short_seq_scope: str = "document"
    dupe_factor: int = 40
    random_seed: int = 12345
    sentence_order: str = "sop"
    dynamic_masking: bool = False
    input_format: str = "auto"
    split_sentences: bool = False
    block_size: int = 1 << 20
    num_output_shards: int = 16
    vocab_file: str | None = None  # WordPiece vocab.txt, instead of spm_model_file
    zh_whole_word_mask: bool = False  # jieba words of Chinese text are whole-word units

    def __post_init__(self):
        TokenizerSpec.from_files(self.spm_model_file, self.vocab_file)
        if self.zh_whole_word_mask:
            if not self.do_whole_word_mask:
                raise ValueError(
                    "--zh_whole_word_mask makes Chinese words whole-word units, but "
                    "--nodo_whole_word_mask masks single tokens; drop one of them"
                )
            chinese_words.load_jieba()  # one line saying how to install it
        if self.spm_model_file and self.vocab_file:  # the model is the tokenizer (official)
            object.__setattr__(self, "vocab_file", None)
        if self.vocab_file and self.keep_accents:
            raise ValueError(
                f"--keep_accents is for SentencePiece models; with --vocab_file="
                f"{self.vocab_file} accents are stripped exactly when --do_lower_case"
            )
        if self.num_output_shards < 1:
            raise ValueError(f"num_output_shards={self.num_output_shards} must be >= 1")
        if self.max_predictions_per_seq > self.max_seq_length:
            raise ValueError(
                f"max_predictions_per_seq={self.max_predictions_per_seq} "
                f"exceeds max_seq_length={self.max_seq_length}"
            )
        self.instance_options()  # validates

    def instance_options(self) -> InstanceOptions:
        return InstanceOptions(
            max_seq_length=self.max_seq_length,
            short_seq_prob=self.short_seq_prob,
            dupe_factor=self.dupe_factor,
            sentence_order=self.sentence_order,
            short_seq_scope=self.short_seq_scope,
        )

    @property
    def tokenizer_kind(self) -> str:
        """ "sentencepiece" or "wordpiece" (`tokenization.spec.tokenizer_kind`)."""
        return "sentencepiece" if self.spm_model_file else "wordpiece"

    @property
    def tokenizer_file(self) -> str:
        """The SentencePiece model or WordPiece vocab.txt."""
        return self.spm_model_file or self.vocab_file

    @property
    def tokenizer_field(self) -> str:
        """The name of the field holding `tokenizer_file`."""
        return "spm_model_file" if self.spm_model_file else "vocab_file"

    def tokenizer(self):
        """The tokenizer of these settings (`TokenizerSpec.build`)."""
        return TokenizerSpec.from_files(
            self.spm_model_file, self.vocab_file, self.do_lower_case, self.keep_accents
        ).build()

    def shard_name(self, shard: int) -> str:
        return f"pretrain-{shard:05d}-of-{self.num_output_shards:05d}.tfrecord"


# --- one shard -------------------------------------------------------------------------------

_WORKER = {}


def _die_with_parent(parent_pid: int) -> None:
    """Linux: this worker process gets SIGKILL when the tool's process dies, so a killed tool
    leaves no orphan writing into the output directory (and holding its lock, inherited
    with fork). Elsewhere a no-op.

    PR_SET_PDEATHSIG fires when the thread that forked us ends: the pool's first workers
    come from the tool's main thread; a replacement for a crashed worker comes from the
    pool's handler thread, which ends with the pool."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before the prctl: no signal will come
        os._exit(1)


def make_instance_maker(config: DataConfig) -> InstanceMaker:
    """The tokenizer, masker and instance maker of `config` (one per worker; the masker's
    calibration state is reset at each shard's start by `start_shard`), with jieba's words
    under `zh_whole_word_mask`."""
    tokenizer = config.tokenizer()
    masker = None
    if not config.dynamic_masking:
        _, _, ordinary = tokenizer.vocab_tables()
        masker = NgramMasker(
            tokenizer.mask_id,
            ordinary,
            config.max_predictions_per_seq,
            config.masked_lm_prob,
            config.ngram,
            config.favor_shorter_ngram,
            config.do_whole_word_mask,
            config.calibrate_ngrams,
        )
    words = chinese_words.ChineseWords(tokenizer) if config.zh_whole_word_mask else None
    return InstanceMaker(tokenizer, config.instance_options(), masker, words)


def start_shard(maker: InstanceMaker) -> None:
    """Call before a shard's first block: the masker's calibration state is per shard, so
    a shard's bytes do not depend on which worker wrote which shards before it."""
    if maker.masker is not None:
        maker.masker.reset()


def block_examples(
    config: DataConfig,
    maker: InstanceMaker,
    block: documents_lib.Block,
    read_stats: documents_lib.ReadStats,
    stats: InstanceStats,
):
    """Yields (documents, serialized tf.train.Examples) for each part of `block`, in order:
    every part's instances from its own generator, seeded by (random_seed, file index,
    block, part). Memory: one part × dupe_factor. Every writer (local, Beam) appends these
    to the shard in block order, after `start_shard`."""
    for part, docs in documents_lib.read_block(
        block, config.block_size, config.split_sentences, read_stats
    ):
        rng = np.random.default_rng([config.random_seed, block.file_index, block.block_index, part])
        before = stats.instances
        features = maker.make(docs, rng, stats)
        yield len(docs), (encode_examples(features) if stats.instances > before else [])


def shard_stats(
    config: DataConfig,
    shard: int,
    fingerprint: str,
    instances: int,
    read_stats: documents_lib.ReadStats,
    stats: InstanceStats,
) -> dict:
    """The statistics of a written shard, as stored in stats/NAME.json."""
    return {
        "shard": config.shard_name(shard),
        "fingerprint": fingerprint,
        "instances": instances,
        "read": dataclasses.asdict(read_stats),
        "instances_detail": dataclasses.asdict(stats),
    }


def stats_text(result: dict) -> str:
    """The text of a stats/NAME.json file (every writer writes these exact bytes)."""
    return json.dumps(result, indent=1, sort_keys=True)


def _init_worker(config: DataConfig, queue, parent_pid: int | None = None) -> None:
    """Per worker process: the tokenizer, masker and instance maker. `parent_pid`: this is
    a pool worker of that process (it dies with it)."""
    if parent_pid is not None:
        _die_with_parent(parent_pid)
    _WORKER.update(config=config, queue=queue, maker=make_instance_maker(config))


def _write_shard(job) -> dict:
    """Writes one shard (all its blocks) and its stats file; returns the stats."""
    shard, blocks, fingerprint = job
    config: DataConfig = _WORKER["config"]
    maker: InstanceMaker = _WORKER["maker"]
    queue = _WORKER["queue"]
    path = os.path.join(config.output_dir, config.shard_name(shard))
    read_stats = documents_lib.ReadStats()
    stats = InstanceStats()
    writer = AtomicRecordWriter(path)
    start_shard(maker)
    try:
        for block in blocks:
            for docs, examples in block_examples(config, maker, block, read_stats, stats):
                writer.write_all(examples)
                if queue is not None:
                    queue.put((0, docs, len(examples)))
            if queue is not None:
                done = (
                    block.end - block.start if not block.compressed else os.path.getsize(block.path)
                )
                queue.put((done, 0, 0))
    except BaseException:
        writer.abort()
        raise
    result = shard_stats(config, shard, fingerprint, writer.count, read_stats, stats)
    stats_path = _stats_path(config, shard)
    tmp = stats_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(stats_text(result))
    writer.commit()
    os.replace(tmp, stats_path)
    return result


def _stats_path(config: DataConfig, shard: int) -> str:
    return os.path.join(config.output_dir, "stats", config.shard_name(shard) + ".json")


# --- the job ---------------------------------------------------------------------------------


def _settings(config: DataConfig) -> dict:
    """The config as a dict, without `vocab_file` when it is unset and without
    `zh_whole_word_mask` when it is off: jobs keep the fingerprints and meta_data.json they
    had before these options existed (they resume)."""
    settings = dataclasses.asdict(config)
    if settings["vocab_file"] is None:
        settings.pop("vocab_file")
    if not settings["zh_whole_word_mask"]:
        settings.pop("zh_whole_word_mask")
    return settings


def _fingerprint(config: DataConfig, files: list[str], tokenizer_sha256: str) -> str:
    """The job's identity: settings (tokenizer kind and file among them), input files and
    sizes, the tokenizer file's sha256, and the Chinese word segmenter when it is used."""
    settings = _settings(config)
    settings.pop("output_dir")
    settings["input"] = [
        (f if filesystem.is_url(f) else os.path.abspath(f), filesystem.getsize(f)) for f in files
    ]
    if config.tokenizer_kind == "sentencepiece":
        settings["spm_sha256"] = tokenizer_sha256
    else:
        settings["tokenizer"] = {"kind": "wordpiece", "sha256": tokenizer_sha256}
    if config.zh_whole_word_mask:
        settings["segmenter"] = chinese_words.identity()
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _check_output_dir(path: str) -> None:
    try:
        filesystem.makedirs(os.path.join(path, "stats"))
        probe = os.path.join(path, f".write-probe{os.getpid()}")
        with filesystem.open(probe, "w") as f:
            f.write("ok")
        filesystem.remove(probe)
    except OSError as e:
        raise OSError(f"output_dir {path!r} is not writable: {e.strerror}") from None


def _load_stats(config: DataConfig, shard: int, fingerprint: str) -> dict | None:
    path = _stats_path(config, shard)
    if not filesystem.exists(path) or not filesystem.exists(
        os.path.join(config.output_dir, config.shard_name(shard))
    ):
        return None
    with filesystem.open(path) as f:
        return check_fingerprint(config, json.load(f), fingerprint)


def check_fingerprint(config: DataConfig, stats: dict, fingerprint: str) -> dict:
    """A complete shard's `stats`, if they were made by this job; else a ValueError."""
    if stats.get("fingerprint") != fingerprint:
        raise ValueError(
            f"{config.output_dir} already holds {stats.get('shard')} made from other "
            f"inputs or settings (fingerprint {stats.get('fingerprint')} != {fingerprint}); "
            f"use a new --output_dir or delete it"
        )
    return stats


def _check_existing(config: DataConfig, fingerprint: str) -> None:
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
            raise ValueError(
                f"{config.output_dir} already holds {entry[:-5]} made from other inputs or "
                f"settings (fingerprint {other} != {fingerprint}); use a new --output_dir "
                f"or delete it"
            )
    for entry in sorted(filesystem.listdir(config.output_dir)):
        if entry.endswith(".tfrecord") and entry not in names:
            raise ValueError(
                f"{config.output_dir} already holds {entry}, which is not a shard of this "
                f"job ({config.num_output_shards} shards); use a new --output_dir or "
                f"delete it"
            )


def meta_data(
    config: DataConfig,
    files: list[str],
    shard_stats: list[dict],
    tokenizer_sha256: str,
    vocab_size: int,
) -> dict:
    """meta_data.json of a complete job: the settings and the sums of every shard's
    statistics (`shard_stats` in shard order). Deterministic: no times, no worker counts.
    "tokenizer" says which tokenizer wrote the ids ({kind, file (base name), sha256});
    SentencePiece jobs also keep the older "spm_model_file" and "spm_sha256".
    "zh_whole_word_mask" (only when on) is the segmenter's identity (`chinese_words`).
    A ValueError when no instances were made (an empty dataset must not look finished)."""
    read = documents_lib.ReadStats()
    made = InstanceStats()
    for s in shard_stats:
        read.add(documents_lib.ReadStats(**s["read"]))
        made.add(InstanceStats(**s["instances_detail"]))
    units = sum(made.ngrams)
    labels = sum(made.labels)
    masked = made.masked_tokens
    settings = _settings(config)
    for key in ("output_dir", "input_file"):
        settings.pop(key)
    meta = {
        "format_version": FORMAT_VERSION,
        "instances": made.instances,
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "dynamic_masking": config.dynamic_masking,
        "sentence_order": config.sentence_order,
        "features": feature_lengths(
            config.max_seq_length, config.max_predictions_per_seq, config.dynamic_masking
        ),
        "shards": [{"file": s["shard"], "instances": s["instances"]} for s in shard_stats],
        "tokenizer": {
            "kind": config.tokenizer_kind,
            "file": os.path.basename(config.tokenizer_file),
            "sha256": tokenizer_sha256,
        },
        "vocab_size": vocab_size,
        "settings": settings,
        "input": {"files": files, **dataclasses.asdict(read)},
        "documents": {
            "documents": made.documents,
            "sentences": made.sentences,
            "empty_sentences": made.empty_sentences,
            "long_sentences_split": made.long_sentences_split,
        },
        "instance_creation": {
            "target_draws": made.target_draws,
            "short_targets": made.short_targets,
            "short_target_fraction": made.short_targets / max(made.target_draws, 1),
            "short_target_instances": made.short_target_instances,
            "single_sentence_chunks_split": made.single_sentence_chunks_split,
            "single_sentence_chunks_dropped": made.single_sentence_chunks_dropped,
            "nsp_random_segments": made.nsp_random_segments,
            "truncated_tokens": made.truncated_tokens,
            "tokens": made.instance_tokens,
        },
        "sentence_order_labels": {
            "0": made.labels[0],
            "1": made.labels[1],
            "fraction_1": made.labels[1] / max(labels, 1),
        },
    }
    if config.tokenizer_kind == "sentencepiece":
        meta["spm_model_file"] = os.path.basename(config.spm_model_file)
        meta["spm_sha256"] = tokenizer_sha256
    if config.zh_whole_word_mask:
        meta["zh_whole_word_mask"] = chinese_words.identity()
    if not config.dynamic_masking:
        meta["masking"] = {
            "masked_tokens": masked,
            "masked_fraction": masked / max(made.instance_tokens, 1),
            "ngram_units": {str(i + 1): c for i, c in enumerate(made.ngrams)},
            "ngram_fraction": [c / max(units, 1) for c in made.ngrams],
            "replacements": {
                "mask": made.replacements[0],
                "random": made.replacements[1],
                "unchanged": made.replacements[2],
            },
            "replacement_fraction": [c / max(masked, 1) for c in made.replacements],
        }
    if meta["instances"] == 0:
        raise ValueError(
            f"no instances were made: {len(files)} input file(s) "
            f"({meta['input']['empty_files']} empty or blank) held "
            f"{meta['documents']['documents']} document(s) with text; no {META_FILE} written"
        )
    return meta


def _progress(start, total_bytes, done_bytes, docs, instances, shards_done, shards_total):
    elapsed = time.time() - start
    rate = instances / max(elapsed, 1e-9)
    eta = (elapsed * (total_bytes - done_bytes) / done_bytes) if done_bytes else float("nan")
    eta_text = "?" if eta != eta else time.strftime("%H:%M:%S", time.gmtime(eta))
    print(
        f"[create_pretraining_data] {done_bytes / max(total_bytes, 1):6.1%} of input, "
        f"{docs:,} documents, {instances:,} instances ({rate:,.0f}/s), "
        f"shards {shards_done}/{shards_total}, ETA {eta_text}",
        flush=True,
    )


def create_pretraining_data(
    config: DataConfig,
    num_workers: int = 1,
    num_tasks: int = 1,
    task_index: int = 0,
    progress_every: float = 10.0,
    staging_dir: str | None = None,
) -> dict:
    """Writes this task's shards (skipping complete ones) and, once every shard of every
    task is complete, meta_data.json. Returns the meta data, or this task's summary.
    Paths may be URLs: the workers then use a local staging directory (`staging.py`;
    `staging_dir`, default a temporary one)."""
    if not 0 <= task_index < num_tasks:
        raise ValueError(f"task_index={task_index} is not in [0, num_tasks={num_tasks})")
    files = documents_lib.expand_input_files(config.input_file)
    tokenizer = config.tokenizer()
    _check_output_dir(config.output_dir)
    with contextlib.ExitStack() as locks:  # held to the end: one job per output directory
        if num_tasks == 1:
            locks.enter_context(output_lock(config.output_dir, "create_pretraining_data"))
        else:  # the job's tasks share the directory; each task index runs once
            what = f"create_pretraining_data task {task_index} of {num_tasks}"
            locks.enter_context(output_lock(config.output_dir, what, shared=True))
            name = f".lock-task-{task_index}"
            locks.enter_context(output_lock(config.output_dir, what, name=name))
        stage = None
        if staging.needed(config, files):
            stage = locks.enter_context(staging.staged(config, files, staging_dir))
        return _create_locked(
            config, files, tokenizer, num_workers, num_tasks, task_index, progress_every, stage
        )


def _create_locked(
    config: DataConfig,
    files,
    tokenizer,
    num_workers,
    num_tasks,
    task_index,
    progress_every,
    stage: staging.Staging | None = None,
) -> dict:
    """create_pretraining_data's work, under the output directory's lock. With `stage`,
    workers read and write its local paths and each finished shard is published."""
    fingerprint = _fingerprint(config, files, tokenizer.checksum)
    _check_existing(config, fingerprint)
    worker_config = stage.config if stage else config
    publish = stage.publish if stage else lambda name: None
    blocks = documents_lib.plan_blocks(
        stage.files if stage else files, config.block_size, config.input_format
    )
    n = config.num_output_shards
    mine = [s for s in range(n) if s % num_tasks == task_index]
    jobs = [
        (s, blocks[s::n], fingerprint) for s in mine if _load_stats(config, s, fingerprint) is None
    ]
    total_bytes = sum(
        os.path.getsize(b.path) if b.compressed else b.end - b.start
        for s, bl, _ in jobs
        for b in bl
    )
    print(
        f"[create_pretraining_data] {len(files)} files, {len(blocks)} blocks, "
        f"{n} shards: {len(mine) - len(jobs)} of this task's {len(mine)} already complete, "
        f"{len(jobs)} to write with {num_workers} worker(s)",
        flush=True,
    )
    start = time.time()
    done = [0, 0, 0]

    def drain(queue, block=False):
        import queue as queue_lib

        while True:
            try:
                item = queue.get(timeout=0.2) if block else queue.get_nowait()
            except queue_lib.Empty:
                return
            for i in range(3):
                done[i] += item[i]
            block = False

    last = start
    results = []
    if jobs and num_workers <= 1:
        import queue as queue_lib

        queue = queue_lib.SimpleQueue()
        _init_worker(worker_config, queue)
        for job in jobs:
            results.append(_write_shard(job))
            publish(results[-1]["shard"])
            drain(queue)
            if time.time() - last >= progress_every:
                last = time.time()
                _progress(start, total_bytes, done[0], done[1], done[2], len(results), len(jobs))
    elif jobs:
        ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        queue = ctx.Queue()
        workers = min(num_workers, len(jobs))
        with ctx.Pool(workers, _init_worker, (worker_config, queue, os.getpid())) as pool:
            pending = [pool.apply_async(_write_shard, (job,)) for job in jobs]
            published = set()
            while not all(p.ready() for p in pending):
                drain(queue, block=True)
                for i, p in enumerate(pending):
                    if stage and i not in published and p.ready() and p.successful():
                        published.add(i)
                        publish(p.get()["shard"])
                if time.time() - last >= progress_every:
                    last = time.time()
                    _progress(
                        start,
                        total_bytes,
                        done[0],
                        done[1],
                        done[2],
                        sum(p.ready() for p in pending),
                        len(jobs),
                    )
            results = [p.get() for p in pending]  # re-raises a worker's error
            for i, p in enumerate(pending):
                if i not in published:
                    publish(p.get()["shard"])
        drain(queue)
    if jobs:
        _progress(start, total_bytes, done[0], done[1], done[2], len(jobs), len(jobs))
    all_stats = [_load_stats(config, s, fingerprint) for s in range(n)]
    if any(s is None for s in all_stats):
        missing = sum(s is None for s in all_stats)
        summary = {
            "complete": False,
            "shards_missing": missing,
            "instances_written": sum(r["instances"] for r in results),
        }
        print(
            f"[create_pretraining_data] task {task_index}/{num_tasks} done; {missing} "
            f"shard(s) of other tasks still missing, so no {META_FILE} yet",
            flush=True,
        )
        return summary
    meta = meta_data(config, files, all_stats, tokenizer.checksum, tokenizer.vocab_size)
    write_json(os.path.join(config.output_dir, META_FILE), meta)
    elapsed = time.time() - start
    print(
        f"[create_pretraining_data] {meta['instances']:,} instances in {n} shards → "
        f"{config.output_dir} ({elapsed:.1f}s this run)",
        flush=True,
    )
    return meta


# --- command line ----------------------------------------------------------------------------


def _define_flags():
    from absl import flags

    f = flags
    f.DEFINE_string("input_file", None, "Input text: comma-separated globs (gzip ok).")
    f.DEFINE_string("output_dir", None, "Where the TFRecord shards and meta_data.json go.")
    f.DEFINE_string(
        "spm_model_file",
        None,
        "SentencePiece model (ALBERT special pieces); or give --vocab_file.",
    )
    f.DEFINE_string(
        "vocab_file",
        None,
        "WordPiece vocab.txt (BERT's basic tokenizer + WordPiece, as the official Chinese "
        "ALBERTs); or give --spm_model_file.",
    )
    f.DEFINE_bool("do_lower_case", True, "Lowercase the text (uncased models).")
    f.DEFINE_bool("keep_accents", False, "Keep combining accents (official: strip).")
    f.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
    f.DEFINE_integer("max_predictions_per_seq", 20, "Maximum masked LM predictions.")
    f.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
    f.DEFINE_integer("ngram", 3, "Maximum n-gram (in words) of a masked unit.")
    f.DEFINE_bool("favor_shorter_ngram", True, "p(n) ∝ 1/n (else ∝ n).")
    f.DEFINE_bool("do_whole_word_mask", True, "Mask whole words (n-grams of words).")
    f.DEFINE_bool(
        "zh_whole_word_mask",
        False,
        "Chinese whole-word masking: each jieba word of Chinese text is one unit, as "
        "Chinese-BERT-wwm and brightmart/albert_zh (needs jieba: pip install -e '.[zh]').",
    )
    f.DEFINE_bool(
        "calibrate_ngrams", True, "Make the realized n-gram mix match p(n) (see masking.py)."
    )
    f.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length.")
    f.DEFINE_enum(
        "short_seq_scope",
        "document",
        SHORT_SEQ_SCOPES,
        "Draw the target length once per document and pass (official) or per instance.",
    )
    f.DEFINE_integer("dupe_factor", 40, "Passes over the input, each with other masks/pairs.")
    f.DEFINE_integer("random_seed", 12345, "Seed of every random draw.")
    f.DEFINE_enum(
        "sentence_order", "sop", SENTENCE_ORDERS, "sop (ALBERT), nsp (BERT) or none (MLM only)."
    )
    f.DEFINE_bool(
        "dynamic_masking",
        False,
        "Write no masks (token_boundary only); the input pipeline masks each epoch.",
    )
    f.DEFINE_enum("input_format", "auto", documents_lib.FORMATS, "Input file format.")
    f.DEFINE_bool(
        "split_sentences",
        False,
        "Split each text line into sentences (one-paragraph-per-line corpora).",
    )
    f.DEFINE_integer("block_size", 1 << 20, "Bytes of input per block (memory bound).")
    f.DEFINE_integer("num_output_shards", 16, "Number of TFRecord shards.")
    f.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes.")
    f.DEFINE_integer("num_tasks", 1, "Machines sharing the job.")
    f.DEFINE_integer("task_index", 0, "This machine's index in [0, num_tasks).")
    f.DEFINE_float("progress_every", 10.0, "Seconds between progress lines.")
    f.DEFINE_enum(
        "runner",
        "local",
        RUNNERS,
        "local: this machine's worker processes; beam: an Apache Beam pipeline "
        "(beam_writer.py; the same bytes).",
    )
    f.DEFINE_string(
        "beam_runner", None, "With --runner beam: DirectRunner (default), DataflowRunner, ..."
    )
    f.DEFINE_string(
        "beam_options", None, "With --runner beam: Beam pipeline options, passed through."
    )
    # Official flags kept so existing command lines run unchanged.
    f.DEFINE_bool("random_next_sentence", False, "Official flag: true means --sentence_order nsp.")
    for name in ("input_file", "output_dir"):
        f.mark_flag_as_required(name)
    return f.FLAGS


def main(argv) -> int:
    from absl import flags

    flag_values = flags.FLAGS
    if len(argv) > 1:
        print(f"error: unexpected arguments {argv[1:]}", file=sys.stderr)
        return 2
    names = [f.name for f in dataclasses.fields(DataConfig)]
    values = {name: getattr(flag_values, name) for name in names}
    if flag_values.random_next_sentence:
        values["sentence_order"] = "nsp"
    try:
        _check_runner_flags(flag_values)
        config = DataConfig(**values)
        if flag_values.runner == "beam":
            from data_pipeline.pretraining import beam_writer

            settings = beam_writer.BeamSettings.from_flags(
                flag_values.beam_runner or "DirectRunner", flag_values.beam_options
            )
            beam_writer.create_pretraining_data_beam(config, settings)
        else:
            create_pretraining_data(
                config,
                flag_values.num_workers,
                flag_values.num_tasks,
                flag_values.task_index,
                flag_values.progress_every,
            )
    except (OSError, ValueError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _check_runner_flags(flag_values) -> None:
    """Flags of one runner given to the other: a ValueError naming them."""
    if flag_values.runner == "beam":
        local_only = [
            n for n in ("num_workers", "num_tasks", "task_index") if flag_values[n].present
        ]
        if local_only:
            raise ValueError(
                f"--{', --'.join(local_only)} belong to --runner local; with --runner beam "
                f"the Beam runner spreads the shards (its options go in --beam_options)"
            )
    else:
        beam_only = [n for n in ("beam_runner", "beam_options") if flag_values[n].present]
        if beam_only:
            raise ValueError(f"--{', --'.join(beam_only)} need --runner beam")


if __name__ == "__main__":
    from absl import app

    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)))
