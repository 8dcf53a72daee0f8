"""Learn a WordPiece vocab.txt from a pretraining corpus, laid out as the official Chinese
ALBERTs' (`train_wordpiece`, `wordpiece_vocabulary`; the command is
`python -m data_pipeline.tokenization.train_tokenizer --kind wordpiece`).

The layout: [PAD], [unused1-99], [UNK], [CLS], [SEP], [MASK], then every CJK character of
the corpus with its `##` form, then the pieces of Hugging Face `tokenizers`' WordPiece
trainer over BERT's basic tokenization; for `--vocab_file` everywhere. The corpus is read
twice (every character first, so that training is deterministic: see
`wordpiece_vocabulary`); the file is checked with `WordPieceTokenizer` before it replaces
the target.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence

from data_pipeline.documents import FORMATS, ReadStats, expand_input_files, plan_blocks, read_block
from data_pipeline.io import filesystem
from data_pipeline.tokenization.sentencepiece_trainer import PROGRESS_SECONDS

WORDPIECE_VOCAB_SIZE = 21128  # the official Chinese vocab.txt's size (and brightmart's)
UNUSED_TOKENS = 99  # [unused1] ... [unused99] between [PAD] and [UNK], as officially


def _cjk_pattern():
    from data_pipeline.tokenization.wordpiece import CJK_RANGES

    return re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in CJK_RANGES) + "]")


def wordpiece_vocabulary(
    texts: Callable[[], Iterable[str]] | Sequence[str],
    vocab_size: int = WORDPIECE_VOCAB_SIZE,
    do_lower_case: bool = True,
) -> list[str]:
    """The tokens of a `vocab_size`-entry WordPiece vocab.txt learned from `texts` (a
    sequence, or a function returning a fresh iterator: the texts are read twice), laid
    out as the official Chinese vocab.txt:

      [PAD], [unused1] ... [unused99], [UNK], [CLS], [SEP], [MASK] (ids 0, 1-99, 100-103);
      every CJK character of the texts (as BERT's normalization leaves it), sorted, then
      each one's `##` form: Chinese text never needs [UNK] for a character it holds;
      then the pieces of Hugging Face `tokenizers`' WordPiece trainer over the texts with
      BERT's basic tokenization (BertNormalizer, BertPreTokenizer), in its order, up to
      `vocab_size`; [unused100] ... fill what it does not learn.

    Deterministic: the same texts and settings give the same tokens in any process. The
    trainer alone is not (huggingface/tokenizers#1794: it numbers the `##` forms in hash-map
    order, and the numbers break ties between merges), so the first pass collects every
    character and the trainer gets each one's `##` form up front, numbered in sorted
    order. Raises ValueError when `vocab_size` cannot hold the special tokens and the CJK
    characters twice, or the texts hold no word."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    from data_pipeline.tokenization.wordpiece import SPECIAL_TOKENS

    read = texts if callable(texts) else lambda: iter(texts)
    head = ["[PAD]"] + [f"[unused{i}]" for i in range(1, UNUSED_TOKENS + 1)]
    head += [t for t in SPECIAL_TOKENS if t != "[PAD]"]
    normalizer = normalizers.BertNormalizer(lowercase=do_lower_case)
    characters = set()
    for text in read():
        characters.update(text)
    # Each character as normalization leaves it (per character: BertNormalizer's steps
    # are, and CJK spacing adds only spaces); compatibility ideographs become unified
    # ones under lowercasing (NFD).
    alphabet = sorted({x for c in characters for x in normalizer.normalize_str(c)} - {" "})
    alphabet = [c for c in alphabet if not c.isspace()]
    if not alphabet:
        raise ValueError("no text to learn a WordPiece vocabulary from")
    cjk_pattern = _cjk_pattern()
    cjk = [c for c in alphabet if cjk_pattern.fullmatch(c)]
    tokens = head + cjk + ["##" + c for c in cjk]
    if len(tokens) > vocab_size:
        raise ValueError(
            f"vocab_size={vocab_size:,} is too small: the text holds {len(cjk):,} CJK "
            f"characters; with their ## forms and {len(head)} special and unused tokens it "
            f"needs at least {len(tokens):,}"
        )
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        special_tokens=["[UNK]"] + ["##" + c for c in alphabet],
        show_progress=False,
    )
    tokenizer.train_from_iterator(read(), trainer)
    have = set(tokens)
    for token, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1]):
        if len(tokens) == vocab_size:
            break
        if token not in have:
            have.add(token)
            tokens.append(token)
    first = UNUSED_TOKENS + 1
    return tokens + [f"[unused{i}]" for i in range(first, first + vocab_size - len(tokens))]


