"""BERT's basic tokenization and WordPiece as tensorflow-text models that LiteRT runs.

On-device models (LiteRT) have no string ops. `data_pipeline.tokenization.wordpiece`'s graph
tokenizer
uses regexes, lowercasing and Unicode normalization, none of which LiteRT has, and
tensorflow-text's `FastBertNormalizer` (a LiteRT op) does not lowercase as BERT does (its
lowercasing folds compatibility characters: "，" → ","). What LiteRT does run, through
`tensorflow_text.tflite_registrar`, are tensorflow-text's FastSentencepiece and
FastWordpiece ops. `baked_wordpiece` builds three models for them that together give
`WordPieceTokenizer.encode`'s ids:

  1. a SentencePiece model used only for its `precompiled_charsmap`, a per-character
     rewrite table holding steps 1-4 of `data_pipeline.tokenization.wordpiece` (cleaning,
     whitespace,
     CJK spacing, case and accents, a word per punctuation character), one rule per code
     point computed with the Python tokenizer's own normalizer; each resulting character
     is written as a code point of Supplementary Private Use Area-A (`transliterate`), so
     that every character takes 4 UTF-8 bytes, and characters the vocabulary does not
     hold become one `UNKNOWN` character. Its pieces are those single characters and "▁"
     (SentencePiece's space), so text becomes one id per character;
  2. a `joiner` WordPiece vocabulary that turns those ids back into text (FastWordpiece's
     detokenizer: "▁" → a word-start marker `WORD`, a character → "##" + it, so words come
     out as `WORD` + characters, separated by spaces). tensorflow-text's
     FastSentencepieceDetokenize would do it directly but crashes the LiteRT interpreter
     (a segmentation fault once its string output is read; ai-edge-litert 2.3);
  3. the WordPiece vocabulary itself, written in those characters (word-start tokens
     behind `WORD`, continuations behind "##"; same order, so the same ids), for
     FastWordpiece's tokenizer, which splits the words at the spaces and runs the greedy
     longest-match-first WordPiece. A word longer than 100 characters is one [UNK]
     (`max_bytes_per_word` = 4 bytes × (100 + the marker)), as officially.

Tested through the LiteRT interpreter: the ids equal `WordPieceTokenizer.encode`'s on every
line of ChnSentiCorp dev and the Chinese news, and on control characters, full-width forms
and words of 100 and 101 characters. What a per-character table cannot express, and so
differs:
  * final sigma: Python's `str.lower()` turns "Σ" at the end of a word into "ς"; the table
    gives "σ" (uncased models, Greek capitals only; as `baked_normalization`);
  * canonical reordering: NFD of a word may reorder combining marks across characters;
    the table decomposes each character alone (only marks that are not dropped matter);
  * NUL (U+0000), which BERT deletes: a rewrite table cannot hold it, so it makes its word
    [UNK]; `albert_tf.serving.tflite_predict` deletes it before the file.
"""

from __future__ import annotations

import dataclasses
import sys

from data_pipeline.tokenization.wordpiece import (
    _UNUSED,
    CONTINUATION,
    MAX_WORD_CHARS,
    SPECIAL_TOKENS,
    WordPieceTokenizer,
    _punctuation,
)

# Characters of the rewritten text: Supplementary Private Use Area-A, 4 UTF-8 bytes each,
# neither whitespace nor punctuation nor CJK for FastWordpiece's own word split.
FIRST_CODE_POINT = 0xF0000
LAST_CODE_POINT = 0xFFFFD
SPACE_PIECE = "\u2581"  # SentencePiece's escaped space
BYTES_PER_CHARACTER = 4


@dataclasses.dataclass(frozen=True)
class BakedWordPiece:
    """The three models of the module docstring.

    normalizer_model: serialized SentencePiece ModelProto (unigram, pieces "<unk>", "▁"
      and the characters; ids [0, 1, 2, ...]) with the rewrite table.
    joiner_vocab: FastWordpiece vocabulary indexed by the normalizer's ids: `joiner_vocab[0]`
      (the normalizer's "<unk>", only NUL) glues `UNKNOWN_JOINED` into its word.
    vocab: the WordPiece vocabulary, token i written in the rewritten characters (special
      tokens and [unusedN] as they are: text never produces them).
    unknown_token: `vocab`'s [UNK].
    max_bytes_per_word: FastWordpiece's: longer words are one [UNK].
    """

    normalizer_model: bytes
    joiner_vocab: tuple[str, ...]
    vocab: tuple[str, ...]
    unknown_token: str
    max_bytes_per_word: int


def _body(token: str) -> tuple[bool, str]:
    """(continuation, characters) of a vocabulary token."""
    if token.startswith(CONTINUATION) and len(token) > len(CONTINUATION):
        return True, token[len(CONTINUATION) :]
    return False, token


