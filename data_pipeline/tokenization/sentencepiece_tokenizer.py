"""SentencePiece tokenization with ALBERT's normalization: one owner, in Python and in-graph.

The official code splits normalization between the caller (lowercasing) and the tokenizer
(whitespace, quotes, accents), and its tokenizer ignores `do_lower_case` when a
SentencePiece model is given; users got ids at serving time that differed from training.
Here `AlbertTokenizer` owns all of it, and `AlbertTokenizer.graph_tokenizer()` reproduces
it exactly inside a TensorFlow graph (tensorflow-text), for tf.data and SavedModels.

Normalization (official `preprocess_text`): collapse runs of whitespace and strip, replace
`` and '' by ", NFKD and drop combining characters (unless `keep_accents`), lowercase
(when `do_lower_case`). Encoding: SentencePiece pieces, then the official quirk: a piece
ending in "<digit>," is re-encoded without the comma and the comma stands alone.

Control characters are left to SentencePiece, as in the official code (and Hugging Face's):
its normalization (nmt_nfkc, ALBERT's) deletes U+0001-0008, U+000E-001B, U+007F, U+008F and
U+009F and reads U+200B-200F and U+FEFF as spaces (Python's whitespace is a space already).
The rest, NUL included, are unknown characters: "hello\\x00world" → "▁hell" "o" <unk>
"world" (a run of unknown characters is one <unk>). Several TensorFlow string ops stop at
the first NUL; the in-graph path avoids them, so both paths give these ids.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import unicodedata

from data_pipeline.io import filesystem
from data_pipeline.tokenization.graph_call import traced_once

SPIECE_UNDERLINE = "\u2581"
SPECIAL_PIECES = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")


def ends_in_digit_comma(piece: str) -> bool:
    """The official digit-comma rule's test: a piece ending in "<digit>," is re-encoded
    without its comma, the comma standing alone (module docstring)."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def normalize_text(text: str, do_lower_case: bool = True, keep_accents: bool = False) -> str:
    """ALBERT's text normalization (see module docstring). Python reference."""
    text = " ".join(text.split())
    text = text.replace("``", '"').replace("''", '"')
    if not keep_accents and not text.isascii():  # NFKD leaves ASCII unchanged
        text = unicodedata.normalize("NFKD", text).translate(_DROP_COMBINING)
    if do_lower_case:
        text = text.lower()
    return text


class _CombiningTable(dict):
    """`str.translate` table deleting combining characters, filled on first sight of each
    code point (C-speed lookups after that)."""

    def __missing__(self, cp: int):
        value = None if unicodedata.combining(chr(cp)) else cp
        self[cp] = value
        return value


_DROP_COMBINING = _CombiningTable()


def _char_class(predicate) -> str:
    """An RE2 character class of every code point for which `predicate(chr(cp))` holds, as
    ranges. Built from Python's own Unicode tables so that the in-graph normalization
    matches `normalize_text` character for character."""
    ranges, start, prev = [], None, None
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if predicate(chr(cp)):
            if start is None:
                start = cp
            elif cp != prev + 1:
                ranges.append((start, prev))
                start = cp
            prev = cp
    if start is not None:
        ranges.append((start, prev))
    parts = [f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges]
    return "[" + "".join(parts) + "]"


@functools.cache
def _whitespace_class() -> str:
    return _char_class(str.isspace)


@functools.cache
def _combining_class() -> str:
    return _char_class(unicodedata.combining)


