"""A released vocabulary plus new pieces: the extended tokenizer file and, for every new
piece, the old ids it replaces (what its embedding row is initialized from).

New ids go after the last old id, so every old id keeps its meaning and every old row of
the model keeps its place. Each line of the pieces file is one word, normalized as the
tokenizer normalizes text (ALBERT's normalization, or BERT's basic tokenizer: casing,
accents), so the piece is the form text reaches it in:

- SentencePiece: the word-start piece `▁word`, appended to the ModelProto as a NORMAL
  piece scored SCORE_MARGIN above the old model's best segmentation of the word (the sum
  of its pieces' scores). The word itself then becomes that one piece, and a word that
  begins with it changes only where its old segmentation began with exactly those pieces
  (they merge into the new one, the rest unchanged): a new path through the piece scores
  SCORE_MARGIN above an old path that was there already. Every unigram implementation
  (sentencepiece, tensorflow-text's two tokenizers, Hugging Face `tokenizers`) reads such
  a piece as the trained ones. (USER_DEFINED pieces, and scored pieces at the best score,
  also re-split words that begin with the new word, "president" → "▁pres" "ident": see
  docs/design/tokenization.md, "Extending a vocabulary".)
- WordPiece: the token appended to vocab.txt; `##rest` adds a continuation piece.
  Greedy longest-match-first then takes it for the word itself; words that merely begin
  with it (or, for `##rest`, continue with it) may change, nothing else.

`ExtendedVocabulary.check` re-tokenizes each word with the new file and refuses one that is
not a single new piece (one line naming the file and line).
"""

from __future__ import annotations

import dataclasses

from data_pipeline.io import filesystem

# At most this many new pieces: each is initialized from the mean of its old pieces, a
# guess that fine-tuning refines; a list this long (a third of a 30k vocabulary) is a new
# vocabulary, for `albert-train-tokenizer` and pretraining rather than for extension.
MAX_NEW_PIECES = 10_000
SPIECE_UNDERLINE = "\u2581"
# How far a new SentencePiece piece's score lies above the old best segmentation of its
# word: far above float rounding of the lattice sums (~1e-6), small enough that no other
# path of an old word comes within it (tested on 33,898 real words: none re-split).
SCORE_MARGIN = 0.01


@dataclasses.dataclass(frozen=True)
class NewPiece:
    """One new piece: `word` as written on `line` of the pieces file, the `piece` added,
    and `old_ids` [k], the ids the old tokenizer gives the word (k >= 1)."""

    word: str
    line: int
    piece: str
    old_ids: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class ExtendedVocabulary:
    """The extended tokenizer file's bytes (`content`), its base name (`file_name`, as the
    old one's) and the new pieces in id order (new id = `old_size` + index)."""

    content: bytes
    file_name: str
    old_size: int
    pieces: tuple[NewPiece, ...]

    @property
    def new_size(self) -> int:
        return self.old_size + len(self.pieces)

    def check(self, new_tokenizer, pieces_file: str) -> None:
        """ValueError (one line, `pieces_file:line`) for a word the extended tokenizer does
        not make its new piece, or a vocabulary of another size than expected."""
        if new_tokenizer.vocab_size != self.new_size:
            raise ValueError(
                f"the extended vocabulary has {new_tokenizer.vocab_size} entries, expected "
                f"{self.new_size}"
            )
        for index, new in enumerate(self.pieces):
            if new.piece.startswith("##"):
                continue  # (a continuation: greedy matching takes the whole rest, see above)
            ids = new_tokenizer.encode(new.word)
            if ids != [self.old_size + index]:
                got = [new_tokenizer.id_to_piece(i) for i in ids]
                raise ValueError(
                    f"{pieces_file}:{new.line}: {new.word!r} would not become the one new "
                    f"piece {new.piece!r} but {got}"
                )


def read_new_pieces(path: str, flag: str = "--new_pieces") -> list[tuple[int, str]]:
    """(line number, word) of every non-blank line of `path` (one word a line, surrounding
    whitespace stripped). One-line ValueError naming `flag`, the file and the line for a
    missing file, a line with a space inside, a word given twice, no word at all, or more
    than MAX_NEW_PIECES."""
    if not filesystem.isfile(path):
        raise FileNotFoundError(f"{flag}={path}: no such file")
    try:
        text = filesystem.read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{flag}={path}: not UTF-8 text ({e})") from None
    words, seen = [], {}
    for number, raw in enumerate(text.splitlines(), 1):
        word = raw.strip()
        if not word:
            continue
        if len(words) == MAX_NEW_PIECES:
            raise ValueError(
                f"{flag}={path}:{number}: more than {MAX_NEW_PIECES:,} new pieces (the limit: "
                f"a list this long is a new vocabulary; train one with albert-train-tokenizer)"
            )
        if any(c.isspace() for c in word):
            raise ValueError(f"{flag}={path}:{number}: {word!r} holds a space (one word a line)")
        if word in seen:
            raise ValueError(
                f"{flag}={path}:{number}: {word!r} is given twice (first on line {seen[word]})"
            )
        seen[word] = number
        words.append((number, word))
    if not words:
        raise ValueError(f"{flag}={path}: no pieces (the file has no non-blank line)")
    return words


