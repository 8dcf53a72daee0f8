"""One shard's work, shared by both writers (local worker processes and Beam's WriteShard):
the instance maker of a job, a shard's examples block by block, its statistics file.

A shard's bytes are a pure function of the input bytes and the settings: its blocks in
block order, each block part's instances from its own generator seeded by (random_seed,
file index, block, part), the masker's calibration reset at the shard's start. So which
worker writes a shard, in which order or how often does not matter.

Output directory layout: `pretrain-SSSSS-of-NNNNN.tfrecord` (`DataConfig.shard_name`) and
`stats/<shard>.json` (`stats_text`, the same bytes from every writer). A shard is complete
when both exist; the stats file carries the job's fingerprint (`fingerprint.py`).
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from data_pipeline import documents as documents_lib
from data_pipeline.io import filesystem
from data_pipeline.pretraining import chinese_words
from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.pretraining.fingerprint import check_fingerprint
from data_pipeline.pretraining.instances import InstanceMaker, InstanceStats
from data_pipeline.pretraining.masking import NgramMasker
from data_pipeline.records import encode_examples


def make_instance_maker(config: DataConfig) -> InstanceMaker:
    """The tokenizer, masker and instance maker of `config` (one per worker; the masker's
    calibration state is reset at each shard's start by `start_shard`), with jieba's words
    under `zh_whole_word_mask`."""
    tokenizer = config.tokenizer.build()
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


def stats_path(config: DataConfig, shard: int) -> str:
    return os.path.join(config.output_dir, "stats", config.shard_name(shard) + ".json")


def load_stats(config: DataConfig, shard: int, fingerprint: str) -> dict | None:
    """A complete shard's statistics (None: not complete); a ValueError when it is another
    job's (`check_fingerprint`)."""
    path = stats_path(config, shard)
    if not filesystem.exists(path) or not filesystem.exists(
        os.path.join(config.output_dir, config.shard_name(shard))
    ):
        return None
    with filesystem.open(path) as f:
        return check_fingerprint(config, json.load(f), fingerprint)


def check_output_dir(path: str) -> None:
    """Creates `path` and its stats/ directory and proves them writable (one line naming
    `output_dir` if not), before any work starts."""
    try:
        filesystem.makedirs(os.path.join(path, "stats"))
        probe = os.path.join(path, f".write-probe{os.getpid()}")
        with filesystem.open_new(probe, "w") as f:
            f.write("ok")
        filesystem.remove(probe)
    except OSError as e:
        raise OSError(f"output_dir {path!r} is not writable: {e.strerror}") from None
