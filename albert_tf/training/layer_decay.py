"""Layer-wise learning-rate decay (`--layer_lr_decay d`, as ELECTRA and BEiT fine-tune):
a variable's rate is lr·d^(its depth below the top), so the head learns at the full rate
and the layers nearest the embeddings move least.

The ALBERT point is what "depth" means when layers share parameters. Depth is counted in
*parameter sets along the encoder's path*, from the bottom (`depth_levels`):

- level 0: the embeddings (`embeddings/*`, `embedding_hidden_mapping_in/*`);
- levels 1..N: the transformer blocks (`albert_tf.modeling.encoder.sharing_plan`):
  - `sharing=all`: one level per (used group, inner block), in order. With the released
    configs (one group) that is a single level: embeddings → the shared group → the head,
    rates lr·d², lr·d, lr, however many layers the group is applied for;
  - `sharing=none`, `attention`, `ffn`: one level per (layer, inner block), as BERT's
    L layers; a sub-layer shared by the layers of a group (`group_G_inner_group_K`) takes
    the level of the topmost layer using it (its highest, least decayed, use);
- level N+1, the top: everything else (pooler, classifier / span / MLM heads).

A variable at level l gets the factor d^(N+1-l). The factors multiply the learning rate
inside the official AdamW/LAMB update (`_OfficialAdamFamily.lr_scales`), so each variable's
step is exactly the official one at its own rate (for LAMB: the trust ratio scales that
rate). Keras' own AdamW (`adamw_keras`) applies its decoupled decay outside the per-variable
update and is not supported.
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"^(group|layer)_(\d+)_inner_group_(\d+)$")
_EMBEDDINGS = ("embeddings", "embedding_hidden_mapping_in")
SUPPORTED_OPTIMIZERS = ("lamb", "adamw", "lamb_keras")


def layer_decay_error(layer_lr_decay: float, optimizer: str) -> str | None:
    """The one-line error for a decay the optimizer cannot apply, or None."""
    if layer_lr_decay != 1.0 and optimizer not in SUPPORTED_OPTIMIZERS:
        return (
            f"--layer_lr_decay={layer_lr_decay:g} needs --optimizer "
            f"{', '.join(SUPPORTED_OPTIMIZERS)} (per-variable rates inside the official "
            f"update), not {optimizer}"
        )
    return None


def block_levels(config) -> tuple[dict[tuple[str, int, int], int], int]:
    """({(kind "group" | "layer", index, inner block): level}, N): the level (1..N) of each
    parameter set of the transformer blocks of `config` (an AlbertConfig), see the module
    docstring."""
    inner = config.inner_group_num
    layers = config.num_hidden_layers
    levels: dict[tuple[str, int, int], int] = {}
    if config.sharing == "all":
        used = sorted({config.group_of_layer(i) for i in range(layers)})
        for rank, group in enumerate(used):
            for k in range(inner):
                levels[("group", group, k)] = rank * inner + k + 1
        return levels, len(used) * inner
    for i in range(layers):
        group = config.group_of_layer(i)
        for k in range(inner):
            level = i * inner + k + 1
            levels[("layer", i, k)] = level
            levels[("group", group, k)] = level  # grows to its topmost layer's level
    return levels, layers * inner


def depth_levels(paths, config) -> tuple[dict[str, int], int]:
    """({variable path: level}, the top level N+1) for the variables' `paths` of a model
    built from `config`. ValueError for a block name the config does not have."""
    blocks, n = block_levels(config)
    top = n + 1
    out = {}
    for path in paths:
        parts = path.split("/")[1:]  # (the first is the model's own name)
        level = top
        for part in parts:
            if part in _EMBEDDINGS:
                level = 0
                break
            found = _BLOCK.match(part)
            if found:
                key = (found.group(1), int(found.group(2)), int(found.group(3)))
                if key not in blocks:
                    raise ValueError(
                        f"{path}: {part} is no block of this model config "
                        f"(sharing={config.sharing}, {config.num_hidden_layers} layers, "
                        f"{config.num_hidden_groups} group(s))"
                    )
                level = blocks[key]
                break
        out[path] = level
    return out, top


def layer_scales(variables, config, decay: float) -> dict[str, float]:
    """{variable path: d^(top - level)} for `variables` (Keras variables of a model of
    `config`)."""
    paths = [v.path for v in variables]
    levels, top = depth_levels(paths, config)
    return {path: float(decay) ** (top - levels[path]) for path in paths}


def describe_scales(scales: dict[str, float], learning_rate: float) -> list[str]:
    """The log's lines for the rates `apply_layer_decay` set ({path: factor}): one per
    distinct rate, lowest first, with its factor, how many variables take it and the first
    of them — so a run's log shows the per-group learning rates it applied."""
    groups: dict[float, list[str]] = {}
    for path, factor in scales.items():
        groups.setdefault(factor, []).append(path)
    return [
        f"layer-wise decay: lr {learning_rate * factor:.3g} (x{factor:.4g}) for "
        f"{len(paths)} variable(s), {paths[0]}{' ...' if len(paths) > 1 else ''}"
        for factor, paths in sorted(groups.items())
    ]


def apply_layer_decay(optimizer, variables, config, decay: float) -> dict[str, float]:
    """Sets the per-variable learning-rate factors of `optimizer` (an official AdamW/LAMB of
    albert_tf.training.optimization) for `variables`; returns {path: factor} ({} for
    decay 1: nothing set). ValueError (one line) for an optimizer without them."""
    if decay == 1.0:
        return {}
    if not hasattr(optimizer, "lr_scales"):
        raise ValueError(
            f"--layer_lr_decay={decay:g}: the optimizer {type(optimizer).__name__} has no "
            f"per-variable rates; use --optimizer {', '.join(SUPPORTED_OPTIMIZERS)}"
        )
    scales = layer_scales(variables, config, decay)
    optimizer.lr_scales = {optimizer._var_key(v): scales[v.path] for v in variables}
    return scales
