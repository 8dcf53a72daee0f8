"""Activation recomputation (albert_tf.modeling.recompute): the same gradients and the
same training run as without it — one device and mirrored, float32 and bfloat16, with
XLA, with dropout on (the masks are replayed) — on tiny models with shared weights."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support.harness import CLI_ENV, ROOT, random_batch, tiny_config

# Four layers in two groups: "layer" cuts four segments, "group" two of two layers (each
# group's shared block used twice in its segment); the last segment runs plainly.
CONFIG = dict(
    num_hidden_layers=4,
    num_hidden_groups=2,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
)


def _model(dtype="float32"):
    import keras

    from albert_tf.modeling.models import AlbertPretrainer

    keras.config.set_dtype_policy("mixed_bfloat16" if dtype == "bfloat16" else "float32")
    keras.utils.set_random_seed(0)
    model = AlbertPretrainer(tiny_config(**CONFIG))
    model.build()
    return model


def _loss(model, batch, mode, seed):
    """MLM-like loss (sum of squared logits) of the trainer's forward pass, under the
    trace options the trainer sets."""
    import tensorflow as tf

    from albert_tf.modeling.trace_options import DropoutSeed, trace_options

    with trace_options(dropout=DropoutSeed(seed), recompute=mode):
        out = model(batch, training=True, last_block_at_masked_only=True)
    return tf.reduce_sum(tf.square(tf.cast(out["mlm_logits"], tf.float32))) + tf.reduce_sum(
        tf.cast(out["sop_logits"], tf.float32)
    )


def gradients(model, batch, mode, jit=False):
    """(loss, [gradient of every trainable variable]) of one pass, as numpy."""
    import tensorflow as tf

    from albert_tf.modeling.dropout import step_seed

    @tf.function(jit_compile=jit)
    def fn():
        with tf.GradientTape() as tape:
            loss = _loss(model, batch, mode, step_seed(7, 1))
        return loss, tape.gradient(loss, model.trainable_variables)

    loss, grads = fn()
    assert all(g is not None for g in grads)
    return float(loss), [tf.convert_to_tensor(g).numpy() for g in grads]


def assert_close(expected, got, dtype):
    (loss0, grads0), (loss1, grads1) = expected, got
    assert loss1 == pytest.approx(loss0, rel=1e-6)
    # bf16: the recomputed forward is the same program on the same inputs; only the
    # order of float32 sums over the shared weights' uses may differ.
    rtol = 1e-5 if dtype == "float32" else 1e-3
    for a, b in zip(grads0, grads1):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol * np.abs(a).max() + 1e-7)


@pytest.fixture(scope="module")
def plain32():
    """(model, batch, plain gradients) in float32, shared by the tests that compare."""
    model = _model()
    batch = random_batch()
    return model, batch, gradients(model, batch, "none")


def test_gradients_equal_without_recomputation(plain32):
    """Every variable's gradient (embeddings, the shared blocks' kernels, biases and
    LayerNorms, heads) is the plain path's, for layer and group segments, dropout 0.1."""
    model, batch, plain = plain32
    for mode in ("layer", "group"):
        assert_close(plain, gradients(model, batch, mode), "float32")


@pytest.mark.integration  # gradient passes of a model, compiled: over the unit tier's 5 s
def test_gradients_equal_without_recomputation_bfloat16():
    model = _model("bfloat16")
    batch = random_batch()
    assert_close(gradients(model, batch, "none"), gradients(model, batch, "layer"), "bfloat16")


@pytest.mark.integration  # gradient passes of a model, compiled: over the unit tier's 5 s
def test_gradients_equal_under_xla():
    model = _model()
    batch = random_batch()
    assert_close(
        gradients(model, batch, "none", jit=True),
        gradients(model, batch, "layer", jit=True),
        "float32",
    )


def assert_shifted_masks_change_the_gradients(model, batch, plain, mode, monkeypatch):
    """Recomputing (`mode`) with the next dropout masks instead of the forward's gives
    other gradients than `plain` (model, batch, plain: a dropout fixture's triple)."""
    from albert_tf.modeling.trace_options import DropoutSeed

    monkeypatch.setattr(DropoutSeed, "bookmark", lambda s: DropoutSeed(s.seed, s.next_call + 1))
    _, shifted = gradients(model, batch, mode)
    assert max(np.abs(a - b).max() for a, b in zip(plain[1], shifted)) > 1e-3


def test_recomputation_replays_the_dropout_masks(plain32, monkeypatch):
    """The check above has teeth: recomputing with the next masks instead of the
    forward's gives other gradients."""
    assert_shifted_masks_change_the_gradients(*plain32, "layer", monkeypatch)


