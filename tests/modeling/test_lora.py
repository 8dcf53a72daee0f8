"""LoRA (albert_tf.modeling.lora) on tiny classifiers: the adapters reach the GEMMs the
encoder runs on its fused, pre-read kernels — gradients equal the chain rule through a
kernel W + (alpha/r)·A·B written by hand into a plain model (real variable paths), under
sharing=all (one adapter for every depth) and sharing=none; B = 0 gives the base model's
logits exactly; the merged plain model gives the adapted model's logits; the encoder is
frozen, the head trainable; bad settings are one line."""

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config

SCALE_ALPHA, RANK = 8.0, 4


def _settings(**kw):
    from albert_tf.modeling.lora import LoraSettings

    kw.setdefault("lora_rank", RANK)
    kw.setdefault("lora_alpha", SCALE_ALPHA)
    kw.setdefault("lora_targets", ("query", "value", "ffn"))
    return LoraSettings(**kw)


def _pair(sharing="all", **settings):
    """(plain classifier, the same weights with adapters)."""
    import keras

    from albert_tf.modeling.lora import add_lora
    from albert_tf.modeling.models import AlbertClassifier

    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(0)
    config = tiny_config(sharing=sharing, num_hidden_layers=3, hidden_dropout_prob=0.0)
    plain = AlbertClassifier(config, 3, dropout=0.0)
    plain.build()
    adapted = AlbertClassifier(config, 3, dropout=0.0)
    adapted.build()
    for s, t in zip(plain.weights, adapted.weights):
        t.assign(s)
    holder = add_lora(adapted, _settings(**settings), seed=7)
    return plain, adapted, holder


def _inputs():
    batch = random_batch(batch=3, seq=11)
    return {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}


def _randomize_b(holder, seed=1):
    rng = np.random.default_rng(seed)
    for adapter in holder.adapters.values():
        adapter.lora_b.assign(rng.normal(0, 0.05, adapter.lora_b.shape).astype(np.float32))


def test_b_zero_at_init_gives_the_base_models_logits_exactly():
    plain, adapted, holder = _pair()
    for adapter in holder.adapters.values():
        assert not np.any(adapter.lora_b.numpy()) and np.any(adapter.lora_a.numpy())
    x = _inputs()
    assert np.array_equal(plain(x)["logits"].numpy(), adapted(x)["logits"].numpy())


@pytest.mark.parametrize("sharing", ["all", "none"])
def test_trainable_are_the_adapters_and_the_head_one_adapter_per_shared_kernel(sharing):
    from albert_tf.modeling.lora import count_lora_parameters

    _, adapted, holder = _pair(sharing)
    layers = 1 if sharing == "all" else 3  # the distinct parameter sets
    assert len(holder.adapters) == 4 * layers  # query, value, ffn in + out
    names = {v.path for v in adapted.trainable_variables}
    assert all("/lora_" in n or "classifier_head" in n for n in names), names
    assert not any("encoder" in n for n in names)
    head = sum(int(np.prod(v.shape)) for v in adapted.classifier_head.trainable_variables)
    total = sum(int(np.prod(v.shape)) for v in adapted.trainable_variables)
    # r·(in + out) per kernel: H=32, I=37 here.
    per_layer = RANK * ((32 + 32) * 2 + (32 + 37) * 2)
    assert total - head == count_lora_parameters(adapted.encoder, _settings()) == per_layer * layers


def _loss(model, x, labels):
    import tensorflow as tf

    logits = model(x, training=False)["logits"]
    return tf.reduce_sum(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )


@pytest.mark.parametrize("sharing", ["all", "none"])
def test_gradients_equal_the_chain_rule_through_a_kernel_written_by_hand(sharing):
    """Reference: the plain model with each targeted kernel set to W + s·A·B (found by its
    variable path), its kernel gradient G (summed over every depth that uses the kernel);
    then dL/dA = s·G·Bᵀ and dL/dB = s·Aᵀ·G."""
    import tensorflow as tf

    from albert_tf.modeling.lora import targeted_layers

    plain, adapted, holder = _pair(sharing)
    _randomize_b(holder)
    x, labels = _inputs(), tf.constant([0, 2, 1])
    s = SCALE_ALPHA / RANK
    targets = targeted_layers(adapted.encoder, holder.targets)
    by_path = {v.path: v for v in plain.weights}
    kernels = {}
    for name, dense in targets.items():
        a, b = holder.adapters[name].lora_a.numpy(), holder.adapters[name].lora_b.numpy()
        kernel = by_path[dense.kernel.path]  # the same path in the plain model
        kernel.assign(dense.kernel.numpy() + s * a @ b)
        kernels[name] = kernel
    with tf.GradientTape() as tape:
        loss = _loss(adapted, x, labels)
    variables = [w for ad in holder.adapters.values() for w in (ad.lora_a, ad.lora_b)]
    grads = dict(zip([v.path for v in variables], tape.gradient(loss, variables)))
    with tf.GradientTape() as tape:
        ref_loss = _loss(plain, x, labels)
    ref = dict(zip(kernels, tape.gradient(ref_loss, list(kernels.values()))))
    np.testing.assert_allclose(loss.numpy(), ref_loss.numpy(), rtol=1e-6)
    for name, adapter in holder.adapters.items():
        g = ref[name].numpy()
        a, b = adapter.lora_a.numpy(), adapter.lora_b.numpy()
        for got, want in (
            (grads[adapter.lora_a.path], s * g @ b.T),
            (grads[adapter.lora_b.path], s * a.T @ g),
        ):
            assert np.abs(want).max() > 0  # a real signal (tiny in the post-LN depths)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_gradients_under_layer_recomputation_equal_the_plain_pass():
    import tensorflow as tf

    from albert_tf.modeling.trace_options import trace_options

    _, adapted, holder = _pair()
    _randomize_b(holder)
    x, labels = _inputs(), tf.constant([0, 2, 1])
    variables = adapted.trainable_variables
    with tf.GradientTape() as tape:
        loss = _loss(adapted, x, labels)
    plain = tape.gradient(loss, variables)
    with tf.GradientTape() as tape, trace_options(recompute="layer"):
        loss = _loss(adapted, x, labels)
    for g, r, v in zip(plain, tape.gradient(loss, variables), variables):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-5, atol=1e-7, err_msg=v.path)


def test_merged_plain_model_gives_the_adapted_logits_with_the_plain_shapes():
    from albert_tf.modeling.lora import merged_into
    from albert_tf.modeling.models import AlbertClassifier

    plain, adapted, holder = _pair()
    _randomize_b(holder)
    x = _inputs()
    merged = AlbertClassifier(adapted.config, 3, dropout=0.0)
    merged.build()
    merged_into(adapted, merged)
    assert [(v.path, v.shape) for v in merged.weights] == [(v.path, v.shape) for v in plain.weights]
    got, want = merged(x)["logits"].numpy(), adapted(x)["logits"].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(plain(x)["logits"].numpy(), want, atol=1e-4)  # B ≠ 0 matters


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(lora_targets=("query", "vaule")), "lora_targets=query,vaule: give one or more"),
        (dict(lora_rank=-1), "lora_rank"),
        (dict(lora_alpha=0.0), "lora_alpha"),
    ],
)
def test_bad_settings_are_one_line(kw, message):
    with pytest.raises(ValueError, match=message) as e:
        _settings(**kw)
    assert "\n" not in str(e.value)
