"""The command that trains a tokenizer on a pretraining corpus: ALBERT's SentencePiece model
(`sentencepiece_trainer`) or, with `--kind wordpiece`, a BERT vocab.txt in the official
Chinese layout (`wordpiece_trainer`).

    python -m data_pipeline.tokenization.train_tokenizer --input_file 'corpus/*.txt.gz' \\
        --model_prefix out/30k-clean --vocab_size 30000
    python -m data_pipeline.tokenization.train_tokenizer --kind wordpiece --input_file 'zh/*.txt' \\
        --vocab_file out/vocab.txt [--vocab_size 21128]

Prints the special ids (SentencePiece) and the trainer's report as JSON; a bad command line
(`data_pipeline.command`: `--help` lists the flags, grouped) exits 2,
bad input (no files, malformed jsonl, an impossible vocab_size, an unwritable output) 1 with
one line on stderr.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from data_pipeline.cli import setting
from data_pipeline.command import Command
from data_pipeline.documents import FORMATS
from data_pipeline.tokenization.sentencepiece_tokenizer import SPECIAL_PIECES, AlbertTokenizer
from data_pipeline.tokenization.sentencepiece_trainer import (
    DEFAULT_NUM_THREADS,
    MAX_SENTENCE_LENGTH,
    train_sentencepiece,
)
from data_pipeline.tokenization.spec import KINDS, SENTENCEPIECE, WORDPIECE
from data_pipeline.tokenization.wordpiece_trainer import WORDPIECE_VOCAB_SIZE, train_wordpiece


@dataclasses.dataclass(frozen=True)
class TokenizerTraining:
    """What to train, on which text, and where it goes."""

    kind: str = setting(
        SENTENCEPIECE,
        "sentencepiece: ALBERT's SentencePiece model (--model_prefix); wordpiece: a BERT "
        "vocab.txt (--vocab_file), as the official Chinese ALBERTs.",
        choices=KINDS,
    )
    input_file: str | None = setting(
        None, "Input text: comma-separated globs (text or jsonl, optionally .gz)."
    )
    model_prefix: str | None = setting(None, "sentencepiece: writes PREFIX.model and PREFIX.vocab.")
    vocab_file: str | None = setting(None, "wordpiece: the vocab.txt to write.")
    vocab_size: int | None = setting(
        None,
        "Number of pieces (default: 30000, ALBERT's; wordpiece 21128, the Chinese vocab.txt's).",
        minimum=1,
    )
    do_lower_case: bool = setting(
        True, "Lowercase (uncased model); use the same value when tokenizing."
    )
    input_format: str = setting(
        "auto", "Input format (auto: jsonl for *.jsonl/*.json[.gz], else text).", choices=FORMATS
    )
    split_sentences: bool = setting(
        False, "Split each text line into sentences (for one paragraph a line)."
    )
    block_size: int = setting(1 << 20, "Bytes of input per block (memory bound).")


@dataclasses.dataclass(frozen=True)
class SentencePieceOptions:
    """SentencePiece's sample and trainer (--kind sentencepiece)."""

    input_sentence_size: int = setting(
        10_000_000,
        "sentencepiece: train on a uniform sample of at most this many sentences; 0: every "
        "sentence.",
    )
    seed: int = setting(12345, "sentencepiece: seed of the sample.")
    num_threads: int = setting(
        DEFAULT_NUM_THREADS, "sentencepiece: threads (part of what determines the model)."
    )
    character_coverage: float = setting(0.99995, "SentencePiece character_coverage.")
    max_sentence_length: int = setting(
        MAX_SENTENCE_LENGTH,
        "sentencepiece: longer sentences (bytes, after normalization) are skipped.",
    )


COMMAND = Command(
    "albert-train-tokenizer",
    __doc__,
    (TokenizerTraining, SentencePieceOptions),
    required=("input_file",),
)


def main(argv=None) -> int:
    """The console command `albert-train-tokenizer`: parse once, train; the exit code."""
    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    output = "vocab_file" if s.kind == WORDPIECE else "model_prefix"
    if not getattr(s, output):
        print(f"error: --kind {s.kind} writes --{output}; give it", file=sys.stderr)
        return 2

    def say(message: str) -> None:
        print(f"[train_tokenizer] {message}", flush=True)

    if s.kind == WORDPIECE:
        try:
            report = train_wordpiece(
                s.input_file,
                s.vocab_file,
                s.vocab_size or WORDPIECE_VOCAB_SIZE,
                do_lower_case=s.do_lower_case,
                input_format=s.input_format,
                split_sentences=s.split_sentences,
                block_size=s.block_size,
                progress=say,
            )
        except (FileNotFoundError, ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(json.dumps(report, indent=2))
        return 0
    try:
        report = train_sentencepiece(
            s.input_file,
            s.model_prefix,
            s.vocab_size or 30000,
            do_lower_case=s.do_lower_case,
            input_format=s.input_format,
            split_sentences=s.split_sentences,
            input_sentence_size=s.input_sentence_size,
            seed=s.seed,
            num_threads=s.num_threads,
            character_coverage=s.character_coverage,
            max_sentence_length=s.max_sentence_length,
            block_size=s.block_size,
            progress=say,
        )
        tokenizer = AlbertTokenizer(report["model_file"], do_lower_case=s.do_lower_case)
    except (FileNotFoundError, ValueError, OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    ids = {p: tokenizer.sp.piece_to_id(p) for p in SPECIAL_PIECES}
    if list(ids.values()) != list(range(len(SPECIAL_PIECES))):
        print(f"error: {report['model_file']} has special ids {ids}, expected 0-4", file=sys.stderr)
        return 1
    print("special ids: " + " ".join(f"{p}={i}" for p, i in ids.items()))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
