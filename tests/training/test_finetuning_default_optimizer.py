"""The fine-tuning runners' default optimizer takes Adam's bounded steps from the first
update.

Without bias correction (the official AdamW, `--optimizer adamw`) a steady gradient moves a
variable without a trust ratio (biases, LayerNorm) by lr·(1-β1^t)/√(1-β2^t): 3.2·lr at the
first step and up to ~6.5·lr around step 10, decaying only over ~1/(1-β2) = 1,000 steps.
At the learning rates small models are fine-tuned with (1e-3) that overshoot left some
seeds stuck at loss ln(num_labels) (experiments.finetune_stability). Adam's bias-corrected
step is at most ~lr whatever the step."""

import numpy as np
import pytest


def _steps(name, steps=30, lr=1e-3):
    """|Δw| per step of a bias variable (no decay, no trust ratio) under a steady gradient."""
    import keras

    from albert_tf.training.optimization import create_optimizer

    bias = keras.Variable(np.zeros(4, np.float32), name="bias")
    optimizer = create_optimizer(name, lr)
    moves = []
    for _ in range(steps):
        before = bias.numpy().copy()
        optimizer.apply_gradients([(np.full(4, 0.5, np.float32), bias)])
        moves.append(float(np.abs(bias.numpy() - before).max()))
    return np.array(moves) / lr


@pytest.mark.parametrize("family", ["classifier", "ner", "squad", "embedding"])
def test_the_default_fine_tuning_step_is_bounded_by_the_learning_rate(family):
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES

    default = command(FAMILIES[family]).defaults["optimizer"]
    assert _steps(default).max() <= 1.0 + 1e-3


def test_the_official_adamw_overshoots_early_as_documented():
    moves = _steps("adamw")
    assert moves[0] == pytest.approx(0.1 / np.sqrt(0.001), rel=1e-3)
    assert moves.max() > 6.0
