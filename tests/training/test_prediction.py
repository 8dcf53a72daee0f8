"""albert_tf.training.prediction.predict_logits: outputs gathered over batches, rows put
back in order, one traced forward pass per model (kept no longer than the model)."""

import gc
import weakref

import numpy as np
import pytest


class _Scaler:
    """A stand-in model: logits = input_ids summed over the sequence × scale; counts its
    Python calls (one per trace)."""

    def __init__(self, scale=1.0):
        self.scale = scale
        self.traces = 0

    def __call__(self, batch, training=False):
        import tensorflow as tf

        assert training is False
        self.traces += 1
        total = tf.reduce_sum(tf.cast(batch["input_ids"], tf.float32), axis=1, keepdims=True)
        return {"logits": total * self.scale, "doubled": 2.0 * total}


def _dataset(order, batch_size):
    import tensorflow as tf

    n = len(order)
    ids = np.array(order, np.int32)[:, None] * np.ones((1, 3), np.int32)
    return tf.data.Dataset.from_tensor_slices(
        {
            "input_ids": ids,
            "input_mask": np.ones((n, 3), np.int32),
            "segment_ids": np.zeros((n, 3), np.int32),
            "example_index": np.array(order, np.int32),
            "label_ids": np.array(order, np.int32) * 10,
        }
    ).batch(batch_size)


def test_outputs_and_carried_features_in_example_order():
    from albert_tf.training.prediction import predict_logits

    model = _Scaler(0.5)
    order = [3, 0, 4, 1, 2]
    out = predict_logits(
        model,
        _dataset(order, 2),
        outputs=("logits", "doubled"),
        carry=("label_ids",),
        order_by="example_index",
    )
    np.testing.assert_allclose(out["logits"][:, 0], [0, 1.5, 3, 4.5, 6])
    np.testing.assert_allclose(out["doubled"][:, 0], [0, 6, 12, 18, 24])
    np.testing.assert_array_equal(out["label_ids"], [0, 10, 20, 30, 40])
    unordered = predict_logits(model, _dataset(order, 2), carry=("label_ids",))
    np.testing.assert_array_equal(unordered["label_ids"], np.array(order) * 10)


def test_one_traced_function_per_model_freed_with_it():
    from albert_tf.training import prediction

    model = _Scaler()
    for batch_size in (2, 2, 4):  # full and short last batches: reduce_retracing
        prediction.predict_logits(model, _dataset(list(range(7)), batch_size))
    assert model.traces <= 3  # not one per call and batch shape
    traces = model.traces
    prediction.predict_logits(model, _dataset(list(range(7)), 2))
    assert model.traces == traces
    other = _Scaler(2.0)
    out = prediction.predict_logits(other, _dataset([1], 1))
    assert out["logits"][0, 0] == 6.0 and other.traces >= 1
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None and len(prediction._FORWARD) == 1


def test_an_empty_dataset_is_an_error():
    from albert_tf.training.prediction import predict_logits

    with pytest.raises(ValueError, match="gave no batch"):
        predict_logits(_Scaler(), _dataset([1, 2], 2).take(0))


def test_under_a_strategy_batches_are_padded_to_one_static_size_and_trimmed_back():
    """The replicated path (mirrored GPUs, TPUs): every batch the replicas see has
    `batch_size` rows (static), the last, shorter batch is padded with zero rows that do not
    come back; outputs and order equal the host path's. (Two replicas: the mirrored
    run_classifier test compares whole runs.)"""
    import tensorflow as tf

    from albert_tf.training.prediction import predict_logits

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    order = [3, 0, 4, 1, 2]
    seen = []

    class Recording(_Scaler):
        def __call__(self, batch, training=False):
            seen.append(batch["input_ids"].shape.as_list())
            return super().__call__(batch, training)

    kwargs = dict(outputs=("logits", "doubled"), carry=("label_ids",), order_by="example_index")
    host = predict_logits(_Scaler(0.5), _dataset(order, 2), **kwargs)
    out = predict_logits(
        Recording(0.5), _dataset(order, 2), strategy=strategy, batch_size=2, **kwargs
    )
    assert seen and all(shape == [2, 3] for shape in seen), seen
    assert out.keys() == host.keys()
    for name in host:
        np.testing.assert_array_equal(out[name], host[name], err_msg=name)
    with pytest.raises(ValueError, match="batch_size"):
        predict_logits(_Scaler(), _dataset(order, 2), strategy=strategy)
    with pytest.raises(ValueError, match="does not fit batch_size=1"):
        predict_logits(_Scaler(), _dataset(order, 2), strategy=strategy, batch_size=1)