def test_recomputation_with_dropout_needs_a_dropout_seed():
    import tensorflow as tf

    from albert_tf.modeling.trace_options import trace_options

    model = _model()
    with pytest.raises(ValueError, match="needs a DropoutSeed"), trace_options(recompute="layer"):
        with tf.GradientTape():
            model(random_batch(), training=True)


_MIRRORED = """
import json
import numpy as np
import tensorflow as tf
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
from tests.modeling.test_recompute import _loss, _model
from tests.support.harness import random_batch
from albert_tf.modeling.dropout import step_seed

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
batch = random_batch(batch=4)
out = {}
for dtype in ("float32", "bfloat16"):
    with strategy.scope():
        model = _model(dtype)
    def per_replica(ctx):
        i = ctx.replica_id_in_sync_group
        return {k: v[2 * i : 2 * i + 2] for k, v in batch.items()}
    inputs = strategy.experimental_distribute_values_from_function(per_replica)
    results = {}
    for mode in ("none", "layer"):
        def replica(b, mode=mode):
            ctx = tf.distribute.get_replica_context()
            with tf.GradientTape() as tape:
                loss = _loss(model, b, mode, step_seed(7, ctx.replica_id_in_sync_group))
            grads = tape.gradient(loss, model.trainable_variables)
            grads = [tf.convert_to_tensor(g) for g in grads]
            total = tf.distribute.ReduceOp.SUM
            return ctx.all_reduce(total, loss), ctx.all_reduce(total, grads)
        loss, grads = tf.function(lambda: strategy.run(replica, (inputs,)))()
        local = strategy.experimental_local_results
        results[mode] = (float(local(loss)[0]), [local(g)[0].numpy() for g in grads])
    (l0, g0), (l1, g1) = results["none"], results["layer"]
    out[dtype] = {
        "loss": [l0, l1],
        "rel": max(float(np.abs(a - b).max() / (np.abs(a).max() + 1e-12)) for a, b in zip(g0, g1)),
    }
print(json.dumps(out))
"""


def test_gradients_equal_under_mirrored_strategy():
    """Two replicas (two logical CPUs, hence a subprocess): the all-reduced gradients
    with layer recomputation equal the plain ones, float32 and bfloat16."""
    done = subprocess.run(
        [sys.executable, "-c", _MIRRORED],
        cwd=ROOT,
        env=CLI_ENV,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for dtype, tolerance in (("float32", 1e-5), ("bfloat16", 1e-3)):
        l0, l1 = out[dtype]["loss"]
        assert l1 == pytest.approx(l0, rel=1e-6), dtype
        assert out[dtype]["rel"] < tolerance, (dtype, out[dtype])


def _pretraining_losses(tmp_path, recompute, steps=50):
    """Per-step training losses of a tiny pretraining run (LAMB, dropout 0.1)."""
    import tensorflow as tf

    from albert_tf.training import PretrainingTask, Trainer, TrainerConfig

    seq, positions, n = 16, 3, 32
    rng = np.random.default_rng(0)
    data = {
        "input_ids": rng.integers(5, 99, (n, seq)).astype(np.int32),
        "input_mask": np.ones((n, seq), np.int32),
        "segment_ids": np.zeros((n, seq), np.int32),
        "masked_lm_positions": rng.integers(1, seq, (n, positions)).astype(np.int32),
        "masked_lm_ids": rng.integers(5, 99, (n, positions)).astype(np.int32),
        "masked_lm_weights": np.ones((n, positions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype(np.int32),
    }

    def fn(ctx):
        ds = tf.data.Dataset.from_tensor_slices(data).repeat()
        return ds.batch(ctx.get_per_replica_batch_size(4), drop_remainder=True)

    config = TrainerConfig(
        output_dir=str(tmp_path / recompute),
        num_train_steps=steps,
        learning_rate=1e-3,
        steps_per_loop=1,
        save_checkpoints_steps=steps,
        recompute=recompute,
    )
    task = PretrainingTask(tiny_config(**CONFIG), seq, positions)
    Trainer(task, config, tf.distribute.get_strategy(), fn, log=lambda *_: None).train()
    rows = [json.loads(line) for line in open(os.path.join(config.output_dir, "metrics.jsonl"))]
    return [r["loss"] for r in rows if r["split"] == "train"]


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
def test_fifty_steps_give_the_same_losses(tmp_path):
    plain = _pretraining_losses(tmp_path, "none")
    recomputed = _pretraining_losses(tmp_path, "layer")
    assert len(plain) == 50
    np.testing.assert_allclose(recomputed, plain, rtol=0, atol=1e-5)
    assert plain[-1] < plain[0]  # it trains