class AlbertTokenizer:
    """A SentencePiece model plus ALBERT's normalization.

    Args:
      model_file: a SentencePiece `.model` with ALBERT's special pieces (`<pad>`, `<unk>`,
        `[CLS]`, `[SEP]`, `[MASK]`; any ids, conventionally 0-4). Missing: FileNotFoundError;
        empty, truncated, another kind of file or without those pieces: a one-line
        ValueError naming it.
      do_lower_case: lowercase after normalization (uncased models).
      keep_accents: keep combining marks (the official default drops them).
    """

    def __init__(self, model_file: str, do_lower_case: bool = True, keep_accents: bool = False):
        import sentencepiece as spm

        if not filesystem.isfile(model_file):
            raise FileNotFoundError(f"SentencePiece model not found: {model_file}")
        self.model_proto = filesystem.read_bytes(model_file)  # bytes: the file may be a URL
        self.model_file = model_file
        self.do_lower_case = do_lower_case
        self.keep_accents = keep_accents
        if not self.model_proto:
            raise ValueError(f"{model_file}: not a SentencePiece model (the file is empty)")
        try:
            self.sp = spm.SentencePieceProcessor(model_proto=self.model_proto)
        except RuntimeError:  # SentencePiece's own message names a line of its C++ source
            raise ValueError(
                f"{model_file}: not a SentencePiece model ({len(self.model_proto):,} bytes "
                "SentencePiece cannot parse: truncated, or another kind of file)"
            ) from None
        missing = [
            p for p in SPECIAL_PIECES if self.sp.piece_to_id(p) == self.sp.unk_id() and p != "<unk>"
        ]
        if missing:
            raise ValueError(
                f"{model_file}: not an ALBERT SentencePiece model, it lacks "
                f"the pieces {missing} (needed: {list(SPECIAL_PIECES)})"
            )
        from sentencepiece import sentencepiece_model_pb2

        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(self.model_proto)
        # With split_by_whitespace (SentencePiece's default, and ALBERT's) no piece crosses
        # a space, so encoding word by word equals encoding the whole text; it also keeps
        # every Viterbi lattice short. Python sentencepiece 0.2 and the copy inside
        # tensorflow-text break near-ties differently on lattices of ~1000 characters, so
        # whole-text encoding of long paragraphs would not match in-graph.
        self.split_words = proto.trainer_spec.split_by_whitespace
        ids = {p: self.sp.piece_to_id(p) for p in SPECIAL_PIECES}
        self.pad_id, self.unk_id = ids["<pad>"], ids["<unk>"]
        self.cls_id, self.sep_id, self.mask_id = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"]

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    @property
    def checksum(self) -> str:
        """sha256 of the model file: recorded with data so a mismatch can be detected."""
        return hashlib.sha256(self.model_proto).hexdigest()

    def normalize(self, text: str) -> str:
        return normalize_text(text, self.do_lower_case, self.keep_accents)

    def tokenize(self, text: str) -> list[str]:
        """Normalized text → pieces, with the official "<digit>," split."""
        text = self.normalize(text)
        if self.split_words:
            # One call per word: a list argument costs SentencePiece a thread pool per call
            # (~1.5 ms a sentence against ~0.1 ms), for the same per-word lattices.
            encode = self.sp.encode_as_pieces
            raw = [p for word in text.split(" ") for p in encode(word)]
        else:
            raw = self.sp.encode_as_pieces(text)
        pieces = []
        for piece in raw:
            if ends_in_digit_comma(piece):
                pieces.extend(self._digit_comma_split(piece))
            else:
                pieces.append(piece)
        return pieces

    def _digit_comma_split(self, piece: str) -> list[str]:
        """The official quirk for a piece ending in "<digit>,": the piece re-encoded
        without its comma (keeping whether it starts a word), then "," alone."""
        sub = self.sp.encode_as_pieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
        if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
            sub = sub[1:] if len(sub[0]) == 1 else [sub[0][1:]] + sub[1:]
        return sub + [","]

    def digit_comma_rewrites(self) -> dict[int, list[int]]:
        """{id: ids it becomes} for every "<digit>," piece of the vocabulary: the quirk
        depends only on the piece, so graphs without string ops apply it as a table."""
        return {
            i: [self.sp.piece_to_id(p) for p in self._digit_comma_split(self.sp.id_to_piece(i))]
            for i in sorted(self._digit_comma_ids)
        }

    def encode(self, text: str) -> list[int]:
        return [self.sp.piece_to_id(p) for p in self.tokenize(text)]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """`[encode(t) for t in texts]`, fast: for bulk data (pretraining, task data).

        Words are encoded once and cached (text repeats words; SentencePiece's per-call
        cost dominates otherwise); the "<digit>," quirk is looked up per id. Falls back to
        `encode` when the model does not split by whitespace.
        """
        if not self.split_words:
            return [self.encode(t) for t in texts]
        cache = self._word_cache
        if len(cache) > 2_000_000:  # bounded memory on endless corpora
            cache.clear()
        normalized = [self.normalize(t).split(" ") for t in texts]
        new = list({w for words in normalized for w in words if w not in cache})
        if new:
            digit_comma = self._digit_comma_ids
            for word, ids in zip(new, self.sp.encode(new)):
                if digit_comma.intersection(ids):
                    ids = self.encode(word)
                cache[word] = ids
        out = []
        for words in normalized:
            ids = []
            for w in words:
                ids += cache[w]
            out.append(ids)
        return out

    @functools.cached_property
    def _word_cache(self) -> dict:
        return {}

    @functools.cached_property
    def _digit_comma_ids(self) -> frozenset:
        pieces = (self.sp.id_to_piece(i) for i in range(self.vocab_size))
        return frozenset(i for i, p in enumerate(pieces) if ends_in_digit_comma(p))

    def vocab_tables(self):
        """Per-id numpy tables for masking, computed once per vocabulary.

        Returns (word_start [V] bool, special [V] bool, ordinary [K] int32):
          word_start: the piece begins a word for whole-word masking (official rule: it
            starts with "▁" or "<", is a single punctuation character, or holds a character
            that is not an ASCII letter, so digits and non-Latin scripts are words alone);
          special: control and unknown pieces (`<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]`);
            never random replacements (masking itself skips only [CLS]/[SEP] and padding,
            as the official code);
          ordinary: ids a random replacement may draw (not special, not unused).
        """
        import string

        import numpy as np

        letters = set(string.ascii_lowercase)
        punctuation = set(string.punctuation)
        v = self.vocab_size
        word_start = np.zeros(v, bool)
        special = np.zeros(v, bool)
        unused = np.zeros(v, bool)
        for i in range(v):
            piece = self.sp.id_to_piece(i)
            special[i] = self.sp.is_control(i) or self.sp.is_unknown(i)
            unused[i] = self.sp.is_unused(i)
            word_start[i] = (
                piece.startswith((SPIECE_UNDERLINE, "<"))
                or piece in punctuation
                or not all(c.lower() in letters for c in piece)
            )
        ordinary = np.flatnonzero(~special & ~unused).astype(np.int32)
        return word_start, special, ordinary

    def id_to_piece(self, token_id: int) -> str:
        return self.sp.id_to_piece(token_id)

    def graph_tokenizer(self) -> GraphTokenizer:
        return GraphTokenizer(
            self.model_proto, self.do_lower_case, self.keep_accents, self.split_words
        )


