"""Inference over a whole dataset: the model's outputs for every batch, gathered in numpy.

The fine-tuning runners predict several times with one model (an evaluation every
`eval_every` steps, then the dev, test and tuning sets); each call would trace a new
`tf.function`, and the last, shorter batch another. So the traced forward pass is kept per
model (a weak reference: it goes with the model) and traced once with every dimension left
open (any batch size and length), and every later call reuses it. On the host it computes
packed (only the real tokens through the projections and FFN: a length-grouped batch's
padding then costs only attention; values equal within float rounding).

Batches grouped by length (data_pipeline.length_buckets) come in several lengths: their
per-token arrays (SQuAD's start/end logits and the features carried with them) are padded
back to one length before they are joined (`per_token`).

Under a distribution strategy (`strategy`: mirrored GPUs, a TPU) the forward pass runs on
every replica (`strategy.run`): each batch is padded with zero rows to one static
`batch_size` (what a TPU requires; the last batch of a set is shorter), split over the
replicas, gathered back in order, and the padding rows are dropped. Only the model inputs
go to the devices; the carried features (strings, indices) stay on the host.
"""

from __future__ import annotations

import weakref

import numpy as np

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")

_FORWARD = weakref.WeakKeyDictionary()


def _forward(model, packed: bool = False):
    """The model's traced inference pass (training=False), one per model and `packed`
    (its encoder computing only the real tokens outside attention, `albert_tf.modeling.
    packing`: the host's path, where shapes may vary; the replicas' keep static ones)."""
    forwards = _FORWARD.setdefault(model, {})
    forward = forwards.get(packed)
    if forward is None:
        import tensorflow as tf

        from albert_tf.modeling.trace_options import trace_options

        ref = weakref.ref(model)  # the function must not keep its model alive

        def run(batch):
            with trace_options(packed=packed):
                return ref()(batch, training=False)

        forward = tf.function(run, reduce_retracing=True)
        forwards[packed] = forward
    return forward


def _replicated(model, strategy, size):
    """The traced step running `_forward(model)` on every replica of `strategy` on a global
    batch of `size` rows, returning the outputs gathered in row order; one per (model,
    strategy, size)."""
    steps = _REPLICATED.setdefault(model, {})
    step = steps.get((id(strategy), size))
    if step is None:
        import tensorflow as tf

        forward = _forward(model)

        def run(inputs):
            out = strategy.run(forward, (inputs,))
            return {k: strategy.gather(v, axis=0) for k, v in out.items()}

        step = tf.function(run, reduce_retracing=True)
        steps[(id(strategy), size)] = step
    return step


_REPLICATED = weakref.WeakKeyDictionary()


def _results(model, dataset, strategy, batch_size):
    """(outputs, host batch) per batch of `dataset`: the forward pass on the host's device,
    or on every replica of `strategy` (see the module docstring)."""
    import tensorflow as tf

    if strategy is None or strategy is tf.distribute.get_strategy():
        forward = _forward(model, packed=True)
        for batch in dataset:
            inputs = {k: batch[k] for k in MODEL_INPUTS}
            # Trace once for every batch size and length first (one graph however many
            # lengths come: length-grouped batches, one request at a time), instead of
            # for the first batch's shape and then again relaxed.
            forward.get_concrete_function(
                {k: tf.TensorSpec([None] * v.shape.rank, v.dtype) for k, v in inputs.items()}
            )
            yield forward(inputs), batch
        return
    if not batch_size:
        raise ValueError("predicting under a distribution strategy needs batch_size")
    replicas = strategy.num_replicas_in_sync
    size = -(-batch_size // replicas) * replicas

    def padded(batch):
        out = {}
        for k in MODEL_INPUTS:
            x = batch[k]
            missing = tf.maximum(size - tf.shape(x)[0], 0)  # (larger batches: see below)
            x = tf.concat([x, tf.zeros(tf.concat([[missing], tf.shape(x)[1:]], 0), x.dtype)], 0)
            out[k] = tf.ensure_shape(x, [size] + x.shape.as_list()[1:])
        return out

    step = _replicated(model, strategy, size)
    inputs = iter(strategy.experimental_distribute_dataset(dataset.map(padded)))
    for batch in dataset:
        rows = int(tf.shape(batch["input_ids"])[0])
        if rows > size:
            raise ValueError(f"a batch of {rows} rows does not fit batch_size={batch_size}")
        yield {k: v[:rows] for k, v in step(next(inputs)).items()}, batch


def predict_logits(
    model,
    dataset,
    outputs=("logits",),
    carry=(),
    order_by=None,
    per_token=None,
    length=None,
    strategy=None,
    batch_size=None,
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
    the parts are joined. Other arrays are joined as they are.

    `strategy` (the one the model was built under; None or the default strategy: the
    host's device) runs the forward pass on its replicas on batches padded to
    `batch_size` rows (the dataset's batch size; required then)."""
    gathered = {name: [] for name in (*outputs, *carry)}
    order, batches = [], 0
    for result, batch in _results(model, dataset, strategy, batch_size):
        batches += 1
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
