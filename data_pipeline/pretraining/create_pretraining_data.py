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

Errors are one line on stderr and exit 1 (a bad flag, a bad input found by a worker, a
full disk naming the file, a worker that died); Ctrl-C stops the workers, keeps the
complete shards (a re-run resumes) and exits 130.
Memory is bounded by one block part × dupe_factor per worker, whatever the corpus size.
Nothing here imports TensorFlow (see records.py).
"""

from __future__ import annotations

import os
import sys

from data_pipeline import documents as documents_lib
from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.pretraining.instances import SENTENCE_ORDERS, SHORT_SEQ_SCOPES
from data_pipeline.pretraining.local_writer import WorkerFailed, create_pretraining_data

RUNNERS = ("local", "beam")
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


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
    values = {name: flag_values[name].value for name in DataConfig.flag_names()}
    if flag_values.random_next_sentence:
        values["sentence_order"] = "nsp"
    try:
        _check_runner_flags(flag_values)
        config = DataConfig.from_flags(**values)  # every setting checked here
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


def entry():
    """The console script `albert-pretraining-data`: the same as `python -m
    data_pipeline.pretraining.create_pretraining_data`."""
    # absl's --help prints __main__'s docstring: under the console script, this module's.
    sys.modules["__main__"].__doc__ = __doc__
    from absl import app

    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == "__main__":
    entry()
