"""Learning-rate schedule and optimizers against the official equations, on the real
variables of real ALBERT models.

The numpy reference below is written from the official google-research/albert
optimization.py (AdamWeightDecayOptimizer) and lamb_optimizer.py, not from
albert_tf.training.optimization: raw Adam moments, update = m/(√v+ε) + wd·w with the decay skipped
for names matching LayerNorm / layer_norm / bias (regex search on the official TF1 name),
LAMB's trust ratio ‖w‖/‖update‖ skipped for the same names.
"""

import re

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config

OFFICIAL_EXCLUDED = ["LayerNorm", "layer_norm", "bias"]


def test_schedule_is_the_official_formula():
    from albert_tf.training.optimization import WarmupPolynomialDecay

    s = WarmupPolynomialDecay(1e-3, num_train_steps=100, num_warmup_steps=10, power=1.0)
    for step in (0, 1, 5, 9):
        assert float(s(step)) == pytest.approx(1e-3 * step / 10)
    for step in (10, 50, 99, 100, 150):
        assert float(s(step)) == pytest.approx(
            1e-3 * (1 - min(step, 100) / 100), rel=1e-6, abs=1e-12
        )
    squared = WarmupPolynomialDecay(1.0, 100, 0, power=2.0, end_learning_rate=0.1)
    assert float(squared(50)) == pytest.approx(0.9 * 0.25 + 0.1)


def _official_lr(step, peak, total, warmup):
    """optimization.py: polynomial (power 1) decay from step 0, warmup overriding it."""
    decayed = peak * (1 - min(step, total) / total)
    return peak * step / warmup if step < warmup else decayed


def _models(name_prefix=""):
    """Every task model, built, with grouped layers (20 LayerNorm variables in the
    pretrainer: 2 groups × 2 LayerNorms × gamma/beta, + embeddings, + MLM head)."""
    from albert_tf.modeling.models import (
        AlbertClassifier,
        AlbertMultipleChoice,
        AlbertPretrainer,
        AlbertQuestionAnswering,
    )

    config = tiny_config(num_hidden_groups=2, inner_group_num=2)
    models = [
        AlbertPretrainer(config, name=name_prefix + "pretrainer"),
        AlbertClassifier(config, 3, name=name_prefix + "classifier"),
        AlbertMultipleChoice(config, name=name_prefix + "choice"),
        AlbertQuestionAnswering(config, name=name_prefix + "qa"),
    ]
    for m in models:
        m.build()
    return models


@pytest.mark.parametrize("prefix", ["", "debias_"])
def test_exclusions_are_the_official_regexes_on_every_real_variable(prefix):
    """For every variable of every task model: excluded (no decay, no trust ratio) exactly
    when the official regexes match its official TF1 name — also when the model's own name
    contains "bias"."""
    from albert_tf.checkpoints import official_name_map
    from albert_tf.training.optimization import excluded_from_decay

    for model in _models(prefix):
        table = official_name_map(model)
        assert {id(e.variable) for e in table.values()} == {
            id(v) for v in model.trainable_variables
        }
        for name, entry in table.items():
            official = any(re.search(r, name) for r in OFFICIAL_EXCLUDED)
            assert excluded_from_decay(entry.variable) == official, (model.name, name)
    pretrainer = _models()[0]
    norms = [v for v in pretrainer.trainable_variables if "LayerNorm" in v.path]
    assert len(norms) == 20 and all(excluded_from_decay(v) for v in norms)


def _reference_step(
    params,
    grads,
    slots,
    lr,
    names,
    lamb,
    wd=0.01,
    b1=0.9,
    b2=0.999,
    eps=1e-6,
    bias_correction=False,
    step=1,
):
    """One official step (float64) over every variable, from the equations."""
    out = []
    for w, g, name, (m, v) in zip(params, grads, names, slots):
        m[...] = b1 * m + (1 - b1) * g
        v[...] = b2 * v + (1 - b2) * g * g
        if bias_correction:
            update = (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + eps)
        else:
            update = m / (np.sqrt(v) + eps)
        excluded = any(re.search(r, name) for r in OFFICIAL_EXCLUDED)
        if not excluded:
            update = update + wd * w
        ratio = 1.0
        if lamb and not excluded:
            w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        out.append(w - ratio * lr * update)
    return out