def _literal(token: str) -> bool:
    """Special tokens and [unusedN]: kept as they are (text never produces them)."""
    return token in SPECIAL_TOKENS or bool(_UNUSED.fullmatch(token))


def transliterate(vocab: list[str]) -> dict[str, str]:
    """{character of the vocabulary's tokens: its code point in the rewritten text}, in
    order of first appearance; the three code points after them are `UNKNOWN` (a
    character the vocabulary lacks), `WORD` (the word-start marker) and `UNKNOWN_JOINED`
    (the joiner's unknown), see `markers`."""
    chars = {}
    for token in vocab:
        if not _literal(token):
            for c in _body(token)[1]:
                chars.setdefault(c, None)
    if len(chars) + 3 > LAST_CODE_POINT - FIRST_CODE_POINT + 1:
        raise ValueError(
            f"the vocabulary holds {len(chars):,} distinct characters; on-device WordPiece "
            f"takes at most {LAST_CODE_POINT - FIRST_CODE_POINT - 2:,}"
        )
    return {c: chr(FIRST_CODE_POINT + i) for i, c in enumerate(chars)}


def markers(table: dict[str, str]) -> tuple[str, str, str]:
    """(UNKNOWN, WORD, UNKNOWN_JOINED) of a `transliterate` table."""
    n = FIRST_CODE_POINT + len(table)
    return chr(n), chr(n + 1), chr(n + 2)


def rewrite_rules(tokenizer: WordPieceTokenizer, table: dict[str, str]) -> list[tuple[str, str]]:
    """(character, rewritten text) for every code point but NUL and the surrogates: the
    tokenizer's own normalization of the character alone, each resulting character
    transliterated (or `UNKNOWN`), whitespace as " ", punctuation between spaces."""
    unknown = markers(table)[0]
    normalize = tokenizer.normalize
    rules = []
    for cp in range(1, sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        out = []
        for x in normalize(c):
            if x.isspace():
                out.append(" ")
            elif _punctuation(x):
                out.append(f" {table.get(x, unknown)} ")
            else:
                out.append(table.get(x, unknown))
        target = "".join(out)
        if target != c:
            rules.append((c, target))
    return rules


def _normalizer_model(rules, pieces: list[str], do_lower_case: bool) -> bytes:
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    compiled = model_pb2.NormalizerSpec()
    compiled.ParseFromString(
        spm.SentencePieceNormalizer(norm_map=rules).serialized_normalizer_spec()
    )
    proto = model_pb2.ModelProto()
    proto.trainer_spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    proto.trainer_spec.vocab_size = len(pieces) + 2
    spec = proto.normalizer_spec
    spec.name = f"bert_basic(lower={int(do_lower_case)})"
    spec.precompiled_charsmap = compiled.precompiled_charsmap
    spec.add_dummy_prefix = True  # every word, the first too, starts with "▁"
    spec.remove_extra_whitespaces = True
    spec.escape_whitespaces = True
    unk = proto.pieces.add()
    unk.piece, unk.score, unk.type = "<unk>", 0.0, model_pb2.ModelProto.SentencePiece.UNKNOWN
    for piece in [SPACE_PIECE, *pieces]:  # single characters: one segmentation only
        entry = proto.pieces.add()
        entry.piece, entry.score = piece, -1.0
    return proto.SerializeToString()


def _bake(tokenizer: WordPieceTokenizer) -> BakedWordPiece:
    vocab = tokenizer.vocab
    table = transliterate(vocab)
    unknown, word, unknown_joined = markers(table)
    pieces = [*table.values(), unknown]
    joiner = [CONTINUATION + unknown_joined, word] + [CONTINUATION + p for p in pieces]

    def written(token: str) -> str:
        if _literal(token):
            return token
        continuation, body = _body(token)
        body = "".join(table[c] for c in body)
        return CONTINUATION + body if continuation else word + body

    return BakedWordPiece(
        normalizer_model=_normalizer_model(
            rewrite_rules(tokenizer, table), pieces, tokenizer.do_lower_case
        ),
        joiner_vocab=tuple(joiner),
        vocab=tuple(written(t) for t in vocab),
        unknown_token=vocab[tokenizer.unk_id],
        max_bytes_per_word=BYTES_PER_CHARACTER * (MAX_WORD_CHARS + 1),
    )


_CACHE: dict[tuple, BakedWordPiece] = {}


def baked_wordpiece(tokenizer: WordPieceTokenizer) -> BakedWordPiece:
    """The models of `tokenizer` (module docstring): one pass over every code point, made
    once per process, vocabulary and casing."""
    key = (tokenizer.checksum, tokenizer.do_lower_case)
    if key not in _CACHE:
        if len(_CACHE) >= 4:
            _CACHE.clear()
        _CACHE[key] = _bake(tokenizer)
    return _CACHE[key]
