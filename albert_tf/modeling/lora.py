"""LoRA (Hu et al. 2021): low-rank updates of the encoder's projection kernels, the base
frozen.

A targeted Dense kernel W [in, out] is used as W + (alpha/r)·A·B, with A [in, r] (He
uniform, seeded) and B [r, out] (zeros: the first forward pass is the base model's), as
Keras' `enable_lora` lays them out. The encoder never calls its projection layers: each
sub-layer reads its kernels once per forward pass (`layers.variables_of`, then fused and
cast), so the update is added there, to the kernel the GEMM reads, and its gradient reaches
A and B through that sum (`tests/modeling/test_lora.py` checks it against the chain rule).

Cross-layer sharing: an adapter belongs to a parameter set, not to a depth. Under
`sharing="all"` the L layers of a group use one block, so one adapter per targeted kernel
and group serves every depth (its gradient is the sum over the depths, as the shared
kernel's is); under `sharing="none"` each layer has its own. The adapter count is the count
of distinct targeted kernels (`count_lora_parameters`).

`add_lora` attaches the adapters to a built task model (as `model.lora_adapters`, a
private layer, so that base checkpoints still load into its encoder and heads) and freezes
the encoder; the heads stay trainable. `merged_into` writes W + (alpha/r)·A·B into a plain
model of the same task: what is exported has the base model's shapes and speed.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from albert_tf.modeling.lora_settings import TARGETS, LoraSettings

ADAPTERS = "_lora_adapters"  # the task model's attribute holding them


class LoraAdapter(keras.layers.Layer):
    """The low-rank update of one Dense kernel [in, out]: `update()` = scale·A·B."""

    def __init__(self, kernel_shape, rank: int, scale: float, seed: int, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.kernel_shape, self.rank, self.scale = tuple(kernel_shape), rank, scale
        self.lora_a = self.add_weight(
            name="lora_a",
            shape=(self.kernel_shape[0], rank),
            initializer=keras.initializers.HeUniform(seed=seed),
        )
        self.lora_b = self.add_weight(
            name="lora_b", shape=(rank, self.kernel_shape[1]), initializer="zeros"
        )

    def update(self):
        """float32 [in, out] = scale · A [in, r] · B [r, out]."""
        return self.scale * tf.matmul(self.lora_a, self.lora_b)


class LoraAdapters(keras.layers.Layer):
    """Every adapter of a model, by name (`<block>_<sublayer>_<dense>`, the block being
    the first that holds the sub-layer); a checkpoint's `lora` part."""

    def __init__(self, adapters: dict, targets: tuple[str, ...], **kwargs):
        super().__init__(**kwargs)
        # Each adapter an attribute of its name: what tf.train.Checkpoint follows (a dict
        # attribute is tracked by Keras but is no checkpoint dependency, so a checkpoint of
        # the holder alone, best/ or an adapter-only read, would hold no adapter).
        for name, adapter in adapters.items():
            setattr(self, name, adapter)
        object.__setattr__(self, "adapters", dict(adapters))  # (a plain index, untracked)
        self.targets = tuple(targets)
        self.built = True


def targeted_layers(encoder, targets) -> dict:
    """{name: Dense layer} of the distinct kernels `targets` name in `encoder` (one per
    shared parameter set: see the module docstring)."""
    out, seen = {}, set()
    for block in encoder.blocks:
        for target in targets:
            kind, attributes = TARGETS[target]
            sublayer = getattr(block, kind)
            for attribute in attributes:
                dense = getattr(sublayer, attribute)
                if id(dense) in seen:
                    continue
                seen.add(id(dense))
                out[f"{block.name}_{kind}_{dense.name}"] = dense
    return out


def add_lora(model, settings: LoraSettings, seed: int) -> LoraAdapters:
    """Attaches rank-`settings.lora_rank` adapters to `model.encoder`'s targeted kernels
    (seeded by `seed`, one stream per adapter) and freezes the encoder; returns them.

    `model`: a built task model with an `encoder` (AlbertClassifier, ...)."""
    if not settings.enabled:
        raise ValueError("add_lora needs lora_rank > 0")
    adapters = {}
    for n, (name, dense) in enumerate(
        targeted_layers(model.encoder, settings.lora_targets).items()
    ):
        adapter = LoraAdapter(
            dense.kernel.shape, settings.lora_rank, settings.scale, seed + n, name=name
        )
        adapters[name] = adapter
        # A plain function, not a tracked layer: the encoder's variables and checkpoint
        # layout stay the base model's (`layers.variables_of` reads it).
        dense.lora_update = adapter.update
    holder = LoraAdapters(adapters, settings.lora_targets, name="lora")
    model.encoder.trainable = False
    model._tracker.unlock()  # a built Keras model is locked; this adds state on purpose
    setattr(model, ADAPTERS, holder)
    model._tracker.lock()
    return holder


def adapters_of(model) -> LoraAdapters | None:
    return getattr(model, ADAPTERS, None)


def count_lora_parameters(encoder, settings: LoraSettings) -> int:
    """Trainable adapter parameters: r·(in + out) per distinct targeted kernel."""
    return sum(
        settings.lora_rank * (d.kernel.shape[0] + d.kernel.shape[1])
        for d in targeted_layers(encoder, settings.lora_targets).values()
    )


def merged_into(model, plain) -> None:
    """Writes `model`'s weights into `plain` (a built model of the same task without
    adapters), each adapted kernel as W + scale·A·B: the model to export."""
    updates = {}
    holder = adapters_of(model)
    if holder is not None:
        for name, dense in targeted_layers(model.encoder, holder.targets).items():
            updates[id(dense.kernel)] = holder.adapters[name].update()
    adapter_ids = {id(v) for v in (holder.weights if holder is not None else [])}
    source = [v for v in model.weights if id(v) not in adapter_ids]
    target = plain.weights
    if [v.path for v in source] != [v.path for v in target]:
        raise ValueError("merged_into: the plain model is not the adapted model's task")
    for s, t in zip(source, target):
        value = tf.convert_to_tensor(s)
        if id(s) in updates:
            value = value + updates[id(s)]
        t.assign(value)
