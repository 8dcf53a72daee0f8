"""AlbertEncoder / AlbertPretrainer: parameter counts, sharing, padding, precision, XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer
from albert_tf.modeling.encoder import count_parameters, sharing_plan
from tests.support.harness import random_batch, tiny_config

BACKBONE = {"base": 11_683_584, "large": 17_683_968, "xlarge": 58_724_864, "xxlarge": 222_595_584}
PRETRAINER = {"base": 11_813_810, "large": 17_847_474, "xlarge": 59_021_490, "xxlarge": 223_158_450}


def built(model):
    model.build()
    return model


@pytest.mark.integration  # builds every full-size model (xxlarge's 223M weights): over 5 s
@pytest.mark.parametrize("name", list(BACKBONE))
def test_exact_parameter_counts(name):
    config = AlbertConfig.preset(name)
    encoder = built(AlbertEncoder(config))
    assert encoder.count_params() == BACKBONE[name]
    pretrainer = built(AlbertPretrainer(config, encoder=encoder))
    assert pretrainer.count_params() == PRETRAINER[name]
    assert count_parameters(config) == BACKBONE[name]
    assert count_parameters(config, heads=True) == PRETRAINER[name]


@pytest.mark.integration  # builds base-size models: over the unit tier's 5 s
def test_table4_sharing_modes_at_base_size():
    # Paper Table 4 (E=128): all-shared 12M, shared-attention 64M, shared-FFN 38M, none 89M.
    expected = {"all": 11_683_584, "attention": 63_647_232, "ffn": 37_686_528, "none": 89_650_176}
    for mode, count in expected.items():
        config = AlbertConfig.preset("base", sharing=mode)
        assert built(AlbertEncoder(config)).count_params() == count, mode
        assert round(count / 1e6) == {"all": 12, "attention": 64, "ffn": 38, "none": 90}[mode]
        assert count_parameters(config) == count


def test_analytic_count_matches_built_models():
    for overrides in (
        dict(num_hidden_groups=2, inner_group_num=2),
        dict(num_hidden_groups=12),
        dict(embedding_size=32),
        dict(sharing="attention", num_hidden_groups=2, inner_group_num=3),
        dict(sharing="ffn"),
        dict(sharing="none", inner_group_num=2),
    ):
        config = tiny_config(**overrides)
        assert built(AlbertPretrainer(config)).count_params() == count_parameters(
            config, heads=True
        ), overrides


def _per_layer(config):
    h, i = config.hidden_size, config.intermediate_size
    attention = 4 * (h * h + h) + 2 * h
    ffn = h * i + i + i * h + h + 2 * h
    return attention, ffn


@pytest.mark.parametrize("mode", ["all", "attention", "ffn", "none"])
def test_only_unshared_part_grows_per_layer(mode):
    counts = [
        built(AlbertEncoder(tiny_config(num_hidden_layers=n, sharing=mode))).count_params()
        for n in (1, 2, 3, 6)
    ]
    attention, ffn = _per_layer(tiny_config())
    growth = {"all": 0, "attention": ffn, "ffn": attention, "none": attention + ffn}[mode]
    assert [b - a for a, b in zip(counts, counts[1:])] == [growth, growth, 3 * growth]


def test_sharing_is_object_reuse():
    enc = AlbertEncoder(tiny_config(num_hidden_layers=4))
    assert all(block is enc.blocks[0] for block in enc.blocks)

    enc = AlbertEncoder(tiny_config(num_hidden_layers=3, sharing="attention"))
    assert len({id(b) for b in enc.blocks}) == 3
    assert all(b.attention is enc.blocks[0].attention for b in enc.blocks)
    assert len({id(b.ffn) for b in enc.blocks}) == 3

    enc = AlbertEncoder(tiny_config(num_hidden_layers=3, sharing="ffn"))
    assert all(b.ffn is enc.blocks[0].ffn for b in enc.blocks)
    assert len({id(b.attention) for b in enc.blocks}) == 3

    enc = AlbertEncoder(tiny_config(num_hidden_layers=3, sharing="none"))
    assert len({id(b.attention) for b in enc.blocks} | {id(b.ffn) for b in enc.blocks}) == 6


def test_groups_and_inner_groups_follow_official_order():
    config = tiny_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    enc = AlbertEncoder(config)
    names = [b.name for b in enc.blocks]
    assert (
        names
        == ["group_0_inner_group_0", "group_0_inner_group_1"] * 2
        + ["group_1_inner_group_0", "group_1_inner_group_1"] * 2
    )
    assert len(sharing_plan(config)) == config.num_blocks == 8
    out = enc(random_batch(), output_hidden_states=True)
    assert len(out["encoder_outputs"]) == 8
    np.testing.assert_allclose(out["encoder_outputs"][-1], out["sequence_output"])


def test_output_shapes_and_dtypes():
    config = tiny_config()
    model = AlbertPretrainer(config)
    out = model(random_batch())
    assert out["sequence_output"].shape == (3, 11, 32)
    assert out["pooled_output"].shape == (3, 32)
    assert out["mlm_logits"].shape == (3, 3, 99)
    assert out["sop_logits"].shape == (3, 2)
    assert all(v.dtype == tf.float32 for v in out.values())
    # The MLM logits are read at masked_lm_positions only, against the tied table.
    batch = random_batch()
    seq = out["sequence_output"].numpy()
    head = model.mlm_head
    x = np.take_along_axis(seq, batch["masked_lm_positions"][:, :, None], axis=1)
    x = head.layer_norm(head.dense(x)).numpy()
    table = model.encoder.embeddings.word_embeddings.numpy()
    expected = x @ table.T + head.output_bias.numpy()
    np.testing.assert_allclose(out["mlm_logits"], expected, atol=1e-5)


def test_padding_does_not_change_real_positions():
    encoder = AlbertEncoder(tiny_config(num_hidden_groups=2, inner_group_num=2))
    rng = np.random.default_rng(3)
    ids = rng.integers(5, 99, (2, 7)).astype(np.int32)
    segments = np.array([[0, 0, 0, 1, 1, 1, 1]] * 2, np.int32)
    short = encoder({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": segments})
    pad = 9
    long_ids = np.pad(ids, ((0, 0), (0, pad)))
    long_mask = np.pad(np.ones_like(ids), ((0, 0), (0, pad)))
    long_seg = np.pad(segments, ((0, 0), (0, pad)))
    long = encoder({"input_ids": long_ids, "input_mask": long_mask, "segment_ids": long_seg})
    np.testing.assert_allclose(long["sequence_output"][:, :7], short["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(long["pooled_output"], short["pooled_output"], atol=1e-5)


def test_defaults_for_mask_and_segments():
    encoder = AlbertEncoder(tiny_config())
    ids = np.arange(5, 15, dtype=np.int32)[None]
    full = encoder(
        {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    )
    bare = encoder(ids)
    np.testing.assert_allclose(bare["sequence_output"], full["sequence_output"], atol=1e-6)


def test_embedding_projection_only_when_e_differs_from_h():
    assert AlbertEncoder(tiny_config(embedding_size=32)).embedding_hidden_mapping_in is None
    assert AlbertEncoder(tiny_config()).embedding_hidden_mapping_in is not None
    # sharing="none" with E=H is BERT-shaped: no projection, one block per layer.
    bert = AlbertConfig(
        vocab_size=30522,
        embedding_size=768,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        sharing="none",
    )
    assert count_parameters(bert) == 109_482_240  # BERT-base, pooler included
    assert built(AlbertEncoder(bert)).count_params() == 109_482_240


def test_sequence_longer_than_positions_is_refused():
    encoder = AlbertEncoder(tiny_config(max_position_embeddings=8))
    with pytest.raises(ValueError, match="sequence length 9 exceeds max_position_embeddings=8"):
        encoder(np.ones((1, 9), np.int32))


def test_dropout_only_in_training():
    encoder = AlbertEncoder(tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    batch = random_batch()
    a = encoder(batch)["sequence_output"]
    b = encoder(batch)["sequence_output"]
    np.testing.assert_array_equal(a, b)
    c = encoder(batch, training=True)["sequence_output"]
    assert np.max(np.abs(c - a)) > 1e-3


def test_activations_differ():
    batch = random_batch()
    keras.utils.set_random_seed(1)
    base = AlbertEncoder(tiny_config())
    base.build()
    outs = {}
    for act in ("gelu", "gelu_new", "gelu_exact", "relu"):
        enc = AlbertEncoder(tiny_config(hidden_act=act))
        enc.build()
        enc.set_weights(base.get_weights())
        outs[act] = enc(batch)["sequence_output"].numpy()
    np.testing.assert_array_equal(outs["gelu"], outs["gelu_new"])
    assert 0 < np.max(np.abs(outs["gelu"] - outs["gelu_exact"])) < 1e-2
    assert np.max(np.abs(outs["gelu"] - outs["relu"])) > 1e-2


def test_xla_matches_eager():
    model = AlbertPretrainer(tiny_config(num_hidden_groups=2))
    batch = random_batch()
    eager = model(batch)
    compiled = tf.function(lambda b: model(b), jit_compile=True)(
        {k: tf.constant(v) for k, v in batch.items()}
    )
    for key in eager:
        np.testing.assert_allclose(compiled[key], eager[key], atol=1e-5)


def test_mixed_bfloat16_keeps_layernorm_and_softmax_in_float32():
    config = tiny_config()
    batch = random_batch()
    reference = AlbertPretrainer(config)
    reference.build()
    expected = reference(batch)

    keras.config.set_dtype_policy("mixed_bfloat16")
    model = AlbertPretrainer(config)
    model.build()
    model.set_weights(reference.get_weights())
    assert all(w.dtype == "float32" for w in model.weights)
    block = model.encoder.blocks[0]
    assert block.attention.query.compute_dtype == "bfloat16"
    assert block.ffn.intermediate.compute_dtype == "bfloat16"
    norms = [
        block.attention.layer_norm,
        block.ffn.layer_norm,
        model.encoder.embeddings.layer_norm,
        model.mlm_head.layer_norm,
    ]
    assert all(n.compute_dtype == "float32" for n in norms)

    x = tf.random.normal([2 * 5, config.hidden_size])
    bias = tf.zeros([2, 1, 1, 5])
    out, probs = block.attention(x, bias, batch_size=2, seq_length=5, return_probs=True)
    assert out.dtype == tf.float32 and probs.dtype == tf.float32
    np.testing.assert_allclose(tf.reduce_sum(probs, -1), 1.0, atol=1e-6)

    got = model(batch)
    for key in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
        assert got[key].dtype == tf.float32
        diff = np.abs(got[key].numpy() - expected[key].numpy())
        scale = np.max(np.abs(expected[key].numpy()))
        assert np.max(diff) < 0.05 * scale + 0.05, key  # bf16 has ~3 significant digits
        assert np.max(diff) > 0, key  # and really ran in bf16


def test_gelu_tanh_values_and_analytic_gradient():
    from albert_tf.modeling.kernels import gelu_tanh

    x64 = tf.constant(np.linspace(-6, 6, 1001), tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x64)
        truth = keras.activations.gelu(x64, approximate=True)  # autodiff, float64
        ours64 = gelu_tanh(x64)
    np.testing.assert_allclose(ours64, truth, atol=1e-9)
    truth_grad = tape.gradient(truth, x64)
    np.testing.assert_allclose(tape.gradient(ours64, x64), truth_grad, atol=1e-9)
    x = tf.cast(x64, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        ours = gelu_tanh(x)
    np.testing.assert_allclose(ours, truth, atol=1e-5)
    np.testing.assert_allclose(tape.gradient(ours, x), truth_grad, atol=1e-5)
    assert gelu_tanh(tf.cast(x, tf.bfloat16)).dtype == tf.bfloat16


@pytest.mark.integration  # gradient passes in two precisions: over the unit tier's 5 s
def test_mixed_precision_gradients_follow_float32():
    """Shared weights are cast once per forward pass under mixed precision; their
    gradients must still arrive in float32 and agree with the float32 model's."""
    config = tiny_config(num_hidden_layers=4)
    batch = random_batch()

    def gradients(model):
        with tf.GradientTape() as tape:
            out = model(batch, training=True)
            loss = tf.reduce_mean(out["mlm_logits"] ** 2) + tf.reduce_mean(out["sop_logits"])
        return tape.gradient(loss, model.trainable_variables), model.trainable_variables

    reference = AlbertPretrainer(config)
    reference.build()
    expected, variables = gradients(reference)
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = AlbertPretrainer(config)
    model.build()
    model.set_weights(reference.get_weights())
    got, _ = gradients(model)
    norms = [np.linalg.norm(tf.convert_to_tensor(e).numpy()) for e in expected]
    floor = 1e-3 * float(np.median(norms))  # e.g. key biases: gradient exactly 0 in theory
    for g, e, v, norm in zip(got, expected, variables, norms):
        g = tf.convert_to_tensor(g)
        assert g.dtype == tf.float32, v.path
        error = np.linalg.norm(g.numpy() - tf.convert_to_tensor(e).numpy())
        assert error <= 0.05 * norm + floor, (v.path, error, norm)