def _already(path, flag, number, word, piece, token_id):
    return ValueError(
        f"{flag}={path}:{number}: {word!r} is already in the vocabulary (piece {piece!r}, "
        f"id {token_id})"
    )


def extend_sentencepiece(tokenizer, words, pieces_file, flag="--new_pieces") -> ExtendedVocabulary:
    """`tokenizer` (an `AlbertTokenizer`) with a NORMAL piece `▁word` for each word, scored
    SCORE_MARGIN above the word's segmentation (the module docstring) by the model that
    holds every shorter new piece already: the score of "individuals" then beats the
    path through a new "individual" too, which the old model's best path could tie with.
    (A piece is never on the path of a shorter or equally long other word.)"""
    from sentencepiece import sentencepiece_model_pb2

    added, taken = [], {}
    for number, word in words:
        form = tokenizer.sp.normalize(tokenizer.normalize(word)).lstrip(SPIECE_UNDERLINE)
        if not form or SPIECE_UNDERLINE in form:
            raise ValueError(
                f"{flag}={pieces_file}:{number}: {word!r} normalizes to {form!r}, not one word"
            )
        piece = SPIECE_UNDERLINE + form
        token_id = tokenizer.sp.piece_to_id(piece)
        if token_id != tokenizer.unk_id or piece in taken:
            raise _already(pieces_file, flag, number, word, piece, taken.get(piece, token_id))
        taken[piece] = tokenizer.vocab_size + len(added)
        added.append(NewPiece(word, number, piece, tuple(tokenizer.encode(word))))
    scores = _scores([p.piece for p in added], tokenizer.model_proto)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.model_proto)
    normal = sentencepiece_model_pb2.ModelProto.SentencePiece.NORMAL
    for new in added:
        proto.pieces.add(piece=new.piece, score=scores[new.piece], type=normal)
    return ExtendedVocabulary(
        proto.SerializeToString(), "spm.model", tokenizer.vocab_size, tuple(added)
    )


def _scores(pieces: list[str], model_proto: bytes) -> dict[str, float]:
    """{piece: score} for new word-start pieces: shortest first, each SCORE_MARGIN above its
    word's best segmentation by the model plus every shorter new piece (one model per
    length)."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model_proto)
    normal = sentencepiece_model_pb2.ModelProto.SentencePiece.NORMAL
    processor = spm.SentencePieceProcessor(model_proto=model_proto)
    scores = {}
    for length in sorted({len(p) for p in pieces}):
        group = [p for p in pieces if len(p) == length]
        for piece in group:
            path = processor.encode(piece[1:])
            scores[piece] = sum(processor.get_score(i) for i in path) + SCORE_MARGIN
            proto.pieces.add(piece=piece, score=scores[piece], type=normal)
        processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    return scores


def _greedy_continuation(rest: str, token_to_id: dict, unk_id: int) -> list[int]:
    """The ids greedy longest-match-first WordPiece gives `rest` continuing a word (every
    piece in its `##` form); [unk_id] when it has no segmentation."""
    ids, start = [], 0
    while start < len(rest):
        for end in range(len(rest), start, -1):
            token_id = token_to_id.get("##" + rest[start:end])
            if token_id is not None:
                ids.append(token_id)
                start = end
                break
        else:
            return [unk_id]
    return ids


def extend_wordpiece(tokenizer, words, pieces_file, flag="--new_pieces") -> ExtendedVocabulary:
    """`tokenizer` (a `WordPieceTokenizer`) with each word appended to its vocab.txt (a line
    `##rest`: the continuation piece of `rest`)."""
    from data_pipeline.tokenization.wordpiece import MAX_WORD_CHARS

    split = tokenizer.backend.pre_tokenizer.pre_tokenize_str
    added, taken = [], dict(tokenizer.token_to_id)
    for number, word in words:
        continuation = word.startswith("##")
        body = word[2:] if continuation else word
        form = tokenizer.normalize(body).strip()
        parts = [p for p, _ in split(form)] if form else []
        if len(parts) != 1 or len(form) > MAX_WORD_CHARS:
            raise ValueError(
                f"{flag}={pieces_file}:{number}: {word!r} is not one word of at most "
                f"{MAX_WORD_CHARS} characters after BERT's basic tokenization ({parts})"
            )
        token = "##" + form if continuation else form
        if token in taken:
            raise _already(pieces_file, flag, number, word, token, taken[token])
        if continuation:
            old = _greedy_continuation(form, tokenizer.token_to_id, tokenizer.unk_id)
        else:
            old = tokenizer.encode(form)
        taken[token] = tokenizer.vocab_size + len(added)
        added.append(NewPiece(word, number, token, tuple(old)))
    content = filesystem.read_bytes(tokenizer.vocab_file)
    if content and not content.endswith(b"\n"):
        content += b"\n"
    content += "".join(p.piece + "\n" for p in added).encode("utf-8")
    return ExtendedVocabulary(content, "vocab.txt", tokenizer.vocab_size, tuple(added))


# The extension of each tokenizer kind (spec.KINDS).
EXTENDERS = {"sentencepiece": extend_sentencepiece, "wordpiece": extend_wordpiece}
