"""Words → sub-tokens, and sentences too long for the model → overlapping windows.

Alignment. Each word of a sentence is tokenized on its own (`tokenizer.encode_batch` of the
words, as the official-style and Hugging Face NER code do with `is_split_into_words`): a
SentencePiece word gets its own "▁" start, a WordPiece word is whatever BERT's basic
tokenizer and WordPiece make of it (one piece per CJK character; "1996-08-30" several).
So a word's pieces never mix with its neighbours', and the word's label goes on its
*first* piece. A word that tokenizes to nothing (U+200B, U+3000, a lone combining accent,
text the normalizer deletes) still needs a prediction: it becomes one unknown-token piece
(`tokenizer.unk_id`), counted in `stats["empty_words"]`.

Windows. A sentence of more than `max_seq_length - 2` pieces ([CLS] and [SEP] take two) is
cut into windows of that many pieces, each starting `doc_stride` *pieces* after the
previous one (the official SQuAD `doc_stride`: the step between window starts, not the
overlap; a window may start or end inside a word). Every word is *predicted* in exactly
one window: the one where its first piece has the most context, the SQuAD max-context
score min(pieces to the left, pieces to the right) + 0.01 × window length, ties to the
earlier window. Windows cover every piece, so every word has such a window.
"""

from __future__ import annotations


def word_pieces(tokenizer, sentences, stats: dict | None = None) -> list[list[list[int]]]:
    """Piece ids of every word: [sentence][word] → non-empty list of ids. Each distinct
    word is encoded once (`encode_batch` caches as well)."""
    words = sorted({w for s in sentences for w in s.tokens})
    encoded = dict(zip(words, tokenizer.encode_batch(words)))
    empty = {w for w, ids in encoded.items() if not ids}
    for w in empty:
        encoded[w] = [tokenizer.unk_id]
    if stats is not None:
        stats["empty_words"] = stats.get("empty_words", 0) + sum(
            w in empty for s in sentences for w in s.tokens
        )
    return [[encoded[w] for w in s.tokens] for s in sentences]


def windows(num_pieces: int, max_pieces: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) windows over `num_pieces` pieces: `max_pieces` long, starting every
    `doc_stride` pieces, the last ending at the last piece (one window, maybe empty, for
    a sentence that fits)."""
    if max_pieces < 1 or doc_stride < 1:
        raise ValueError(
            f"windows need max_pieces >= 1 and doc_stride >= 1, got {max_pieces} and {doc_stride}"
        )
    spans, start = [], 0
    while True:
        length = min(num_pieces - start, max_pieces)
        spans.append((start, length))
        if start + length >= num_pieces:
            return spans
        start += min(length, doc_stride)


def best_window(spans: list[tuple[int, int]], position: int) -> int:
    """Index of the window giving piece `position` the most context (module docstring)."""
    return best_windows(spans, [position])[0]


def best_windows(spans: list[tuple[int, int]], positions) -> list[int]:
    """`best_window` of each of `positions` (ascending), over `spans` with ascending
    starts (as `windows` makes them). The windows ending before a position are passed
    once for all, so a sentence costs its windows plus, per position, the few windows
    that can hold it (about max_pieces / doc_stride), not positions × windows."""
    out, first = [], 0
    for position in positions:
        while first < len(spans) and spans[first][0] + spans[first][1] <= position:
            first += 1  # (ends before `position`, so before every later one)
        best, best_index, index = None, None, first
        while index < len(spans) and spans[index][0] <= position:
            start, length = spans[index]
            end = start + length - 1
            if position <= end:
                score = min(position - start, end - position) + 0.01 * length
                if best is None or score > best:
                    best, best_index = score, index
            index += 1
        if best_index is None:
            raise ValueError(f"piece {position} is in none of the windows {spans}")
        out.append(best_index)
    return out