@pytest.mark.parametrize(
    "overrides", [{}, {"num_hidden_groups": 2, "inner_group_num": 2}, {"sharing": "none"}]
)
def test_last_block_only_at_needed_positions_is_exact(overrides):
    """last_block_at_masked_only=True (the trainer's path) computes the last block only at [CLS]
    and the masked positions: same logits and the same gradients as the full pass."""
    config = tiny_config(**overrides)
    batch = random_batch(positions=4)
    batch["masked_lm_positions"][0, 3] = 0  # padding prediction slot, as in data
    model = built(AlbertPretrainer(config))

    def run(**kwargs):
        with tf.GradientTape() as tape:
            out = model(batch, training=True, **kwargs)
            loss = tf.reduce_sum(out["mlm_logits"] ** 2) + tf.reduce_sum(out["sop_logits"] ** 2)
        return out, tape.gradient(loss, model.trainable_variables)

    full, full_grads = run()
    fast, fast_grads = run(last_block_at_masked_only=True)
    assert "sequence_output" not in fast
    for key in ("mlm_logits", "sop_logits", "pooled_output"):
        np.testing.assert_allclose(fast[key], full[key], atol=1e-5, rtol=1e-5)
    for g, e, v in zip(fast_grads, full_grads, model.trainable_variables):
        np.testing.assert_allclose(
            tf.convert_to_tensor(g), tf.convert_to_tensor(e), atol=1e-5, rtol=1e-4, err_msg=v.path
        )
    gathered = model.encoder(batch, output_positions=batch["masked_lm_positions"])
    want = tf.gather(full["sequence_output"], batch["masked_lm_positions"], batch_dims=1)
    np.testing.assert_allclose(gathered["positions_output"], want, atol=1e-5)
    with pytest.raises(ValueError, match="masked_lm_positions"):
        model(
            {k: v for k, v in batch.items() if k != "masked_lm_positions"},
            last_block_at_masked_only=True,
        )


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_xla_kernels_equal_portable_ops(policy):
    """The XLA-compiled elementwise kernels (GELU, LayerNorm of a residual sum, the bf16
    attention softmax) and the plain TensorFlow ops of `trace_options(portable_kernels=True)`
    (used for SavedModels) give the same outputs and gradients."""
    from albert_tf.modeling.trace_options import trace_options

    keras.config.set_dtype_policy(policy)
    model = built(AlbertPretrainer(tiny_config(num_hidden_layers=2)))
    batch = random_batch()

    def run():
        with tf.GradientTape() as tape:
            out = model(batch, training=True)
            loss = tf.reduce_sum(out["mlm_logits"] ** 2) + tf.reduce_sum(out["sop_logits"])
        return out["mlm_logits"], tape.gradient(loss, model.trainable_variables)

    fused, fused_grads = run()
    with trace_options(portable_kernels=True):
        plain, plain_grads = run()
    tolerance = 1e-5 if policy == "float32" else 2e-2
    np.testing.assert_allclose(fused, plain, atol=tolerance, rtol=tolerance)
    for g, e, v in zip(fused_grads, plain_grads, model.trainable_variables):
        g, e = tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(e).numpy()
        assert g.dtype == np.float32, v.path
        scale = np.abs(e).max() + 1e-6
        assert np.abs(g - e).max() <= tolerance * scale + 1e-6, v.path


