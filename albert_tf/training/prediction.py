"""Inference over a whole dataset: the model's outputs for every batch, gathered in numpy.

The fine-tuning runners predict several times with one model (an evaluation every
`eval_every` steps, then the dev, test and tuning sets); each call would trace a new
`tf.function`, and the last, shorter batch another. So the traced forward pass is kept per
model (a weak reference: it goes with the model) and traced with `reduce_retracing`, and
every later call reuses it.

Batches grouped by length (data_pipeline.length_buckets) come in several lengths: their
per-token arrays (SQuAD's start/end logits and the features carried with them) are padded
back to one length before they are joined (`per_token`).
"""

from __future__ import annotations

import weakref

import numpy as np

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")

_FORWARD = weakref.WeakKeyDictionary()


def _forward(model):
    """The model's traced inference pass (training=False), one per model."""
    forward = _FORWARD.get(model)
    if forward is None:
        import tensorflow as tf

        ref = weakref.ref(model)  # the function must not keep its model alive
        forward = tf.function(lambda batch: ref()(batch, training=False), reduce_retracing=True)
        _FORWARD[model] = forward
    return forward


def predict_logits(
    model, dataset, outputs=("logits",), carry=(), order_by=None, per_token=None, length=None
) -> dict[str, np.ndarray]:
    """Runs `model` over every batch of `dataset` (dicts holding MODEL_INPUTS) and returns
    {name: array} for each of the model's `outputs` (e.g. logits [N, labels]; start/end
    logits [N, S]) and each batch feature named in `carry` (passed through unchanged, e.g.
    label_ids [N]), concatenated over the batches. With `order_by` (a feature holding each
    row's index, e.g. "example_index"), row i of every array is the row whose index is i;
    otherwise rows are in dataset order.

    `per_token` ({name: fill value}, e.g. {"start_logits": -1e4, "context_mask": 0}): those
    arrays have one entry per token along axis 1, and batches padded to different lengths
    (length-grouped batches) give them different lengths; each batch's part is padded at
    the end of axis 1 with its fill value to `length` (default: the longest part) before
    the parts are joined. Other arrays are joined as they are."""
    forward = _forward(model)
    gathered = {name: [] for name in (*outputs, *carry)}
    order, batches = [], 0
    for batch in dataset:
        batches += 1
        result = forward({k: batch[k] for k in MODEL_INPUTS})
        for name in outputs:
            gathered[name].append(result[name].numpy())
        for name in carry:
            gathered[name].append(batch[name].numpy())
        if order_by:
            order.append(batch[order_by].numpy())
    if not batches:
        raise ValueError("the dataset to predict gave no batch")
    per_token = per_token or {}
    arrays = {
        name: np.concatenate(
            _padded(parts, length, per_token[name]) if name in per_token else parts
        )
        for name, parts in gathered.items()
    }
    if order_by:
        index = np.concatenate(order)
        for name, values in arrays.items():
            placed = np.empty_like(values)
            placed[index] = values
            arrays[name] = placed
    return arrays


def _padded(parts, length, fill):
    """Each part [B, L_i, ...] padded at the end of axis 1 with `fill` to `length` (None:
    the longest L_i). A part longer than `length` is a ValueError."""
    longest = max(p.shape[1] for p in parts)
    length = longest if length is None else length
    if longest > length:
        raise ValueError(f"a batch of length {longest} does not fit length={length}")
    out = []
    for p in parts:
        extra = length - p.shape[1]
        if extra:
            widths = [(0, 0), (0, extra)] + [(0, 0)] * (p.ndim - 2)
            p = np.pad(p, widths, constant_values=np.asarray(fill, p.dtype))
        out.append(p)
    return out
