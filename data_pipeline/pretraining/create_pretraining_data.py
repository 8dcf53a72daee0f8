"""Raw text → ALBERT pretraining TFRecords (SOP pairs + n-gram masks) and meta_data.json:
the command line.

    python -m data_pipeline.pretraining.create_pretraining_data --input_file 'corpus/*.txt' \\
        --output_dir data/pretrain --spm_model_file 30k-clean.model \\
        (or --vocab_file vocab.txt: a WordPiece vocabulary, as the official Chinese models)
        [--max_seq_length 512 --max_predictions_per_seq 20 --dupe_factor 40 ...] \\
        [--num_workers 8] [--num_output_shards 64] [--num_tasks 4 --task_index 0]
        [--runner beam [--beam_runner DataflowRunner] [--beam_options '...']]

`--runner local` (the default) runs the job on this machine's worker processes
(`local_writer.py`), `--num_tasks` machines by hand. `--runner beam` writes the same bytes
from an Apache Beam pipeline (DirectRunner, Dataflow, Flink, Spark): see beam_writer.py.

What it writes is a pure function of the input bytes and the settings (never of
`--num_workers`, `--num_tasks` or timing): blocks of `--block_size` bytes at document
starts (`documents.py`), block b to shard b mod `--num_output_shards`, each block part from
its own seeded generator (`shards.py`). A re-run skips complete shards of the same job —
same settings, tokenizer and input bytes (`fingerprint.py`) — and refuses an output
directory holding another job's. One job per output directory (a lock, `local_writer.py`).

The tokenizer is a SentencePiece model (`--spm_model_file`) or a WordPiece vocab.txt
(`--vocab_file`; with both, the model, as officially): one `TokenizerSpec`
(`data_pipeline.tokenization.spec`) in `DataConfig` (`data_config.py`), where every
setting is checked before any worker starts. `--zh_whole_word_mask` (off by default, as
officially) also makes each jieba word of Chinese text one unit (`chinese_words.py`).

The flags are the fields of `DataSettings`, `TokenizerFlags` (data_config.py) and of the
writer's settings below, parsed once (`data_pipeline.command`; `--help` lists them, grouped).
Errors are one line on stderr and exit 1 (a bad flag, a bad input found by a worker, a
full disk naming the file, a worker that died; stray positional arguments: 2); Ctrl-C stops
the workers, keeps the complete shards (a re-run resumes) and exits 130.
Memory is bounded by one block part × dupe_factor per worker, whatever the corpus size.
Nothing here imports TensorFlow (see records.py).
"""

from __future__ import annotations

import dataclasses
import os
import sys

from data_pipeline.cli import setting
from data_pipeline.command import Command, UsageError
from data_pipeline.pretraining.data_config import DataConfig, DataSettings, TokenizerFlags
from data_pipeline.pretraining.local_writer import WorkerFailed, create_pretraining_data

RUNNERS = ("local", "beam")
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


@dataclasses.dataclass(frozen=True)
class WriterSettings:
    """Who writes the shards (never what they hold): this machine's workers or Beam."""

    runner: str = setting(
        "local",
        "local: this machine's worker processes; beam: an Apache Beam pipeline "
        "(beam_writer.py; the same bytes).",
        choices=RUNNERS,
    )
    num_workers: int = setting(os.cpu_count() or 1, "Worker processes.")
    num_tasks: int = setting(1, "Machines sharing the job.")
    task_index: int = setting(0, "This machine's index in [0, num_tasks).")
    progress_every: float = setting(10.0, "Seconds between progress lines.")
    beam_runner: str | None = setting(
        None, "With --runner beam: DirectRunner (default), DataflowRunner, ..."
    )
    beam_options: str | None = setting(
        None, "With --runner beam: Beam pipeline options, passed through."
    )


@dataclasses.dataclass(frozen=True)
class OfficialFlags:
    """Official flags kept so that existing command lines run unchanged."""

    random_next_sentence: bool = setting(False, "Official flag: true means --sentence_order nsp.")


COMMAND = Command(
    "albert-pretraining-data",
    __doc__,
    (DataSettings, TokenizerFlags, WriterSettings, OfficialFlags),
    required=("input_file", "output_dir"),
)


def data_config(s) -> DataConfig:
    """The job's DataConfig from COMMAND's settings `s` (every setting checked here)."""
    order = {"sentence_order": "nsp"} if s.random_next_sentence else {}
    return s.group(DataConfig, tokenizer=s.group(TokenizerFlags).spec(), **order)


def main(argv=None) -> int:
    """The command: parse once, check every setting, write; the exit code."""
    try:
        s = COMMAND.parse(argv)
    except UsageError as e:  # a bad flag: exit 1, as every error of this command
        print(f"error: {e}", file=sys.stderr)
        return 1
    except ValueError as e:  # stray positional arguments
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        _check_runner_flags(s)
        config = data_config(s)
        if s.runner == "beam":
            from data_pipeline.pretraining import beam_writer

            settings = beam_writer.BeamSettings.from_flags(
                s.beam_runner or "DirectRunner", s.beam_options
            )
            beam_writer.create_pretraining_data_beam(config, settings)
        else:
            create_pretraining_data(
                config, s.num_workers, s.num_tasks, s.task_index, s.progress_every
            )
    except (OSError, ValueError, ImportError, WorkerFailed) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "error: interrupted; the workers were stopped and only complete shards kept "
            "(run the same command again to resume)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return 0


def _check_runner_flags(s) -> None:
    """Flags of one runner given to the other: a ValueError naming them."""
    if s.runner == "beam":
        local_only = [n for n in ("num_workers", "num_tasks", "task_index") if s.given(n)]
        if local_only:
            raise ValueError(
                f"--{', --'.join(local_only)} belong to --runner local; with --runner beam "
                f"the Beam runner spreads the shards (its options go in --beam_options)"
            )
    else:
        beam_only = [n for n in ("beam_runner", "beam_options") if s.given(n)]
        if beam_only:
            raise ValueError(f"--{', --'.join(beam_only)} need --runner beam")


def entry():
    """The console script `albert-pretraining-data`: the same as `python -m
    data_pipeline.pretraining.create_pretraining_data`."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
