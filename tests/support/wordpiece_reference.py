"""WordPiece references shared by the tests and bench/wordpiece.py: the zh and en corpora and
the Chinese task texts of the real data, a 21,128-entry vocab.txt learned from them
(`build_vocab`), and BERT's basic tokenizer + greedy WordPiece written as a plain Python
loop from the official algorithm (`reference_encode`): the oracle the WordPiece tests
compare with, and the plain-Python row the bench times."""

from __future__ import annotations

import json
import os
import unicodedata

VOCAB_SIZE = 21128  # the official Chinese vocab's size (and brightmart's)


def corpus_files(data_dir: str) -> dict[str, list[str]]:
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


def task_texts(data_dir: str) -> dict[str, list[str]]:
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
