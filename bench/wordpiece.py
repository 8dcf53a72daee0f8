"""WordPiece tokenization throughput: our Python path vs a plain-Python loop like the official.

    python bench/wordpiece.py [--repeat 3] [--oracle] [--json_out FILE]

Corpora (../shared/data, every line): zh_news (news_zh_1 and THUCNews, 1,221 lines) and
en_speeches (inaugural and State of the Union addresses). The vocabulary is built here,
never copied: `build_vocab` (the tests use the same function) trains a WordPiece
vocabulary on both corpora (`data_pipeline.tokenization.train_tokenizer.wordpiece_vocabulary`, as
`python -m data_pipeline.tokenization.train_tokenizer --kind wordpiece` does): every CJK character
seen
there with its `##` form, then Hugging Face `tokenizers`' trainer's pieces, 21,128 entries
like the official Chinese vocab.

Rows: lines/s of `WordPieceTokenizer.encode_batch` (Hugging Face `tokenizers`, Rust, the
whole corpus as one batch) and of `reference_encode`, BERT's basic tokenizer and greedy
longest-match-first WordPiece written as a plain Python loop over characters as the
official tokenization.py does it (written here from the algorithm). Both give the same ids
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
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")
VOCAB_SIZE = 21128  # the official Chinese vocab's size (and brightmart's)


def corpus_files(data_dir: str = DATA) -> dict[str, list[str]]:
    """{corpus name: files} of the zh and en pretraining corpora."""
    import glob

    corpus = os.path.join(data_dir, "corpus")
    return {
        "zh_news": sorted(glob.glob(os.path.join(corpus, "zh_news", "*.txt"))),
        "en_speeches": sorted(glob.glob(os.path.join(corpus, "en_speeches", "*", "*.txt"))),
    }


def read_lines(files: list[str]) -> list[str]:
    """Every line of the files, newline removed, in file order (empty lines kept). Invalid
    UTF-8 (a few speeches are Latin-1) becomes U+FFFD, as the data tools read it."""
    lines = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines += f.read().split("\n")
    return lines


def task_texts(data_dir: str = DATA) -> dict[str, list[str]]:
    """{name: texts} of the Chinese task data: every line of ChnSentiCorp and AFQMC (all
    splits), and every context, question and answer text of the CMRC 2018 dev subset."""
    import glob

    chinese = os.path.join(data_dir, "chinese")
    out = {
        "ChnSentiCorp": read_lines(sorted(glob.glob(os.path.join(chinese, "ChnSentiCorp", "*")))),
        "AFQMC": read_lines(sorted(glob.glob(os.path.join(chinese, "AFQMC", "*")))),
    }
    with open(os.path.join(chinese, "expmrc-cmrc2018-dev.json"), encoding="utf-8") as f:
        squad = json.load(f)
    texts = []
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            texts.append(paragraph["context"])
            for qa in paragraph["qas"]:
                texts.append(qa["question"])
                texts += [a["text"] for a in qa.get("answers", [])]
    out["CMRC2018"] = texts
    return out


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def build_vocab(files: list[str], out_file: str, size: int = VOCAB_SIZE) -> list[str]:
    """Writes a `size`-entry WordPiece vocab.txt learned from every line of `files`
    (`data_pipeline.tokenization.train_tokenizer.wordpiece_vocabulary`: the official Chinese layout,
    every CJK character with its `##` form, then Hugging Face `tokenizers`' WordPiece
    trainer's pieces); returns its tokens."""
    from data_pipeline.tokenization.wordpiece_trainer import wordpiece_vocabulary

    tokens = wordpiece_vocabulary(read_lines(files), size)
    with open(out_file, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    return tokens


# --- the plain-Python reference (the official algorithm, written from its description) ---
# Pass by pass as the official tokenization.py runs it: clean, space the CJK characters,
# split on whitespace, per word lowercase + strip accents and split off punctuation, then
# WordPiece per word over a list of characters.


def _is_control(c: str) -> bool:
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def _is_whitespace(c: str) -> bool:
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def _is_punctuation(c: str) -> bool:
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _clean(text: str) -> str:
    out = []
    for c in text:
        if c == "\x00" or c == "\ufffd" or _is_control(c):
            continue
        out.append(" " if _is_whitespace(c) else c)
    return "".join(out)


def _space_cjk(text: str) -> str:
    out = []
    for c in text:
        if _is_cjk(ord(c)):
            out += [" ", c, " "]
        else:
            out.append(c)
    return "".join(out)


def _strip_accents(word: str) -> str:
    out = []
    for c in unicodedata.normalize("NFD", word):
        if unicodedata.category(c) != "Mn":
            out.append(c)
    return "".join(out)


def _split_punctuation(word: str) -> list[str]:
    parts, new_word = [], True
    for c in word:
        if _is_punctuation(c):
            parts.append([c])
            new_word = True
        else:
            if new_word:
                parts.append([])
            new_word = False
            parts[-1].append(c)
    return ["".join(p) for p in parts]


def _basic_words(text: str, do_lower_case: bool) -> list[str]:
    text = _space_cjk(_clean(text))
    words = []
    for word in text.split():
        if do_lower_case:
            word = _strip_accents(word.lower())
        words += _split_punctuation(word)
    return " ".join(words).split()


def _wordpiece(word: str, vocab: dict[str, int]) -> list[str]:
    chars = list(word)
    if len(chars) > 100:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(chars):
        end, found = len(chars), None
        while start < end:
            piece = "".join(chars[start:end])
            if start > 0:
                piece = "##" + piece
            if piece in vocab:
                found = piece
                break
            end -= 1
        if found is None:
            return ["[UNK]"]
        pieces.append(found)
        start = end
    return pieces


def reference_encode(text: str, vocab: dict[str, int], do_lower_case: bool = True) -> list[int]:
    """BERT's FullTokenizer ids as a plain Python loop (greedy longest match first)."""
    tokens = []
    for word in _basic_words(text, do_lower_case):
        tokens += _wordpiece(word, vocab)
    return [vocab[t] for t in tokens]


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

    corpora = corpus_files()
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
        texts.update(task_texts())
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
