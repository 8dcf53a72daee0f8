"""What --zh_whole_word_mask costs create_pretraining_data, on Chinese news.

    python -m bench.zh_whole_word_mask [--repeats 3] [--num_workers 1] [--json_out FILE]

Job: $ALBERT_TF_DATA/corpus/zh_news, news_zh_1.txt (one sentence a line) and the 1,000
THUCNews articles of thucnews_1000.txt (label<TAB>article: each article becomes a JSONL
document, split into sentences by the writer), tokenized with the 21,128-entry WordPiece
vocab.txt that bench/wordpiece.py learns from the corpora (like the official Chinese one);
`max_seq_length` 128, `dupe_factor` 1, everything else default. Each case runs the command
line tool in a fresh process (start-up, jieba's dictionary, tokenization and writing
included: what a user waits for); the cases alternate, and the median of `--repeats` runs
of each is kept.

Reported per case: input sentences (the lines the writer reads, after splitting) per
second, input MB/s, instances/s, and the masking units the job drew (fewer, longer units
with the option). A last line times the segmentation alone (`ChineseWords.mark` over every
encoded sentence, in this process) to say where the extra time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
ZH = os.path.join(DATA, "corpus", "zh_news")


def make_inputs(tmp: str) -> list[str]:
    """news_zh_1.txt as it is, and THUCNews as JSONL documents."""
    jsonl = os.path.join(tmp, "thucnews.jsonl")
    with (
        open(os.path.join(ZH, "thucnews_1000.txt"), encoding="utf-8") as f,
        open(jsonl, "w", encoding="utf-8") as out,
    ):
        for line in f:
            _, article = line.rstrip("\n").split("\t", 1)
            out.write(json.dumps({"text": article}, ensure_ascii=False) + "\n")
    return [os.path.join(ZH, "news_zh_1.txt"), jsonl]


def run_case(inputs: list[str], vocab: str, out_dir: str, zh: bool, workers: int) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "data_pipeline.pretraining.create_pretraining_data",
        f"--input_file={','.join(inputs)}",
        f"--output_dir={out_dir}",
        f"--vocab_file={vocab}",
        "--max_seq_length=128",
        "--dupe_factor=1",
        f"--num_workers={workers}",
        "--progress_every=1000",
        f"--{'' if zh else 'no'}zh_whole_word_mask",
    ]
    start = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.time() - start
    if proc.returncode:
        raise RuntimeError(f"create_pretraining_data failed:\n{proc.stderr}")
    with open(os.path.join(out_dir, "meta_data.json")) as f:
        meta = json.load(f)
    return {
        "zh_whole_word_mask": zh,
        "workers": workers,
        "seconds": elapsed,
        "sentences": meta["input"]["sentences"],
        "sentences_per_s": meta["input"]["sentences"] / elapsed,
        "mb_per_s": meta["input"]["bytes"] / 1e6 / elapsed,
        "instances_per_s": meta["instances"] / elapsed,
        "units": sum(meta["masking"]["ngram_units"].values()),
        "masked_tokens": meta["masking"]["masked_tokens"],
    }


def segmentation_alone(inputs: list[str], vocab: str) -> dict:
    """`ChineseWords.mark` over every sentence of the job, timed in this process."""
    from data_pipeline import documents
    from data_pipeline.pretraining.chinese_words import ChineseWords
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    tok = WordPieceTokenizer(vocab)
    sentences = []
    for block in documents.plan_blocks(inputs, 1 << 20, "auto"):
        for _, docs in documents.read_block(block, 1 << 20, False, documents.ReadStats()):
            sentences += [s for doc in docs for s in doc]
    encoded = tok.encode_batch(sentences)
    start = time.time()
    words = ChineseWords(tok)
    load = time.time() - start
    start = time.time()
    for ids in encoded:
        words.mark(ids)
    seconds = time.time() - start
    return {"sentences": len(sentences), "load_s": load, "sentences_per_s": len(encoded) / seconds}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3, help="runs per case; the median is kept")
    p.add_argument("--num_workers", type=int, default=1)
    p.add_argument("--json_out", default=None)
    args = p.parse_args()
    if not os.path.isdir(ZH):
        print(f"needs the real corpus at {ZH}", file=sys.stderr)
        return 1
    import wordpiece as bench_wordpiece  # bench/wordpiece.py, beside this file

    tmp = tempfile.mkdtemp(prefix="bench-zh-wwm-")
    try:
        inputs = make_inputs(tmp)
        vocab = os.path.join(tmp, "vocab.txt")
        files = [f for fs in bench_wordpiece.corpus_files(DATA).values() for f in fs]
        bench_wordpiece.build_vocab(files, vocab)
        runs = {False: [], True: []}
        for r in range(args.repeats):  # interleaved: both cases see the same machine load
            for zh in (False, True):
                out = os.path.join(tmp, f"out-{zh}-{r}")
                runs[zh].append(run_case(inputs, vocab, out, zh, args.num_workers))
                shutil.rmtree(out)
        rows = []
        for case in runs.values():
            median = statistics.median(x["seconds"] for x in case)
            rows.append(min(case, key=lambda x: abs(x["seconds"] - median)))
        alone = segmentation_alone(inputs, vocab)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"\n{'zh_whole_word_mask':<20}{'workers':>8}{'sentences':>11}{'seconds':>9}"
        f"{'sent/s':>9}{'MB/s':>7}{'inst/s':>8}{'units':>8}{'masked':>8}"
    )
    for r in rows:
        print(
            f"{str(r['zh_whole_word_mask']):<20}{r['workers']:>8}{r['sentences']:>11,}"
            f"{r['seconds']:>9.2f}{r['sentences_per_s']:>9,.0f}{r['mb_per_s']:>7.2f}"
            f"{r['instances_per_s']:>8,.0f}{r['units']:>8,}{r['masked_tokens']:>8,}"
        )
    print(
        f"segmentation alone (ChineseWords.mark): {alone['sentences_per_s']:,.0f} sentences/s "
        f"over {alone['sentences']:,} sentences; jieba's dictionary built in "
        f"{alone['load_s']:.2f} s"
    )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"cases": rows, "segmentation": alone}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
