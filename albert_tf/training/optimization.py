"""Optimizers and learning-rate schedule for pretraining and fine-tuning (paper §4.1).

- Schedule: linear warmup over `num_warmup_steps`, polynomial decay (`power` 1 = linear)
  to `end_learning_rate` at `num_train_steps` (official BERT/ALBERT formula).
- `lamb` (You et al. 2019, the paper's pretraining optimizer) and `adamw` (the official
  fine-tuning optimizer, run_classifier / run_squad / run_race) follow the official
  lamb_optimizer.py and optimization.py (AdamWeightDecayOptimizer) exactly. Per variable,
  with raw Adam moments — no bias correction:

      m ← β1·m + (1-β1)·g,   v ← β2·v + (1-β2)·g²,   u = m/(√v + ε) + wd·w
      LAMB:  w ← w - r·lr·u,  r = ‖w‖/‖u‖ (1 when either norm is 0)
      AdamW: w ← w - lr·u

  Weight decay (`wd·w`) and LAMB's trust ratio `r` are both skipped for the variables
  whose name matches "LayerNorm", "layer_norm" or "bias" (`EXCLUDED_FROM_DECAY`, the
  official lists), matched on the variable's path — not on Keras' short variable name
  (`gamma`), which would decay every LayerNorm (see `excluded_from_decay`).
- `lamb_keras` and `adamw_keras`: the same optimizers with Adam's bias-corrected moments
  m̂ = m/(1-β1^t), v̂ = v/(1-β2^t), as Keras' Adam/AdamW/Lamb apply them (`adamw_keras` is
  `keras.optimizers.AdamW` itself, with the same exclusions). Bias correction enlarges
  the first ~1/(1-β2) updates of the variables without a trust ratio; the official
  ALBERT results were obtained without it.

No clipping here: the trainer clips the all-reduced gradients by their global norm.
"""

from __future__ import annotations

import re

import keras
import tensorflow as tf
from keras import ops

# The official `exclude_from_weight_decay` list (also LAMB's layer-adaptation exclusions).
EXCLUDED_FROM_DECAY = ("LayerNorm", "layer_norm", "bias")
OPTIMIZERS = ("lamb", "adamw", "lamb_keras", "adamw_keras")


class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The official schedule: lr(step) = peak·step/warmup while step < warmup, otherwise
    (peak - end)·(1 - min(step, total)/total)^power + end.

    As in the official optimization.py, the polynomial decay runs over all `total` steps
    from step 0 and warmup overrides its start (so the peak is reached a little below
    `peak` when warmup > 0: peak·(1 - warmup/total)^power)."""

    def __init__(
        self,
        peak: float,
        num_train_steps: int,
        num_warmup_steps: int = 0,
        power: float = 1.0,
        end_learning_rate: float = 0.0,
    ):
        self.peak = float(peak)
        self.num_train_steps = max(1, int(num_train_steps))
        self.num_warmup_steps = int(num_warmup_steps)
        self.power = float(power)
        self.end = float(end_learning_rate)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        frac = ops.minimum(step, self.num_train_steps) / self.num_train_steps
        decayed = (self.peak - self.end) * ops.power(1.0 - frac, self.power) + self.end
        if self.num_warmup_steps <= 0:
            return decayed
        warm = self.peak * step / self.num_warmup_steps
        return ops.where(step < self.num_warmup_steps, warm, decayed)

    def get_config(self):
        return {
            "peak": self.peak,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "power": self.power,
            "end_learning_rate": self.end,
        }


def excluded_from_decay(variable) -> bool:
    """Whether `variable` gets neither weight decay nor a trust ratio.

    Matched, as the official code does with its regexes, on a name that holds the layer:
    the last two components of the Keras path ("LayerNorm/gamma", "pooler/bias",
    "mlm_head/output_bias"). Keras' `variable.name` is only "gamma" (so "LayerNorm" never
    matches it), and the path's leading components hold the model's name, which is the
    user's and must not decide (a model named "debias" would exclude everything)."""
    path = getattr(variable, "path", None) or variable.name
    local = "/".join(path.split("/")[-2:])
    return any(re.search(key, local) for key in EXCLUDED_FROM_DECAY)