def _lower_utf8(text):
    """`tf.strings.lower(text, encoding="utf-8")`, NUL bytes kept: the op stops at the first
    NUL ("a\\x00B" → "a"), so each NUL-free part is lowered alone and the parts joined again
    with their NULs (text of any shape)."""
    import tensorflow as tf

    shape = tf.shape(text)
    parts = tf.strings.split(tf.reshape(text, [-1]), "\x00")  # [N, (P)]
    lengths = parts.row_lengths()
    values = tf.strings.lower(parts.flat_values, encoding="utf-8")
    last = tf.equal(
        tf.ragged.range(lengths).flat_values, tf.gather(lengths - 1, parts.value_rowids())
    )
    # (reduce_join's separator is an op attribute, cut at a NUL: the NUL goes in a tensor)
    values = tf.where(last, values, tf.strings.join([values, tf.constant("\x00")]))
    return tf.reshape(tf.strings.reduce_join(parts.with_flat_values(values), axis=1), shape)


class GraphTokenizer:
    """`AlbertTokenizer.encode` as TensorFlow ops (tensorflow-text SentencePiece), for
    tf.data pipelines and SavedModels that take raw strings.

    Call: string tensor [batch] → int32 RaggedTensor [batch, (pieces)], equal to
    `AlbertTokenizer.encode` on each string (tested on real corpora).

    `name`: the model resource's name. Two SentencePiece models in one SavedModel need
    distinct names: tensorflow-text's resources of the same name are one model once the
    SavedModel is loaded (the first), whatever each held when saved.
    """

    def __init__(
        self,
        model_proto: bytes,
        do_lower_case: bool = True,
        keep_accents: bool = False,
        split_words: bool = True,
        name: str | None = None,
    ):
        import tensorflow_text as tf_text

        self.split_words = split_words
        self.do_lower_case = do_lower_case
        self.keep_accents = keep_accents
        self.sp = tf_text.SentencepieceTokenizer(model=model_proto, out_type="string", name=name)
        self.whitespace = _whitespace_class() + "+"
        self.combining = _combining_class()
        self._encode = traced_once(self._encode_ops)  # (graph_call)

    def normalize(self, text):
        import tensorflow as tf
        import tensorflow_text as tf_text

        text = tf.strings.regex_replace(text, self.whitespace, " ")
        text = tf.strings.regex_replace(text, "^ | $", "")
        text = tf.strings.regex_replace(text, "``|''", '"')
        if not self.keep_accents:
            text = tf_text.normalize_utf8(text, "NFKD")
            text = tf.strings.regex_replace(text, self.combining, "")
        if self.do_lower_case:
            text = _lower_utf8(text)
        return text

    def tokenize(self, text):
        """string [batch] → string RaggedTensor [batch, (pieces)]."""
        import tensorflow as tf

        text = self.normalize(text)
        if self.split_words:  # see AlbertTokenizer.__init__
            pieces = self.sp.tokenize(tf.strings.split(text, " ")).merge_dims(1, 2)
        else:
            pieces = self.sp.tokenize(text)  # [B, (P)]
        flat = pieces.flat_values  # [N]
        length = tf.strings.length(flat, unit="UTF8_CHAR")
        split = tf.strings.regex_full_match(flat, r"(?s).*\p{Nd},") & (length > 1)
        # Only the M pieces ending in "<digit>," are re-encoded, without the comma and ▁.
        target = tf.boolean_mask(flat, split)
        target_length = tf.boolean_mask(length, split)
        body = tf.strings.regex_replace(
            tf.strings.substr(
                target, tf.zeros_like(target_length), target_length - 1, unit="UTF8_CHAR"
            ),
            SPIECE_UNDERLINE,
            "",
        )
        sub = self.sp.tokenize(body)  # [M, (K)]
        # Where the original piece has no leading ▁ but the first sub-piece has one, drop
        # that ▁ (and the sub-piece itself when it is a lone ▁), as the official code does.
        starts = tf.strings.regex_full_match(target, SPIECE_UNDERLINE + "(?s).*")
        values = sub.flat_values
        is_first = tf.equal(tf.ragged.range(sub.row_lengths()).flat_values, 0)
        fix = (
            tf.gather(~starts, sub.value_rowids())
            & is_first
            & tf.strings.regex_full_match(values, SPIECE_UNDERLINE + "(?s).*")
        )
        keep = ~(fix & tf.equal(values, SPIECE_UNDERLINE))
        values = tf.where(fix, tf.strings.regex_replace(values, "^" + SPIECE_UNDERLINE, ""), values)
        sub = tf.ragged.boolean_mask(sub.with_flat_values(values), sub.with_flat_values(keep))
        comma = tf.RaggedTensor.from_tensor(tf.fill(tf.shape(target), ",")[:, None])
        replaced = tf.concat([sub, comma], axis=1)  # [M, (K+1)]
        original = tf.RaggedTensor.from_tensor(flat[:, None])  # [N, 1]
        # Row i of the result: piece i itself, or its replacement (rows N.. of `both`).
        both = tf.concat([original, replaced], axis=0)  # [N+M, (.)]
        index = tf.where(
            split,
            tf.shape(flat, out_type=tf.int64)[0] + tf.cumsum(tf.cast(split, tf.int64)) - 1,
            tf.range(tf.shape(flat, out_type=tf.int64)[0]),
        )
        rows = tf.gather(both, index)  # [N, (.)]
        return pieces.with_flat_values(rows).merge_dims(1, 2)

    def __call__(self, text):
        return self._encode(text)

    def _encode_ops(self, text):
        import tensorflow as tf

        return tf.cast(self.sp.string_to_id(self.tokenize(text)), tf.int32)