def train_wordpiece(
    input_files: str | Sequence[str],
    vocab_file: str,
    vocab_size: int = WORDPIECE_VOCAB_SIZE,
    do_lower_case: bool = True,
    input_format: str = "auto",
    split_sentences: bool = False,
    block_size: int = 1 << 20,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Learns a WordPiece vocab.txt from a corpus (`wordpiece_vocabulary` over every
    sentence `data_pipeline.documents` reads) and writes it to `vocab_file` through a
    temporary file that `WordPieceTokenizer` must load before it replaces the target.
    Returns a report (JSON-serializable dict). Raises FileNotFoundError (no input),
    ValueError (no text, malformed jsonl, vocab_size too small) or OSError."""
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    start = time.time()
    say = progress or (lambda message: None)
    if input_format not in FORMATS:
        raise ValueError(f"input_format={input_format!r} is not one of {FORMATS}")
    if not vocab_file or os.path.basename(vocab_file) == "":
        raise ValueError(f"vocab_file={vocab_file!r} must name a file, not a directory")
    files = expand_input_files(input_files)
    if not files:
        raise ValueError("no input files given (input_files is empty)")
    say(f"input: {len(files)} file(s); training WordPiece: vocab_size={vocab_size:,}")

    def sentences(stats):
        last = time.time()
        for block in plan_blocks(files, block_size, input_format):
            for _, documents in read_block(block, block_size, split_sentences, stats):
                for document in documents:
                    yield from document
            if time.time() - last > PROGRESS_SECONDS:
                last = time.time()
                say(f"read {stats.bytes / 1e6:,.1f} MB of text: {stats.sentences:,} sentences")

    passes = []

    def counted():  # (each pass counts again: the report keeps the first pass's)
        passes.append(ReadStats())
        return sentences(passes[-1])

    try:
        tokens = wordpiece_vocabulary(counted, vocab_size, do_lower_case)
    except ValueError as e:
        if passes and passes[0].sentences == 0:
            where = files[0] if len(files) == 1 else f"{len(files)} input files"
            raise ValueError(f"no sentences to train on in {where}") from None
        raise e from None
    stats = passes[0]
    directory = os.path.dirname(
        vocab_file if filesystem.is_url(vocab_file) else os.path.abspath(vocab_file)
    )
    filesystem.makedirs(directory)
    data = "".join(t + "\n" for t in tokens).encode("utf-8")
    tmp = f"{vocab_file}.tmp{os.getpid()}"
    try:
        with filesystem.open(tmp, "wb") as f:
            f.write(data)
        tokenizer = WordPieceTokenizer(tmp, do_lower_case)  # the checks runners make
        filesystem.replace(tmp, vocab_file)
    finally:
        if filesystem.exists(tmp):  # (replaced unless the check or a write failed)
            filesystem.remove(tmp)
    filled = sum(1 for t in tokens if t.startswith("[unused")) - UNUSED_TOKENS  # (not learned)
    cjk = sum(1 for t in tokens if len(t) == 1 and _cjk_pattern().fullmatch(t))
    checksum = hashlib.sha256(data).hexdigest()
    say(f"wrote {vocab_file} ({len(tokens):,} tokens, sha256 {checksum[:16]}...)")
    return {
        "vocab_file": vocab_file,
        "vocab_sha256": checksum,
        "vocab_size": tokenizer.vocab_size,
        "do_lower_case": do_lower_case,
        "cjk_characters": cjk,
        "unused_filled": filled,
        "input_files": len(files),
        "input_bytes": stats.bytes,
        "documents": stats.documents,
        "sentences": stats.sentences,
        "invalid_utf8_lines": stats.invalid_utf8_lines,
        "seconds": round(time.time() - start, 2),
    }
