"""A request's rows in length-sorted groups, for the Python runners of files that pay for a
call's padding (`onnx_predict`, the kinds' lite runners): a LiteRT file computes every
position of a call; an ONNX file is traced packed (`albert_tf.modeling.packing`), so only its
attention cores see the padded grid.

Such a file pads a call to its longest row, so one call of B rows costs B × (the longest)
positions; sorting the rows by token count and calling the file on `group` rows at a time
costs each group its own longest row instead (128 SST-2 dev sentences in requests of 32,
the de-30k-clean SentencePiece model: groups of 8 cost 61% of the padded positions, groups
of 4 55%; the real tokens are 50%). The SavedModels do the same in their graph
(`text_ops.by_length`), in larger groups, with the packed encoder as the ONNX files.
Each row's outputs do not depend on the padding around it (attention masks it), so the
answers equal one call's to float rounding. No TensorFlow here.
"""

from __future__ import annotations

import numpy as np

# Rows per call of a file, by runtime (a file's `group`): the trade between padding and
# the rows a matmul gets, measured on ALBERT-base over 128 SST-2 / CoNLL dev texts
# (docs/performance.md). LiteRT (XNNPack): 8. ONNX Runtime: 4 (its files are traced packed,
# so a group's padding costs only attention; 4 was the fastest in float32 on SST-2).
FILE_GROUP = 8
ONNX_GROUP = 4

ID_INPUTS = ("input_ids", "input_mask", "segment_ids")


def row_lengths(input_mask: np.ndarray) -> np.ndarray:
    """int [B]: each row's tokens; [B, C, L] (multiple choice): its longest choice's."""
    lengths = input_mask.sum(-1)
    return lengths.max(-1) if lengths.ndim == 2 else lengths


def length_groups(lengths, group: int = FILE_GROUP) -> list[np.ndarray]:
    """Row indices [<= group] of consecutive rows in length order (stable), shortest first."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[i : i + group] for i in range(0, len(order), group)]


def run_grouped(run, inputs: dict, group: int = FILE_GROUP) -> dict:
    """`run(**inputs)` over int32 ids [B, L] or [B, C, L] (`ID_INPUTS`; other inputs with
    B rows are taken row by row, any other input passed whole to every call), computed in
    `length_groups` each cut to its longest row → every output [B, ...] in the request's
    order; an output per token ([rows, (C,) L, ...]) padded with zeros to the request's longest
    row, as one call would have laid it out."""
    mask = np.asarray(inputs["input_mask"])
    rows = len(mask)
    if rows <= group:
        return run(**inputs)
    lengths = row_lengths(mask)
    parts, order = [], []
    for take in length_groups(lengths, group):
        cut = max(int(lengths[take].max()), 1)
        call = {}
        for name, value in inputs.items():
            value = np.asarray(value)
            if name in ID_INPUTS:
                value = value[take][..., :cut]
            elif value.ndim and len(value) == rows:
                value = value[take]
            call[name] = value
        parts.append(run(**call))
        order.append(take)
    order = np.concatenate(order)
    out = {}
    for name in parts[0]:
        joined = np.concatenate(_same_width([p[name] for p in parts]))
        out[name] = np.empty_like(joined)
        out[name][order] = joined
    return out


def _same_width(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Per-token outputs ([rows, L, ...], [rows, C, L, ...]: each group's L is its own cut)
    zero-padded to the widest group's, the shape one call of the whole request gives."""
    widest = np.max([a.shape for a in arrays], axis=0)
    return [
        np.pad(a, [(0, 0)] + [(0, w - n) for w, n in zip(widest[1:], a.shape[1:])]) for a in arrays
    ]
