"""Tokens with the characters of the original text they cover: what lets SQuAD answers be
located in tokens and predicted spans be cut back out of the context.

Answers are located at the character level, through the same normalization the model sees
(ALBERT's: whitespace collapsed, ``/'' → ", accents stripped, lowercased), so that every
token knows which characters of the *original* context it covers:

  1. The context is split into words at whitespace (no SentencePiece piece crosses a
     space — `AlbertTokenizer`). Each word is normalized character by character, keeping
     for every normalized character the original character it came from.
  2. Each normalized word is encoded by SentencePiece with byte offsets (`return_type=
     "proto"`), and ALBERT's "<digit>," split is applied with offsets too; the ids equal
     `AlbertTokenizer.encode` (tested on all of SQuAD dev).
  3. Token i covers original characters [token_start[i], token_end[i]). An answer span
     [s, e) maps to the first token ending after s and the last token starting before e;
     a predicted token span maps back to context[token_start[a]:token_end[b]].

With a WordPiece vocab.txt, steps 1-2 are BERT's basic tokenizer and WordPiece with
offsets (`data_pipeline.squad.wordpiece_offsets`; each CJK character a word of its own,
unlike the official code's whitespace "doc tokens"); step 3 and everything below are the
same (`offset_tokenizer` picks the encoder by the tokenizer's kind). Answers are located
and windows cut in `data_pipeline.squad.features`.
"""

from __future__ import annotations

import re
import unicodedata

from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SPIECE_UNDERLINE,
    ends_in_digit_comma,
)

_WORD = re.compile(r"\S+")


class OffsetTokenizer:
    """`AlbertTokenizer` ids plus, for each token, the original characters it covers."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._words: dict[str, tuple] = {}

    def _normalize_word(self, word: str) -> tuple[str, list[int], list[int]]:
        """(normalized word, owner start [n], owner end [n]): normalized character j comes
        from original characters [start[j], end[j]) of `word`."""
        tok = self.tokenizer
        chars, starts, ends = [], [], []
        i = 0
        while i < len(word):
            if word[i : i + 2] in ("``", "''"):
                out, width = '"', 2
            else:
                c = word[i]
                out, width = c, 1
                if not tok.keep_accents and not c.isascii():
                    out = "".join(
                        x for x in unicodedata.normalize("NFKD", c) if not unicodedata.combining(x)
                    )
                if tok.do_lower_case:
                    out = out.lower()
            for x in out:
                chars.append(x)
                starts.append(i)
                ends.append(i + width)
            i += width
        normalized = tok.normalize(word)
        if len(normalized) != len(chars):  # context-dependent case mapping: whole word
            starts, ends = [0] * len(normalized), [len(word)] * len(normalized)
        return normalized, starts, ends

    def _encode_words(self, words: list[str]) -> None:
        """Fills the cache: word → (ids, start offsets, end offsets) within the word."""
        sp = self.tokenizer.sp
        normalized = [self._normalize_word(w) for w in words]
        parts, owners = [], []
        for n, (text, _, _) in enumerate(normalized):
            for m in _WORD.finditer(text):  # NFKD can turn a character into spaces
                parts.append(m.group())
                owners.append((n, m.start()))
        protos = sp.encode(parts, return_type="proto") if parts else []
        results = [([], [], []) for _ in words]
        for part, (n, base), proto in zip(parts, owners, protos):
            text, starts, ends = normalized[n]
            char_of_byte = _char_index_of_bytes(part)
            ids, tok_start, tok_end = results[n]
            for piece in proto.pieces:
                b = char_of_byte[piece.begin] + base
                e = char_of_byte[piece.end] + base
                for pid, (pb, pe) in self._split_digit_comma(piece.piece, piece.id, b, e):
                    ids.append(pid)
                    if pe > pb:
                        tok_start.append(starts[pb])
                        tok_end.append(ends[pe - 1])
                    else:  # a bare "▁": no character of its own
                        at = starts[pb] if pb < len(starts) else len(words[n])
                        tok_start.append(at)
                        tok_end.append(at)
        for w, r in zip(words, results):
            self._words[w] = r

    def _split_digit_comma(self, piece: str, pid: int, b: int, e: int):
        """ALBERT's "<digit>," rule (`AlbertTokenizer.tokenize`) with character spans."""
        if not ends_in_digit_comma(piece):
            return [(pid, (b, e))]
        sp = self.tokenizer.sp
        sub = sp.encode_as_pieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
        if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
            sub = sub[1:] if len(sub[0]) == 1 else [sub[0][1:]] + sub[1:]
        out, at = [], b
        for s in sub:
            width = len(s.replace(SPIECE_UNDERLINE, ""))
            out.append((sp.piece_to_id(s), (at, min(at + width, e - 1))))
            at = min(at + width, e - 1)
        out.append((sp.piece_to_id(","), (e - 1, e)))
        return out

    def encode(self, text: str) -> tuple[list[int], list[int], list[int]]:
        """(ids, token start chars, token end chars) of `text` (offsets into `text`)."""
        matches = list(_WORD.finditer(text))
        new = list({m.group() for m in matches if m.group() not in self._words})
        if new:
            if len(self._words) > 1_000_000:
                self._words.clear()
            self._encode_words(new)
        ids, starts, ends = [], [], []
        for m in matches:
            w_ids, w_starts, w_ends = self._words[m.group()]
            ids += w_ids
            starts += [m.start() + s for s in w_starts]
            ends += [m.start() + s for s in w_ends]
        return ids, starts, ends


def offset_tokenizer(tokenizer):
    """The tokens-with-offsets encoder for `tokenizer`'s kind: `OffsetTokenizer`
    (SentencePiece) or `WordPieceOffsetTokenizer` (a WordPiece vocab.txt,
    data_pipeline.squad.wordpiece_offsets). Both have `encode(text)` → (ids, token start
    chars, token end chars), so features and postprocessing never branch on the kind."""
    from data_pipeline.tokenization.spec import WORDPIECE, tokenizer_kind

    if tokenizer_kind(tokenizer) == WORDPIECE:
        from data_pipeline.squad.wordpiece_offsets import WordPieceOffsetTokenizer

        return WordPieceOffsetTokenizer(tokenizer)
    return OffsetTokenizer(tokenizer)


def _char_index_of_bytes(text: str) -> list[int]:
    """For every UTF-8 byte offset 0..len(bytes) of `text`, the character index there."""
    out = []
    for i, c in enumerate(text):
        out.extend([i] * len(c.encode("utf-8")))
    out.append(len(text))
    return out