def _adam_family_math(
    gradient, m, v, w, lr, step, beta_1, beta_2, epsilon, decay, adapt, bias_correction
):
    """One official LAMB/AdamW step for one variable → (m, v, w) after it (see the module
    docstring). `decay` 0 and `adapt` False for excluded variables; `adapt` False for
    AdamW. `bias_correction` divides the moments by (1-β^t) as Keras does."""
    m = m + (gradient - m) * (1.0 - beta_1)
    v = v + (tf.square(gradient) - v) * (1.0 - beta_2)
    if bias_correction:
        update = (m / (1.0 - tf.pow(beta_1, step))) / (
            tf.sqrt(v / (1.0 - tf.pow(beta_2, step))) + epsilon
        )
    else:
        update = m / (tf.sqrt(v) + epsilon)
    if decay:
        update = update + decay * w
    if not adapt:
        return m, v, w - lr * update
    w_norm, u_norm = tf.norm(w), tf.norm(update)
    ratio = tf.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
    return m, v, w - ratio * lr * update


# `_adam_family_math` as one XLA-compiled kernel per variable shape: its ~15 elementwise
# passes over the variable and two norms become one (docs/performance-history.md has the gain);
# inlined when the whole step is compiled.
_adam_family_update = tf.function(_adam_family_math, jit_compile=True)


class _OfficialAdamFamily(keras.optimizers.Adam):
    """Adam's moment slots (`momentum`, `velocity` per variable) with the official update
    in `update_step`; subclasses set `layer_adaptation`. `weight_decay_rate` is applied
    inside the update (official), not by Keras' decoupled `weight_decay`."""

    layer_adaptation = False

    def __init__(
        self,
        learning_rate,
        weight_decay_rate: float = 0.01,
        bias_correction: bool = False,
        **kwargs,
    ):
        kwargs.setdefault("epsilon", 1e-6)
        super().__init__(learning_rate=learning_rate, weight_decay=None, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.bias_correction = bool(bias_correction)
        self._excluded = {}  # variable key → excluded_from_decay (decided once)
        self.lr_scales = {}  # variable key → its learning-rate factor (training.layer_decay)

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        key = self._var_key(variable)
        if key in self.lr_scales:
            learning_rate = learning_rate * self.lr_scales[key]
        if key not in self._excluded:
            self._excluded[key] = excluded_from_decay(variable)
        excluded = self._excluded[key]
        new_m, new_v, new_w = _adam_family_update(
            tf.cast(gradient, variable.dtype),
            tf.convert_to_tensor(m),
            tf.convert_to_tensor(v),
            tf.convert_to_tensor(variable),
            tf.cast(learning_rate, variable.dtype),
            tf.cast(self.iterations + 1, variable.dtype),
            float(self.beta_1),
            float(self.beta_2),
            float(self.epsilon),
            0.0 if excluded else self.weight_decay_rate,
            self.layer_adaptation and not excluded,
            self.bias_correction,
        )
        self.assign(m, new_m)
        self.assign(v, new_v)
        self.assign(variable, new_w)

    def get_config(self):
        config = super().get_config()
        config.update(
            weight_decay_rate=self.weight_decay_rate, bias_correction=self.bias_correction
        )
        return config


class AlbertLamb(_OfficialAdamFamily):
    """The official LAMB (lamb_optimizer.py): Adam moments, decay inside the update,
    layer-wise trust ratio; LayerNorm parameters and biases get neither."""

    layer_adaptation = True


class AlbertAdamW(_OfficialAdamFamily):
    """The official AdamWeightDecayOptimizer (optimization.py): Adam moments, decay inside
    the update (lr·wd·w); LayerNorm parameters and biases are not decayed."""


class KerasAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` (bias-corrected, decoupled decay) with the official
    exclusions decided by `excluded_from_decay` (Keras' own name patterns only see
    "gamma"/"beta")."""

    def _use_weight_decay(self, variable):
        return not excluded_from_decay(variable)


def create_optimizer(
    name: str,
    learning_rate,
    weight_decay_rate: float = 0.01,
    beta_1: float = 0.9,
    beta_2: float = 0.999,
    epsilon: float = 1e-6,
):
    """One of `OPTIMIZERS` (see the module docstring); `learning_rate` a float or schedule.

    `lamb` (pretraining) and `adamw` (fine-tuning) are the official updates; the `_keras`
    variants add Adam's bias correction."""
    args = dict(beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)
    if name in ("lamb", "lamb_keras"):
        return AlbertLamb(
            learning_rate, weight_decay_rate, bias_correction=name == "lamb_keras", **args
        )
    if name == "adamw":
        return AlbertAdamW(learning_rate, weight_decay_rate, **args)
    if name == "adamw_keras":
        return KerasAdamW(learning_rate=learning_rate, weight_decay=weight_decay_rate, **args)
    raise ValueError(f"optimizer {name!r} is not one of {OPTIMIZERS}")