def _trajectory(optimizer_name, steps=20, peak=1e-2, warmup=5):
    """(ours, reference) weights after every step of `steps` on a tiny grouped ALBERT
    classifier: both get the same gradients (of our model's real loss at our weights)."""
    import tensorflow as tf

    from albert_tf.checkpoints import official_name_map
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.training.optimization import WarmupPolynomialDecay, create_optimizer

    model = AlbertClassifier(tiny_config(num_hidden_groups=2), 3, dropout=0.0)
    model.build()
    variables = model.trainable_variables
    official = {id(e.variable): n for n, e in official_name_map(model).items()}
    names = [official[id(v)] for v in variables]
    optimizer = create_optimizer(optimizer_name, WarmupPolynomialDecay(peak, steps, warmup))
    batch = random_batch(batch=4, seed=1)
    labels = tf.constant([0, 1, 2, 1])
    reference = [v.numpy().astype(np.float64) for v in variables]
    start = [w.copy() for w in reference]
    slots = [(np.zeros_like(w), np.zeros_like(w)) for w in reference]
    worst = 0.0
    for step in range(steps):
        with tf.GradientTape() as tape:
            logits = model(batch, training=True)["logits"]
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
        optimizer.apply_gradients(zip(grads, variables))
        reference = _reference_step(
            reference,
            [g.numpy().astype(np.float64) for g in grads],
            slots,
            _official_lr(step, peak, steps, warmup),
            names,
            lamb=optimizer_name == "lamb",
        )
        worst = max(
            worst, max(float(np.max(np.abs(v.numpy() - r))) for v, r in zip(variables, reference))
        )
    return worst, start, reference


@pytest.mark.integration  # twenty optimizer steps on a model: over the unit tier's 5 s
@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_twenty_steps_equal_the_official_equations(name):
    worst, start, reference = _trajectory(name)
    assert worst < 1e-6, worst
    # The weights really moved (the comparison is not of two standing points), LayerNorm
    # ones included.
    assert max(float(np.max(np.abs(r - s))) for r, s in zip(start, reference)) > 1e-2


def test_keras_variants_add_bias_correction():
    """lamb_keras follows the same equations with bias-corrected moments; adamw_keras is
    keras.optimizers.AdamW (lr·√(1-β2^t)/(1-β1^t)·m/(√v+ε), decoupled decay first) with
    the official exclusions."""
    import tensorflow as tf

    from albert_tf.checkpoints import official_name_map
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.training.optimization import create_optimizer

    for name in ("lamb_keras", "adamw_keras"):
        model = AlbertClassifier(tiny_config(), 2, dropout=0.0)
        model.build()
        variables = model.trainable_variables
        official = {id(e.variable): n for n, e in official_name_map(model).items()}
        names = [official[id(v)] for v in variables]
        optimizer = create_optimizer(name, 1e-2)
        reference = [v.numpy().astype(np.float64) for v in variables]
        slots = [(np.zeros_like(w), np.zeros_like(w)) for w in reference]
        rng = np.random.default_rng(0)
        for step in range(1, 4):
            grads = [rng.normal(0, 0.1, v.shape) for v in variables]
            optimizer.apply_gradients(zip([tf.constant(g, tf.float32) for g in grads], variables))
            if name == "lamb_keras":
                reference = _reference_step(
                    reference, grads, slots, 1e-2, names, lamb=True, bias_correction=True, step=step
                )
                continue
            for i, (w, g, n) in enumerate(zip(reference, grads, names)):
                m, v = slots[i]
                if not any(re.search(r, n) for r in OFFICIAL_EXCLUDED):
                    w = w - 1e-2 * 0.01 * w
                m[...] = 0.9 * m + 0.1 * g
                v[...] = 0.999 * v + 0.001 * g * g
                alpha = 1e-2 * np.sqrt(1 - 0.999**step) / (1 - 0.9**step)
                reference[i] = w - alpha * m / (np.sqrt(v) + 1e-6)
        for v, r in zip(variables, reference):
            np.testing.assert_allclose(v.numpy(), r, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", ["adamw", "lamb", "adamw_keras", "lamb_keras"])
def test_layer_norm_and_bias_are_never_decayed(name):
    """Zero gradients: only weight decay can move a variable. Excluded variables stay
    bit-identical; the others shrink by exactly the official factor."""
    import tensorflow as tf

    from albert_tf.checkpoints import official_name_map
    from albert_tf.training.optimization import create_optimizer

    model = _models()[1]  # classifier, grouped
    table = official_name_map(model)
    start = {n: e.variable.numpy().copy() for n, e in table.items()}
    optimizer = create_optimizer(name, 0.01, weight_decay_rate=0.5)
    optimizer.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
    decayed = 0
    for n, e in table.items():
        if any(re.search(r, n) for r in OFFICIAL_EXCLUDED):
            np.testing.assert_array_equal(e.variable.numpy(), start[n], err_msg=n)
        else:
            # AdamW: w·(1 - lr·wd). LAMB: update = wd·w, trust ratio 1/wd → w·(1 - lr).
            factor = 1 - 0.01 if name.startswith("lamb") else 1 - 0.01 * 0.5
            np.testing.assert_allclose(e.variable.numpy(), start[n] * factor, rtol=1e-6, err_msg=n)
            decayed += 1
    assert decayed > 0 and decayed < len(table)


def test_unknown_optimizer_is_refused():
    from albert_tf.training.optimization import create_optimizer

    with pytest.raises(ValueError, match="'sgd' is not one of"):
        create_optimizer("sgd", 0.1)
