"""The trace options (albert_tf.modeling.trace_options): one value per thread, set for a
block. Two differently configured models traced from two threads at once each trace the
graph, and compute the numbers, they trace and compute alone; a block's options end with
it, do not reach another thread, and nested blocks compose."""

from __future__ import annotations

import collections
import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertEncoder
from albert_tf.modeling.dropout import step_seed
from albert_tf.modeling.trace_options import (
    DropoutSeed,
    TraceOptions,
    current_trace_options,
    trace_options,
)
from tests.support.harness import random_batch, tiny_config

BATCH = {k: tf.constant(v) for k, v in random_batch().items() if k in ("input_ids", "input_mask")}
TIMEOUT = 120  # seconds a barrier waits: a failure, not a hang, if a thread never arrives

# The serving model: the shared layer looped, only the real tokens, portable kernels.
SERVING = dict(looped_layers=True, packed=True, portable_kernels=True)
# The training model: stateless dropout masks, per-layer recomputation, XLA kernels.
TRAINING = dict(recompute="layer")


@pytest.fixture(scope="module")
def models():
    """(serving encoder without dropout, training encoder with dropout 0.1): tiny, four
    layers sharing one block."""
    keras.utils.set_random_seed(0)
    serving = AlbertEncoder(tiny_config())
    serving.build()
    training = AlbertEncoder(tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    training.build()
    return serving, training


def _serving_fn(model, seen, during=None):
    """The inference pass as a fresh tf.function; notes the options its trace sees."""

    @tf.function
    def forward(batch):
        seen.append(current_trace_options())
        if during is not None:
            during.wait()  # both traces are under way here
        out = model(batch, training=False)["sequence_output"]
        seen.append(current_trace_options())
        return out

    return forward


def _training_fn(model, seen, during=None):
    """The training pass (dropout on, gradients) as a fresh tf.function: (loss, gradients)."""

    @tf.function
    def step(batch):
        seen.append(current_trace_options())
        if during is not None:
            during.wait()
        with tf.GradientTape() as tape:
            out = model(batch, training=True)
            loss = tf.reduce_sum(tf.square(out["sequence_output"]))
            loss += tf.reduce_sum(out["pooled_output"])
        seen.append(current_trace_options())
        grads = tape.gradient(loss, model.trainable_variables)
        return loss, [tf.convert_to_tensor(g) for g in grads]  # (embeddings: dense)

    return step


def _trace(make, model, options, seen, before=None, during=None, after=None):
    """`make`'s function traced on BATCH inside `trace_options(**options)` (the dropout
    seed fresh for the block); the barriers, when given, are waited on inside the block
    before, during and after the trace."""
    fn = make(model, seen, during)
    seeded = {"dropout": DropoutSeed(step_seed(7, 1))} if make is _training_fn else {}
    with trace_options(**options, **seeded):
        if before is not None:
            before.wait()
        concrete = fn.get_concrete_function(BATCH)
        if after is not None:
            after.wait()
    return concrete


def _ops(concrete) -> collections.Counter:
    """Op types of a traced graph and of the functions it calls (loop bodies, kernels)."""
    graph = concrete.graph.as_graph_def()
    ops = collections.Counter(node.op for node in graph.node)
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    return ops


def _numbers(concrete) -> list[np.ndarray]:
    return [np.asarray(t) for t in tf.nest.flatten(concrete(BATCH))]


def _alone(models):
    """{name: (op types, numbers, options seen)} of each model traced alone, in this thread."""
    serving, training = models
    out = {}
    for name, make, model, options in (
        ("serving", _serving_fn, serving, SERVING),
        ("training", _training_fn, training, TRAINING),
    ):
        seen = []
        concrete = _trace(make, model, options, seen)
        out[name] = (_ops(concrete), _numbers(concrete), seen)
    return out


def test_the_options_shape_the_graphs(models):
    """The comparison below has teeth: each model's options leave marks on its graph that
    the other's would change (a while loop, the packed rows' scatter, the XLA kernels,
    the recomputation's gradient of its own), and both see their options while traced."""
    alone = _alone(models)
    serving, training = alone["serving"][0], alone["training"][0]
    assert serving["While"] + serving["StatelessWhile"] == 1
    assert training["While"] + training["StatelessWhile"] == 0
    assert serving["ScatterNd"] >= 1 and training["ScatterNd"] == 0
    xla = [op for op in training if "PartitionedCall" in op]
    assert sum(training[op] for op in xla) > 0
    assert training["IdentityN"] > 0  # tf.custom_gradient: the recomputed segments
    assert all(o.looped_layers and o.packed and o.dropout is None for o in alone["serving"][2])
    assert all(o.recompute == "layer" and o.dropout for o in alone["training"][2])
    # The serving pass computes only real tokens: zero at padding.
    padding = BATCH["input_mask"].numpy() == 0
    assert padding.any() and not alone["serving"][1][0][padding].any()


def test_two_threads_trace_what_each_traces_alone(models):
    """Both threads open their block, wait until the other has, trace with both traces
    under way at once (a barrier inside each traced function), and wait again before
    closing it: each graph has the op types of its lone trace and computes the same
    numbers bit for bit."""
    alone = _alone(models)
    serving, training = models
    before, during, after = (threading.Barrier(2, timeout=TIMEOUT) for _ in range(3))
    results, errors, seen = {}, [], {"serving": [], "training": []}

    def run(name, make, model, options):
        try:
            results[name] = _trace(make, model, options, seen[name], before, during, after)
        except BaseException as error:  # reported in the main thread
            errors.append((name, error))
            for barrier in (before, during, after):
                barrier.abort()

    threads = [
        threading.Thread(target=run, args=("serving", _serving_fn, serving, SERVING)),
        threading.Thread(target=run, args=("training", _training_fn, training, TRAINING)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 3)
    assert not errors, errors
    assert current_trace_options() == TraceOptions()
    for name in ("serving", "training"):
        ops, numbers, _ = alone[name]
        assert _ops(results[name]) == ops, name
        got = _numbers(results[name])
        assert len(got) == len(numbers)
        for a, b in zip(got, numbers):
            np.testing.assert_array_equal(a, b, err_msg=name)
        want = {k: v for k, v in alone[name][2][0].__dict__.items() if k != "dropout"}
        for options in seen[name]:
            assert {k: v for k, v in options.__dict__.items() if k != "dropout"} == want


def test_blocks_nest_and_end_with_the_block():
    assert current_trace_options() == TraceOptions()
    with trace_options(packed=True, looped_layers=True) as outer:
        assert current_trace_options() is outer
        with trace_options(recompute="group", looped_layers=False) as inner:
            assert (inner.packed, inner.looped_layers, inner.recompute) == (True, False, "group")
        assert current_trace_options() is outer
        with pytest.raises(RuntimeError), trace_options(portable_kernels=True):
            raise RuntimeError
        assert current_trace_options() is outer
        with pytest.raises(ValueError, match="recompute='lots'"), trace_options(recompute="lots"):
            pass
        with pytest.raises(TypeError), trace_options(packd=True):
            pass
        assert current_trace_options() is outer
    assert current_trace_options() == TraceOptions()


def test_a_block_does_not_reach_another_thread():
    """A thread started inside a block sees the defaults; its own block, open while the
    main thread looks, is not seen there."""
    opened, looked = threading.Event(), threading.Event()
    seen = {}

    def other():
        seen["start"] = current_trace_options()
        with trace_options(recompute="attention", looped_layers=False):
            opened.set()
            looked.wait(TIMEOUT)
            seen["inside"] = current_trace_options()
        seen["end"] = current_trace_options()

    with trace_options(packed=True, looped_layers=True, portable_kernels=True) as mine:
        thread = threading.Thread(target=other)
        thread.start()
        assert opened.wait(TIMEOUT)
        assert current_trace_options() == mine
        looked.set()
        thread.join(TIMEOUT)
        assert current_trace_options() == mine
    assert seen["start"] == TraceOptions() == seen["end"]
    assert seen["inside"] == TraceOptions(recompute="attention")


def test_a_nested_block_continues_the_dropout_counter():
    """The n-th dropout call of a pass draws mask n whatever blocks are nested inside the
    one that set the seed (the recomputation opens some): the masks of two calls with a
    nested block between them are those of two calls without."""
    from albert_tf.modeling.dropout import Dropout

    layer, x = Dropout(0.5), tf.ones([32, 32])
    with trace_options(dropout=DropoutSeed(step_seed(3, 0))) as options:
        first = layer(x, training=True)
        with trace_options(packed=True):
            second = layer(x, training=True)
        assert options.dropout.next_call == 2
    with trace_options(dropout=DropoutSeed(step_seed(3, 0))):
        want = [layer(x, training=True), layer(x, training=True)]
    np.testing.assert_array_equal(first.numpy(), want[0].numpy())
    np.testing.assert_array_equal(second.numpy(), want[1].numpy())
    assert not np.array_equal(first.numpy(), second.numpy())
