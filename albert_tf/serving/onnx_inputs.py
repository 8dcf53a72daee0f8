"""Text → the ids an ONNX file takes, in Python: the text front end the LiteRT files run in
their graph (`litert_text.pack`) and the SavedModels in theirs (`text_ops.pack`), here over
the Python tokenizer of the vocabulary recorded beside the file, so the ids are the ones
training packed (`data_pipeline.classification.features`: `[CLS] a [SEP] (b [SEP])`,
the longer of the two cut first, `truncate_pair`).

ONNX's standard operators have no tokenizer (docs/design/onnx.md: onnxruntime-extensions'
SentencePiece op, tried), so `albert_tf.serving.onnx_predict` calls `packed_inputs` with
the inputs a kind's runner gives a text-in file, in the order its metadata's
`text_inputs` names them. No kind is named here: the layout follows the inputs' shapes.
No TensorFlow here.
"""

from __future__ import annotations

import numpy as np

from data_pipeline.classification.features import truncate_pair

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def _text(x) -> str:
    return x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)


def pack_ids(tokenizer, a: list[int], b: list[int], max_seq_length: int):
    """(ids, segments) of one row: `[CLS] a [SEP]`, and `b [SEP]` when b has tokens, cut
    to `max_seq_length` as training cuts it (the copies, not `a` and `b`, are cut)."""
    a, b = list(a), list(b)
    truncate_pair(a, b, max_seq_length - (3 if b else 2))
    ids = [tokenizer.cls_id] + a + [tokenizer.sep_id]
    segments = [0] * len(ids)
    if b:
        ids += b + [tokenizer.sep_id]
        segments += [1] * (len(b) + 1)
    return ids, segments


def _padded(rows, length: int) -> dict:
    """[(ids, segments) or None] → input_ids, input_mask, segment_ids int32 [N, length]
    (None: an all-zero row, "no such choice")."""
    out = {k: np.zeros([len(rows), length], np.int32) for k in INPUT_NAMES}
    for i, row in enumerate(rows):
        if row is None:
            continue
        ids, segments = row
        out["input_ids"][i, : len(ids)] = ids
        out["input_mask"][i, : len(ids)] = 1
        out["segment_ids"][i, : len(ids)] = segments
    return out


def packed_inputs(tokenizer, max_seq_length: int, first, second=None) -> dict:
    """input_ids, input_mask, segment_ids int32, padded to the request's longest row:

      first [B] texts, second None or [B] texts → [B, L]: each `[CLS] first [SEP]
        (second [SEP])` ("" second: a single text);
      first [B], second [B, C] texts (the choices of each first) → [B, C, L]: the first
        text paired with each choice; a choice without tokens ("" or padding) all zeros,
        as the LiteRT file's graph zeroes it.

    L is at least 2 (`[CLS] [SEP]`); an empty request gives 0 rows."""
    encode = lambda x: tokenizer.encode(_text(x))  # noqa: E731
    firsts = [encode(x) for x in np.asarray(first, dtype=object).reshape(-1)]
    if second is None:
        second = [""] * len(firsts)
    second = np.asarray(second, dtype=object)
    if second.ndim == 2:
        rows = []
        for a, choices in zip(firsts, second):
            for choice in choices:
                b = encode(choice)
                rows.append(pack_ids(tokenizer, a, b, max_seq_length) if b else None)
        length = max([len(r[0]) for r in rows if r is not None] + [2])
        flat = _padded(rows, length)
        return {k: v.reshape(second.shape + (length,)) for k, v in flat.items()}
    rows = [
        pack_ids(tokenizer, a, encode(b), max_seq_length)
        for a, b in zip(firsts, second.reshape(-1))
    ]
    return _padded(rows, max([len(r[0]) for r in rows] + [2]))