def test_layer_norm_residual_gradients():
    """The fused LayerNorm(x + residual) against autodiff of the textbook formula, float64."""
    from albert_tf.modeling.kernels import layer_norm_residual

    rng = np.random.default_rng(0)
    x, r = (tf.constant(rng.normal(size=(2, 3, 8))) for _ in range(2))
    gamma, beta = tf.constant(rng.normal(size=8)), tf.constant(rng.normal(size=8))
    dy = tf.constant(rng.normal(size=(2, 3, 8)))

    def textbook(x, r, gamma, beta):
        s = x + r
        mean = tf.reduce_mean(s, -1, keepdims=True)
        var = tf.reduce_mean((s - mean) ** 2, -1, keepdims=True)
        return (s - mean) / tf.sqrt(var + 1e-12) * gamma + beta

    for fn in (textbook, lambda *a: layer_norm_residual(*a, epsilon=1e-12)):
        with tf.GradientTape() as tape:
            tape.watch([x, r, gamma, beta])
            y = fn(x, r, gamma, beta)
        grads = tape.gradient(y, [x, r, gamma, beta], dy)
        if fn is textbook:
            want_y, want = y, grads
    np.testing.assert_allclose(y, want_y, atol=1e-10)
    for g, e in zip(grads, want):
        np.testing.assert_allclose(g, e, atol=1e-9)
    alone = layer_norm_residual(x, None, gamma, beta, 1e-12)
    np.testing.assert_allclose(alone, textbook(x, tf.zeros_like(x), gamma, beta), atol=1e-10)
