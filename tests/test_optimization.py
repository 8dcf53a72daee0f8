"""Learning-rate schedule and optimizers: the official formulas and exclusions."""

import numpy as np
import pytest


def test_schedule_is_the_official_formula():
    from albert_tf.optimization import WarmupPolynomialDecay
    s = WarmupPolynomialDecay(1e-3, num_train_steps=100, num_warmup_steps=10, power=1.0)
    for step in (0, 1, 5, 9):
        assert float(s(step)) == pytest.approx(1e-3 * step / 10)
    for step in (10, 50, 99, 100, 150):
        assert float(s(step)) == pytest.approx(1e-3 * (1 - min(step, 100) / 100), rel=1e-6, abs=1e-12)
    squared = WarmupPolynomialDecay(1.0, 100, 0, power=2.0, end_learning_rate=0.1)
    assert float(squared(50)) == pytest.approx(0.9 * 0.25 + 0.1)


def _variables():
    import keras
    w = keras.Variable(np.full((3, 2), 0.5, np.float32), name="kernel")
    b = keras.Variable(np.full((2,), 0.5, np.float32), name="bias")
    g = keras.Variable(np.full((2,), 0.5, np.float32), name="LayerNorm_gamma")
    return [w, b, g]


def test_lamb_decay_and_trust_ratio_skip_layer_norm_and_bias():
    from albert_tf.optimization import AlbertLamb
    variables = _variables()
    start = [v.numpy().copy() for v in variables]
    grads = [np.full(v.shape, 0.1, np.float32) for v in variables]
    opt = AlbertLamb(learning_rate=0.01, weight_decay_rate=0.1)
    opt.apply_gradients(zip(grads, variables))
    # Step 1 with bias correction: m̂ = g, v̂ = g², update = g/(|g|+ε) ≈ 1 everywhere.
    u = 0.1 / (0.1 + 1e-6)
    w0 = start[0]
    update = u + 0.1 * w0                       # + wd·w (kernel only)
    ratio = np.linalg.norm(w0) / np.linalg.norm(update)
    np.testing.assert_allclose(variables[0].numpy(), w0 - ratio * 0.01 * update, rtol=1e-6)
    for v, s in zip(variables[1:], start[1:]):   # no decay, no trust ratio
        np.testing.assert_allclose(v.numpy(), s - 0.01 * u, rtol=1e-6)


def test_adamw_excludes_layer_norm_and_bias():
    from albert_tf.optimization import create_optimizer
    variables = _variables()
    start = [v.numpy().copy() for v in variables]
    opt = create_optimizer("adamw", 0.01, weight_decay_rate=0.5)
    opt.apply_gradients(zip([np.zeros(v.shape, np.float32) for v in variables], variables))
    # Zero gradients: only decoupled decay moves a variable.
    np.testing.assert_allclose(variables[0].numpy(), start[0] * (1 - 0.01 * 0.5), rtol=1e-6)
    for v, s in zip(variables[1:], start[1:]):
        np.testing.assert_allclose(v.numpy(), s)


def test_unknown_optimizer_is_refused():
    from albert_tf.optimization import create_optimizer
    with pytest.raises(ValueError, match="'sgd' is not one of"):
        create_optimizer("sgd", 0.1)
