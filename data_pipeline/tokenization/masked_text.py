"""Text with literal "[MASK]" tokens → model ids with the tokenizer's mask id there (the
input side of fill-mask).

Neither tokenizer reads "[MASK]" in text as the mask: SentencePiece splits it into pieces
("▁[", "mas", "k", "]"), and BERT's basic tokenizer into "[", "mask", "]" (as officially).
So the text is cut at each literal "[MASK]" (case-sensitive), the fragments are tokenized
and one mask id goes between them: each mask stands for exactly one piece.

Word boundaries follow the text. A fragment after a space (or at the start) begins a word
and is encoded as usual. A fragment glued to the mask before it ("Pa[MASK]s", "[MASK].")
continues the masked piece's word: its first word is encoded as a word's inside, as the
model saw such pieces in pretraining:
  SentencePiece: without the "▁" SentencePiece puts before every word (the model's
    `add_dummy_prefix` turned off for it), then the official "<digit>," split;
  WordPiece: greedy longest match over the "##" continuation pieces (a "[UNK]" when there
    is none), unless it is punctuation or a CJK character, which are words of their own.
Text glued to the mask's left needs nothing: the mask is then inside or at the end of
that word, and the pieces before it are that word's beginning either way.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np

from data_pipeline.tokenization.sentencepiece_tokenizer import SPIECE_UNDERLINE, AlbertTokenizer
from data_pipeline.tokenization.wordpiece import (
    CONTINUATION,
    MAX_WORD_CHARS,
    WordPieceTokenizer,
    _punctuation,
)

MASK_TOKEN = "[MASK]"


@dataclasses.dataclass(frozen=True)
class MaskedText:
    """One text ready for the model.

    text: the text as given.
    input_ids: `[CLS] pieces [SEP]`, the mask id at each mask.
    mask_positions: the index in `input_ids` of each mask, in text order.
    mask_spans: (start, end) character offsets of each "[MASK]" in `text`.
    """

    text: str
    input_ids: list[int]
    mask_positions: list[int]
    mask_spans: list[tuple[int, int]]


def encode_masked(tokenizer, text: str, max_seq_length: int | None = None) -> MaskedText:
    """`text` holding one or more "[MASK]" → `MaskedText` (module docstring).

    Raises a one-line ValueError when the text has no "[MASK]", or when its ids would not
    fit `max_seq_length` (no truncation: a cut could drop a mask).
    """
    if not isinstance(tokenizer, (AlbertTokenizer, WordPieceTokenizer)):
        raise TypeError(
            f"{type(tokenizer).__name__}: expected an AlbertTokenizer or a WordPieceTokenizer"
        )
    spans = [(m.start(), m.end()) for m in re.finditer(re.escape(MASK_TOKEN), text)]
    if not spans:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ValueError(f"no {MASK_TOKEN} in the text to fill: {shown!r}")
    bounds = [0] + [b for span in spans for b in span] + [len(text)]
    fragments = [text[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]
    ids, positions = [tokenizer.cls_id], []
    for i, fragment in enumerate(fragments):
        if i:
            positions.append(len(ids))
            ids.append(tokenizer.mask_id)
        glued = i > 0 and fragment[:1] != "" and not fragment[0].isspace()
        ids += _glued_fragment(tokenizer, fragment) if glued else tokenizer.encode(fragment)
    ids.append(tokenizer.sep_id)
    if max_seq_length is not None and len(ids) > max_seq_length:
        raise ValueError(
            f"the text takes {len(ids)} tokens with [CLS] and [SEP], more than "
            f"max_seq_length={max_seq_length}: {text[:40]!r}..."
        )
    return MaskedText(text, ids, positions, spans)


def padded_batch(batch: list[MaskedText], length: int | None = None):
    """The model inputs of encoded texts: (input_ids [B, S], input_mask [B, S],
    masked_lm_positions [B, M]) as int32 arrays, S = `length` or the batch's longest, M the
    most masks of a text (a text's extra slots read position 0, [CLS]: their outputs are
    not read)."""
    length = length or max(len(e.input_ids) for e in batch)
    masks = max(len(e.mask_positions) for e in batch)
    ids = np.zeros((len(batch), length), np.int32)
    input_mask = np.zeros_like(ids)
    positions = np.zeros((len(batch), masks), np.int32)
    for row, e in enumerate(batch):
        ids[row, : len(e.input_ids)] = e.input_ids
        input_mask[row, : len(e.input_ids)] = 1
        positions[row, : len(e.mask_positions)] = e.mask_positions
    return ids, input_mask, positions


def filled_text(text: str, span: tuple[int, int], token: str, wordpiece: bool) -> str:
    """`text` with the "[MASK]" at `span` replaced by the piece `token`'s text (other masks
    kept): a SentencePiece "▁" is a space (none at a word start: the text before the mask
    empty or ending in whitespace); a WordPiece "##" is dropped, and a word-start piece
    beginning with a letter or digit right after a letter or digit gets a space. (One
    rule for the Python fill_mask and the on-device runner; the SavedModel's is
    albert_tf.serving.tasks.fill_mask.masked_text_ops.filled_texts.)"""
    before = text[: span[0]]
    if wordpiece:
        if token.startswith(CONTINUATION):
            surface = token[len(CONTINUATION) :]
        else:
            glued = before[-1:].isalnum() and token[:1].isalnum()
            surface = " " + token if glued else token
    else:
        surface = token.replace(SPIECE_UNDERLINE, " ")
        if not before or before[-1].isspace():
            surface = surface.lstrip(" ")
    return before + surface + text[span[1] :]


def _glued_fragment(tokenizer, fragment: str) -> list[int]:
    """Ids of a fragment that continues the masked piece's word (module docstring)."""
    normalized = tokenizer.normalize(fragment)
    if isinstance(tokenizer, WordPieceTokenizer):
        words = tokenizer.backend.pre_tokenizer.pre_tokenize_str(normalized)
        if not words:
            return []
        head, (start, end) = words[0]
        if start != 0 or (len(head) == 1 and _punctuation(head)):
            return tokenizer.encode(normalized)  # a word of its own (CJK, punctuation)
        return _wordpiece_inside(tokenizer, head) + tokenizer.encode(normalized[end:])
    head, _, rest = normalized.partition(" ")
    return _sentencepiece_inside(tokenizer, head) + tokenizer.encode(rest)


