"""WordPiece tokenization throughput: our Python path vs a plain-Python loop like the official.

    python -m bench.wordpiece [--repeat 3] [--oracle] [--json_out FILE]

Corpora (the real data, every line): zh_news (news_zh_1 and THUCNews, 1,221 lines) and
en_speeches (inaugural and State of the Union addresses). The vocabulary is built here,
never copied: `build_vocab` (tests/support/wordpiece_reference.py, shared with the tests)
trains a WordPiece vocabulary on both corpora
(`data_pipeline.tokenization.train_tokenizer.wordpiece_vocabulary`, as `python -m
data_pipeline.tokenization.train_tokenizer --kind wordpiece` does): every CJK character seen
there with its `##` form, then Hugging Face `tokenizers`' trainer's pieces, 21,128 entries
like the official Chinese vocab.

Rows: lines/s of `WordPieceTokenizer.encode_batch` (Hugging Face `tokenizers`, Rust, the
whole corpus as one batch) and of `reference_encode`, BERT's basic tokenizer and greedy
longest-match-first WordPiece written as a plain Python loop over characters as the
official tokenization.py does it (written from the algorithm, in
tests/support/wordpiece_reference.py: the tests' oracle too). Both give the same ids
(checked on every line before timing). Best of `--repeat` runs; the load average is printed
with the table, since the machine may be shared.

`--oracle` also compares our ids with Hugging Face's pure-Python `BertTokenizerLegacy`
(transformers, a development dependency) on every line of both corpora and of the Chinese
task data (ChnSentiCorp, AFQMC, CMRC 2018), and prints the number of texts that differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from tests.support.wordpiece_reference import (
    build_vocab,
    corpus_files,
    read_lines,
    reference_encode,
    task_texts,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def _best(fn, lines: list[str], repeat: int, setup=lambda: None) -> float:
    """Best wall time of `fn(lines, setup())` over `repeat` runs (setup not timed)."""
    best = float("inf")
    for _ in range(repeat):
        state = setup()
        start = time.perf_counter()
        fn(lines, state)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--oracle", action="store_true")
    parser.add_argument("--json_out", default=None)
    args = parser.parse_args(argv)
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    corpora = corpus_files(DATA)
    if not all(corpora.values()):
        print(f"real data not available under {DATA}", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="wordpiece-bench-")
    vocab_file = os.path.join(tmp, "vocab.txt")
    tokens = build_vocab([f for files in corpora.values() for f in files], vocab_file)
    tokenizer = WordPieceTokenizer(vocab_file, do_lower_case=True)
    vocab = {t: i for i, t in enumerate(tokens)}
    rows = []
    for name, files in corpora.items():
        lines = read_lines(files)
        ours = tokenizer.encode_batch(lines)
        reference = [reference_encode(line, vocab) for line in lines]
        assert ours == reference, f"{name}: ids differ from the reference loop"
        # A fresh tokenizer per run: its chunk cache starts empty (no help from a run before).
        fast = _best(
            lambda lines, tok: tok.encode_batch(lines),
            lines,
            args.repeat,
            setup=lambda: WordPieceTokenizer(vocab_file, do_lower_case=True),
        )
        slow = _best(
            lambda lines, _: [reference_encode(line, vocab) for line in lines], lines, args.repeat
        )
        rows.append(
            dict(
                corpus=name,
                lines=len(lines),
                mb=sum(len(s.encode()) for s in lines) / 1e6,
                ours_lines_per_s=len(lines) / fast,
                reference_lines_per_s=len(lines) / slow,
                speedup=slow / fast,
            )
        )
    oracle_rows = []
    if args.oracle:
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

        oracle = BertTokenizerLegacy(vocab_file, do_lower_case=True)
        texts = {name: read_lines(files) for name, files in corpora.items()}
        texts.update(task_texts(DATA))
        for name, lines in texts.items():
            ours = tokenizer.encode_batch(lines)
            expected = [oracle.convert_tokens_to_ids(oracle.tokenize(t)) for t in lines]
            differ = sum(a != b for a, b in zip(ours, expected))
            oracle_rows.append(dict(texts=name, count=len(lines), differ=differ))
    shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    print(f"vocab {len(tokens)} entries; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("| corpus | lines | MB | ours (encode_batch) lines/s | plain-Python loop lines/s | × |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['corpus']} | {r['lines']:,} | {r['mb']:.1f} | {r['ours_lines_per_s']:,.0f} "
            f"| {r['reference_lines_per_s']:,.0f} | {r['speedup']:.1f} |"
        )
    for r in oracle_rows:
        print(
            f"oracle (BertTokenizerLegacy) on {r['texts']}: {r['count']:,} texts, "
            f"{r['differ']} differ"
        )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(dict(rows=rows, oracle=oracle_rows, load_average=load), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
