"""Official google-research/albert TF1 variable names: the lingua franca of every foreign
format (TF1 checkpoints, TF-Hub v1 modules, Hugging Face after translation).

`official_name_map(model)` is the one table, official name → our variable: the encoder
(`bert/embeddings/...`, `bert/encoder/transformer/group_0/inner_group_0/...`), the pooler,
the pretraining heads (`cls/predictions/...`, `cls/seq_relationship/...`) and the official
fine-tuned heads: run_classifier's `output_weights` / `output_bias` (classification, and
STS-B regression with one output), run_race's (one score per choice), run_squad_v1's
`cls/squad/output_weights` / `output_bias`, and run_squad_v2's XLNet-style head
(`start_logits/`, `end_logits/`, `answer_class/`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from albert_tf.checkpoints.own import (
    CheckpointError,
    checkpoint_reader,
    resolve_checkpoint,
    unreadable,
)
from albert_tf.modeling.encoder import AlbertEncoder

# Task heads and the official names of their (kernel, bias): the kernel is stored
# transposed, [outputs, H]. run_classifier: `num_labels` outputs (1 for STS-B); run_race:
# one score per choice; run_squad_v1: start and end.
_OFFICIAL_HEADS = {
    "classifier_head": ("output_weights", "output_bias"),
    "choice_head": ("output_weights", "output_bias"),
    "span_head": ("cls/squad/output_weights", "cls/squad/output_bias"),
}
# The official SQuAD v2.0 head (run_squad_v2's create_v2_model; no outer scope): official
# name → the SquadV2Head layer attribute. tf.layers kernels are [in, out], as ours.
_SQUAD_V2_LAYERS = {
    "start_logits/dense": "start_dense",
    "end_logits/dense_0": "end_dense_0",
    "end_logits/dense_1": "end_dense_1",
    "answer_class/dense_0": "answer_dense_0",
}
# Components a checkpoint may lack (reported, never fatal): the heads.
HEADS = ("mlm_head", "sop_head", *_OFFICIAL_HEADS, "squad_v2_head")


@dataclasses.dataclass(frozen=True)
class OfficialVariable:
    """Where an official TF1 variable goes: our variable, whether the official array is
    its transpose, and the component it belongs to ("encoder", "pooler", a head)."""

    variable: object
    transpose: bool
    component: str


def official_name_map(model) -> dict[str, OfficialVariable]:
    """Official TF1 variable name → `OfficialVariable` for `model`.

    Covers the encoder and, where the model has them, the MLM and SOP heads and the
    official fine-tuning heads (`_OFFICIAL_HEADS`). Only the official sharing layout
    ("all") has official names.
    """
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    c = encoder.config
    if c.sharing != "all":
        raise CheckpointError(
            f"sharing={c.sharing!r} has no official checkpoint layout; official checkpoints "
            f"share everything within a group (use num_hidden_groups=num_hidden_layers "
            f"for no sharing)"
        )
    out = {}

    def add_dense(name, layer, component="encoder"):
        out[f"{name}/kernel"] = OfficialVariable(layer.kernel, False, component)
        out[f"{name}/bias"] = OfficialVariable(layer.bias, False, component)

    def add_norm(name, layer, component="encoder"):
        out[f"{name}/gamma"] = OfficialVariable(layer.gamma, False, component)
        out[f"{name}/beta"] = OfficialVariable(layer.beta, False, component)

    emb = encoder.embeddings
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        out[f"bert/embeddings/{table}"] = OfficialVariable(getattr(emb, table), False, "encoder")
    add_norm("bert/embeddings/LayerNorm", emb.layer_norm)
    if encoder.embedding_hidden_mapping_in is not None:
        add_dense("bert/encoder/embedding_hidden_mapping_in", encoder.embedding_hidden_mapping_in)
    seen = set()
    for slot in encoder.plan:
        _, group, inner = slot.attention
        if (group, inner) in seen:
            continue
        seen.add((group, inner))
        block = getattr(encoder, f"group_{group}_inner_group_{inner}")
        p = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        for qkv in ("query", "key", "value"):
            add_dense(f"{p}/attention_1/self/{qkv}", getattr(block.attention, qkv))
        add_dense(f"{p}/attention_1/output/dense", block.attention.output_dense)
        add_norm(f"{p}/LayerNorm", block.attention.layer_norm)
        add_dense(f"{p}/ffn_1/intermediate/dense", block.ffn.intermediate)
        add_dense(f"{p}/ffn_1/intermediate/output/dense", block.ffn.output_dense)
        add_norm(f"{p}/LayerNorm_1", block.ffn.layer_norm)
    add_dense("bert/pooler/dense", encoder.pooler, "pooler")
    mlm = getattr(model, "mlm_head", None)
    if mlm is not None:
        add_dense("cls/predictions/transform/dense", mlm.dense, "mlm_head")
        add_norm("cls/predictions/transform/LayerNorm", mlm.layer_norm, "mlm_head")
        out["cls/predictions/output_bias"] = OfficialVariable(mlm.output_bias, False, "mlm_head")
    heads = {
        "sop_head": ("cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"),
        **_OFFICIAL_HEADS,
    }
    v2 = getattr(model, "squad_v2_head", None)
    if v2 is not None:
        for official, attribute in _SQUAD_V2_LAYERS.items():
            add_dense(official, getattr(v2, attribute), "squad_v2_head")
        add_norm("end_logits/LayerNorm", v2.end_layer_norm, "squad_v2_head")
        out["answer_class/dense_1/kernel"] = OfficialVariable(
            v2.answer_dense_1.kernel, False, "squad_v2_head"
        )
    for component, (kernel, bias) in heads.items():
        head = getattr(model, component, None)
        if head is not None:
            dense = getattr(head, "dense", head)  # a head layer, or a Dense itself
            out[kernel] = OfficialVariable(dense.kernel, True, component)
            out[bias] = OfficialVariable(dense.bias, False, component)
    return out


@dataclasses.dataclass
class AssignResult:
    source: str
    assigned: list[str]
    missing: list[str]  # expected by the model, absent from the source
    mismatched: list[str]  # "name: source shape vs model shape"
    unused: list[str]  # in the source, not used by the model
    components: dict = dataclasses.field(default_factory=dict)  # official name → component

    @property
    def components_restored(self) -> list[str]:
        return sorted({self.components[n] for n in self.assigned})

    @property
    def components_missing(self) -> list[str]:
        done = set(self.components_restored)
        return sorted({self.components[n] for n in self.missing} - done)

    def raise_for_errors(self, allow_missing: tuple[str, ...] = HEADS):
        """Raises on shape mismatches and on missing encoder variables; missing heads
        (components in `allow_missing`) are only reported."""
        if self.mismatched:
            raise CheckpointError(
                f"{self.source}: {len(self.mismatched)} variable(s) have another shape than "
                f"the model (another model size?): " + "; ".join(self.mismatched[:8])
            )
        projection = [
            n for n in self.unused if n.startswith("bert/encoder/embedding_hidden_mapping_in/")
        ]
        if projection:
            raise CheckpointError(
                f"{self.source}: the source has an E→H projection ({projection[0]}) but the "
                f"model has embedding_size == hidden_size, where the official model has none"
            )
        fatal = [n for n in self.missing if self.components[n] not in allow_missing]
        if fatal:
            raise CheckpointError(
                f"{self.source}: {len(fatal)} variable(s) the model needs are missing: "
                + ", ".join(fatal[:8])
                + (" ..." if len(fatal) > 8 else "")
            )


def assign_official(model, weights: dict[str, np.ndarray], source: str) -> AssignResult:
    """Assigns official-named arrays to `model`; reports missing, mismatched, unused."""
    if not model.built:
        model.build()
    table = official_name_map(model)
    assigned, missing, mismatched = [], [], []
    for name, entry in table.items():
        variable, transpose = entry.variable, entry.transpose
        if name not in weights:
            missing.append(name)
            continue
        value = np.asarray(weights[name])
        if transpose:
            value = value.T
        if tuple(value.shape) != tuple(variable.shape):
            source_shape = tuple(np.asarray(weights[name]).shape)
            mismatched.append(
                f"{name}: source {list(source_shape)} vs model "
                f"{list(variable.shape)[::-1] if transpose else list(variable.shape)}"
            )
            continue
        variable.assign(value.astype(np.float32))
        assigned.append(name)
    unused = sorted(set(weights) - set(table))
    return AssignResult(
        source,
        assigned,
        missing,
        mismatched,
        unused,
        {name: entry.component for name, entry in table.items()},
    )


# ----------------------------------------------------------------------------- TF1 / TF-Hub
OPTIMIZER_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1", "/Momentum", "/lamb_m", "/lamb_v")
_SKIPPED = ("global_step", "beta1_power", "beta2_power")


def strip_module(name: str) -> str:
    return name[len("module/") :] if name.startswith("module/") else name


def read_tf1_checkpoint(path: str) -> dict[str, np.ndarray]:
    """Reads an official TF1 checkpoint or a TF-Hub v1 module's variables.

    Drops the TF-Hub `module/` prefix, optimizer slots and `global_step`.
    """
    import tensorflow as tf

    prefix = resolve_checkpoint(path)
    out = {}
    try:
        reader = checkpoint_reader(prefix)
        for name in reader.get_variable_to_shape_map():
            if name in _SKIPPED or name.endswith(OPTIMIZER_SUFFIXES):
                continue
            out[strip_module(name)] = reader.get_tensor(name)
    except (tf.errors.OpError, IndexError) as e:  # a random or truncated .index / .data file
        raise unreadable(prefix, e) from None
    return out
