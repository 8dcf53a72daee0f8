"""The command that trains a tokenizer on a pretraining corpus: ALBERT's SentencePiece model
(`sentencepiece_trainer`) or, with `--kind wordpiece`, a BERT vocab.txt in the official
Chinese layout (`wordpiece_trainer`).

    python -m data_pipeline.tokenization.train_tokenizer --input_file 'corpus/*.txt.gz' \
        --model_prefix out/30k-clean --vocab_size 30000
    python -m data_pipeline.tokenization.train_tokenizer --kind wordpiece --input_file 'zh/*.txt' \
        --vocab_file out/vocab.txt [--vocab_size 21128]

Prints the special ids (SentencePiece) and the trainer's report as JSON; a bad flag exits 2,
bad input (no files, malformed jsonl, an impossible vocab_size, an unwritable output) 1 with
one line on stderr.
"""

from __future__ import annotations

import json
import sys

from data_pipeline.documents import FORMATS
from data_pipeline.tokenization.sentencepiece_tokenizer import SPECIAL_PIECES, AlbertTokenizer
from data_pipeline.tokenization.sentencepiece_trainer import (
    DEFAULT_NUM_THREADS,
    MAX_SENTENCE_LENGTH,
    train_sentencepiece,
)
from data_pipeline.tokenization.spec import KINDS, SENTENCEPIECE, WORDPIECE
from data_pipeline.tokenization.wordpiece_trainer import WORDPIECE_VOCAB_SIZE, train_wordpiece


def main(argv=None) -> int:
    from absl import flags

    from data_pipeline.cli import parse_tool_flags

    fl = flags.FlagValues()
    flags.DEFINE_enum(
        "kind",
        SENTENCEPIECE,
        list(KINDS),
        "sentencepiece: ALBERT's SentencePiece model (--model_prefix); wordpiece: a BERT "
        "vocab.txt (--vocab_file), as the official Chinese ALBERTs.",
        flag_values=fl,
    )
    flags.DEFINE_string(
        "input_file",
        None,
        "Input text: comma-separated globs (text or jsonl, optionally .gz).",
        flag_values=fl,
    )
    flags.DEFINE_string(
        "model_prefix",
        None,
        "sentencepiece: writes PREFIX.model and PREFIX.vocab.",
        flag_values=fl,
    )
    flags.DEFINE_string("vocab_file", None, "wordpiece: the vocab.txt to write.", flag_values=fl)
    flags.DEFINE_integer(
        "vocab_size",
        None,
        "Number of pieces (default: 30000, ALBERT's; wordpiece 21128, the Chinese vocab.txt's).",
        flag_values=fl,
    )
    flags.DEFINE_bool(
        "do_lower_case",
        True,
        "Lowercase (uncased model); use the same value when tokenizing.",
        flag_values=fl,
    )
    flags.DEFINE_enum(
        "input_format",
        "auto",
        list(FORMATS),
        "Input format (auto: jsonl for *.jsonl/*.json[.gz], else text).",
        flag_values=fl,
    )
    flags.DEFINE_bool(
        "split_sentences",
        False,
        "Split each text line into sentences (for one paragraph a line).",
        flag_values=fl,
    )
    flags.DEFINE_integer(
        "input_sentence_size",
        10_000_000,
        "sentencepiece: train on a uniform sample of at most this many sentences; 0: every "
        "sentence.",
        flag_values=fl,
    )
    flags.DEFINE_integer("seed", 12345, "sentencepiece: seed of the sample.", flag_values=fl)
    flags.DEFINE_integer(
        "num_threads",
        DEFAULT_NUM_THREADS,
        "sentencepiece: threads (part of what determines the model).",
        flag_values=fl,
    )
    flags.DEFINE_float(
        "character_coverage", 0.99995, "SentencePiece character_coverage.", flag_values=fl
    )
    flags.DEFINE_integer(
        "max_sentence_length",
        MAX_SENTENCE_LENGTH,
        "sentencepiece: longer sentences (bytes, after normalization) are skipped.",
        flag_values=fl,
    )
    flags.DEFINE_integer(
        "block_size", 1 << 20, "Bytes of input per block (memory bound).", flag_values=fl
    )
    if not parse_tool_flags(fl, argv, ("input_file",)):
        return 2
    output = "vocab_file" if fl.kind == WORDPIECE else "model_prefix"
    if not fl[output].value:
        print(f"error: --kind {fl.kind} writes --{output}; give it", file=sys.stderr)
        return 2

    def say(message: str) -> None:
        print(f"[train_tokenizer] {message}", flush=True)

    if fl.kind == WORDPIECE:
        try:
            report = train_wordpiece(
                fl.input_file,
                fl.vocab_file,
                fl.vocab_size or WORDPIECE_VOCAB_SIZE,
                do_lower_case=fl.do_lower_case,
                input_format=fl.input_format,
                split_sentences=fl.split_sentences,
                block_size=fl.block_size,
                progress=say,
            )
        except (FileNotFoundError, ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(json.dumps(report, indent=2))
        return 0
    try:
        report = train_sentencepiece(
            fl.input_file,
            fl.model_prefix,
            fl.vocab_size or 30000,
            do_lower_case=fl.do_lower_case,
            input_format=fl.input_format,
            split_sentences=fl.split_sentences,
            input_sentence_size=fl.input_sentence_size,
            seed=fl.seed,
            num_threads=fl.num_threads,
            character_coverage=fl.character_coverage,
            max_sentence_length=fl.max_sentence_length,
            block_size=fl.block_size,
            progress=say,
        )
        tokenizer = AlbertTokenizer(report["model_file"], do_lower_case=fl.do_lower_case)
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
