"""Optimizers and learning-rate schedule for pretraining and fine-tuning (paper §4.1).

- Schedule: linear warmup over `num_warmup_steps`, polynomial decay (`power` 1 = linear)
  to `end_learning_rate` at `num_train_steps` (official BERT/ALBERT formula).
- LAMB (You et al. 2019), the paper's pretraining optimizer: `keras.optimizers.Lamb`
  (Adam moments *with* bias correction, as Keras does; the official TF1 LAMB has none: a
  difference in the first ~1/(1-β2) steps only, documented here on purpose) with the official
  weight decay and layer adaptation: update = m̂/(√v̂+ε) + wd·w, trust ratio ‖w‖/‖update‖,
  both skipped for LayerNorm parameters and biases.
- AdamW: `keras.optimizers.AdamW` (decoupled decay), LayerNorm and biases excluded; the
  official fine-tuning optimizer.
"""

from __future__ import annotations

import keras
from keras import ops

# Variables whose path contains one of these get neither weight decay nor layer adaptation.
EXCLUDED_FROM_DECAY = ("LayerNorm", "layer_norm", "bias")


class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The official schedule: lr(step) = peak·step/warmup while step < warmup, otherwise
    (peak - end)·(1 - min(step, total)/total)^power + end.

    As in the official optimization.py, the polynomial decay runs over all `total` steps
    from step 0 and warmup overrides its start (so the peak is reached a little below
    `peak` when warmup > 0: peak·(1 - warmup/total)^power)."""

    def __init__(self, peak: float, num_train_steps: int, num_warmup_steps: int = 0,
                 power: float = 1.0, end_learning_rate: float = 0.0):
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
        return {"peak": self.peak, "num_train_steps": self.num_train_steps,
                "num_warmup_steps": self.num_warmup_steps, "power": self.power,
                "end_learning_rate": self.end}


def _excluded(variable) -> bool:
    path = getattr(variable, "path", None) or variable.name
    return any(key in path for key in EXCLUDED_FROM_DECAY)


class AlbertLamb(keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` with the official ALBERT weight decay and exclusions (see
    the module docstring). `weight_decay` is applied inside the trust-ratio update, not by
    Keras' decoupled step."""

    def __init__(self, learning_rate, weight_decay_rate: float = 0.01, **kwargs):
        kwargs.setdefault("epsilon", 1e-6)
        super().__init__(learning_rate=learning_rate, weight_decay=None, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        local_step = ops.cast(self.iterations + 1, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        m_hat = m / (1.0 - ops.power(ops.cast(self.beta_1, variable.dtype), local_step))
        v_hat = v / (1.0 - ops.power(ops.cast(self.beta_2, variable.dtype), local_step))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if _excluded(variable):
            self.assign_sub(variable, lr * update)
            return
        if self.weight_decay_rate:
            update = update + self.weight_decay_rate * variable
        w_norm = ops.sqrt(ops.sum(ops.square(variable)))
        u_norm = ops.sqrt(ops.sum(ops.square(update)))
        ratio = ops.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
        self.assign_sub(variable, ratio * lr * update)

    def get_config(self):
        config = super().get_config()
        config["weight_decay_rate"] = self.weight_decay_rate
        return config


def create_optimizer(name: str, learning_rate, weight_decay_rate: float = 0.01,
                     beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6):
    """`lamb` (pretraining) or `adamw` (fine-tuning); `learning_rate` a float or schedule.
    No clipping here: the trainer clips the all-reduced gradients by their global norm."""
    if name == "lamb":
        return AlbertLamb(learning_rate, weight_decay_rate, beta_1=beta_1, beta_2=beta_2,
                          epsilon=epsilon)
    if name == "adamw":
        opt = keras.optimizers.AdamW(learning_rate=learning_rate,
                                     weight_decay=weight_decay_rate, beta_1=beta_1,
                                     beta_2=beta_2, epsilon=epsilon)
        opt.exclude_from_weight_decay(var_names=list(EXCLUDED_FROM_DECAY))
        return opt
    raise ValueError(f"optimizer {name!r} is not one of ('lamb', 'adamw')")