def _wordpiece_inside(tokenizer: WordPieceTokenizer, word: str) -> list[int]:
    """A word's inside: greedy longest match over "##" pieces only, "[UNK]" if none fits
    (as the official WordpieceTokenizer does for a whole word)."""
    if len(word) > MAX_WORD_CHARS:
        return [tokenizer.unk_id]
    vocab, ids, start = tokenizer.token_to_id, [], 0
    while start < len(word):
        end = len(word)
        while end > start and CONTINUATION + word[start:end] not in vocab:
            end -= 1
        if end == start:
            return [tokenizer.unk_id]
        ids.append(vocab[CONTINUATION + word[start:end]])
        start = end
    return ids


def _sentencepiece_inside(tokenizer: AlbertTokenizer, word: str) -> list[int]:
    """A normalized word's inside: SentencePiece without the dummy "▁" prefix, then the
    official "<digit>," split (the tokenizer's own table of it)."""
    if not word:
        return []
    ids = _no_prefix_processor(tokenizer.model_proto).encode(word)
    rewrites = _digit_comma_rewrites(tokenizer)
    return [j for i in ids for j in rewrites.get(i, [i])]


def no_prefix_model_proto(model_proto: bytes) -> bytes:
    """The serialized SentencePiece model with `add_dummy_prefix` off (no "▁" before the
    text): a word's inside (also for the in-graph rule,
    albert_tf.serving.tasks.fill_mask.masked_text_ops)."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model_proto)
    proto.normalizer_spec.add_dummy_prefix = False
    return proto.SerializeToString()


@functools.lru_cache(maxsize=4)
def _no_prefix_processor(model_proto: bytes):
    """The SentencePiece model with `add_dummy_prefix` off (no "▁" before the text)."""
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_proto=no_prefix_model_proto(model_proto))


_REWRITES: dict[bytes, dict[int, list[int]]] = {}


def _digit_comma_rewrites(tokenizer: AlbertTokenizer) -> dict[int, list[int]]:
    """The tokenizer's "<digit>," table, built once per SentencePiece model."""
    key = tokenizer.model_proto  # (bytes keep their hash once computed)
    if key not in _REWRITES:
        _REWRITES[key] = tokenizer.digit_comma_rewrites()
    return _REWRITES[key]
