"""Model Garden (tensorflow/models `official.nlp`) ALBERT weights → official TF1 names.

Two sources hold the same variables:

- `--source model_garden`: an object-based checkpoint of `networks.AlbertEncoder`, alone
  (`tf.train.Checkpoint(encoder=...)`, what tf2_albert_encoder_checkpoint_converter.py
  writes) or inside a pretrainer (`BertPretrainer`'s `tf.train.Checkpoint(model=...)`,
  `BertPretrainerV2.checkpoint_items`: encoder, masked_lm, classification heads);
- `--source tfhub_v2`: a TF-Hub v2 SavedModel as `export_tfhub_lib.export_model` writes it
  (albert_en_base/3 and the like): its variables/ checkpoint, read as a checkpoint; the
  SavedModel is never executed.

Variables are found through the checkpoint's object graph (`_CHECKPOINTABLE_OBJECT_GRAPH`):
every variable reachable from the root, with the name it had when saved (`full_name`,
e.g. `transformer/self_attention/query/kernel`). Those names are what AlbertEncoder's
layers are called (`word_embeddings`, `position_embedding`, `type_embeddings`,
`embeddings/layer_norm`, `embedding_projection`, the one shared `transformer` block,
`pooler_transform`), `cls/predictions` (layers.MaskedLM) and `predictions/transform/logits`
(BertPretrainer's classification network on the pooled output: the official
`cls/seq_relationship`). Keras's MultiHeadAttention keeps per-head kernels,
query/key/value [H, heads, H/heads] and output [heads, H/heads, H]; the official ones are
[H, H]: a reshape, in the order the official code splits heads. `MG_NAMES` is the table.

BertPretrainerV2's classification heads (`layers.ClassificationHead`: its own
`pooler_dense` on the [CLS] vector, then `logits`) sit beside the encoder's pooler, not on
it: the official layout (and this project's model) has one pooler, so they are reported
under `not_imported` with that reason. Optimizer state and counters are `skipped`.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re

import numpy as np

from albert_tf.checkpoints.own import (
    CheckpointError,
    checkpoint_reader,
    resolve_checkpoint,
    unreadable,
)

MODEL_GARDEN_SOURCES = ("model_garden", "tfhub_v2")
_BLOCK = "bert/encoder/transformer/group_0/inner_group_0"
_MLM = r"(?:bert/)?cls/predictions"
# Model Garden variable name (as saved, without ":0") → official name. `{0}` is the leaf.
MG_NAMES = {
    r"word_embeddings/embeddings": "bert/embeddings/word_embeddings",
    r"position_embedding/embeddings": "bert/embeddings/position_embeddings",
    r"type_embeddings/embeddings": "bert/embeddings/token_type_embeddings",
    r"embeddings/layer_norm/(gamma|beta)": "bert/embeddings/LayerNorm/{0}",
    r"embedding_projection/(kernel|bias)": "bert/encoder/embedding_hidden_mapping_in/{0}",
    r"transformer/self_attention/query/(kernel|bias)": _BLOCK + "/attention_1/self/query/{0}",
    r"transformer/self_attention/key/(kernel|bias)": _BLOCK + "/attention_1/self/key/{0}",
    r"transformer/self_attention/value/(kernel|bias)": _BLOCK + "/attention_1/self/value/{0}",
    r"transformer/self_attention/attention_output/(kernel|bias)": _BLOCK
    + "/attention_1/output/dense/{0}",
    r"transformer/self_attention_layer_norm/(gamma|beta)": _BLOCK + "/LayerNorm/{0}",
    r"transformer/intermediate/(kernel|bias)": _BLOCK + "/ffn_1/intermediate/dense/{0}",
    r"transformer/output/(kernel|bias)": _BLOCK + "/ffn_1/intermediate/output/dense/{0}",
    r"transformer/output_layer_norm/(gamma|beta)": _BLOCK + "/LayerNorm_1/{0}",
    r"pooler_transform/(kernel|bias)": "bert/pooler/dense/{0}",
    # layers.MaskedLM: `cls/predictions/...` in BertPretrainer, `bert/cls/predictions/...`
    # (output_bias/bias) in BertPretrainerV2.
    _MLM + r"/transform/dense/(kernel|bias)": "cls/predictions/transform/dense/{0}",
    _MLM + r"/transform/LayerNorm/(gamma|beta)": "cls/predictions/transform/LayerNorm/{0}",
    _MLM + r"/output_bias(?:/bias)?": "cls/predictions/output_bias",
    r"predictions/transform/logits/kernel": "cls/seq_relationship/output_weights",
    r"predictions/transform/logits/bias": "cls/seq_relationship/output_bias",
}
# BertPretrainerV2 classification heads: known, and not representable (module docstring).
_V2_HEAD = re.compile(r"(?:.*/)?(pooler_dense|logits)/(kernel|bias)")
# Object-graph paths of state that is not model weights.
_SKIPPED = re.compile(r"(^|/)(optimizer|save_counter|global_step|_?iterations?|step)(/|$)")
_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


@dataclasses.dataclass
class SourceVariable:
    """One variable of the checkpoint: its object-graph path, saved name and value."""

    path: str  # e.g. "encoder/layer_with_weights-5/_attention_layer/_query_dense/kernel"
    name: str  # full_name at save time, e.g. "transformer/self_attention/query/kernel"
    value: np.ndarray


def read_object_graph(prefix: str) -> list[SourceVariable]:
    """Every variable reachable from the root of the object-based checkpoint at `prefix`.

    Raises CheckpointError (naming `prefix`) for a name-based (TF1) checkpoint, or one
    whose files do not read (`own.unreadable`)."""
    import tensorflow as tf

    try:
        return _read_object_graph(prefix)
    except (tf.errors.OpError, IndexError) as e:  # a random or truncated .index / .data file
        raise unreadable(prefix, e) from None


def _read_object_graph(prefix: str) -> list[SourceVariable]:
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    reader = checkpoint_reader(prefix)
    if not reader.has_tensor(_GRAPH_KEY):
        raise CheckpointError(
            f"{prefix} is a name-based (TF1) checkpoint, not an object-based one: "
            f"use --source tf1 or tfhub"
        )
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(_GRAPH_KEY))
    paths = {0: ""}
    queue = collections.deque([0])
    while queue:  # breadth first: each node's shortest path, as the checkpoint keys have
        node = queue.popleft()
        for child in graph.nodes[node].children:
            if child.node_id not in paths:
                paths[child.node_id] = f"{paths[node]}/{child.local_name}".lstrip("/")
                queue.append(child.node_id)
    out = []
    for node_id, path in sorted(paths.items()):
        for attribute in graph.nodes[node_id].attributes:
            if attribute.name != "VARIABLE_VALUE":
                continue
            name = attribute.full_name.split(":")[0] or path
            out.append(SourceVariable(path, name, reader.get_tensor(attribute.checkpoint_key)))
    return out


@dataclasses.dataclass
class Translation:
    """Model Garden arrays under official names, and where every source variable went."""

    weights: dict  # official name → array
    renamed: dict  # Model Garden name → official name
    not_imported: dict  # Model Garden name → why
    skipped: list  # object-graph paths of optimizer state and counters
    unknown: list  # names no rule knows
    num_attention_heads: int | None  # from the query kernel [H, heads, H/heads]


def model_garden_to_official(variables: list[SourceVariable], source: str) -> Translation:
    """Renames (and reshapes the attention kernels of) Model Garden variables.

    Raises CheckpointError (naming `source`) when two variables claim one official name
    (two encoders in one checkpoint) or an attention kernel has an unexpected rank."""
    weights, renamed, not_imported, skipped, unknown = {}, {}, {}, [], []
    heads = None
    for var in variables:
        if _SKIPPED.search(var.path):
            skipped.append(var.path)
            continue
        official = _official_name(var.name)
        if official is None:
            if _V2_HEAD.fullmatch(var.name):
                not_imported[var.name] = (
                    "a BertPretrainerV2 classification head with its own pooler beside the "
                    "encoder's: the official layout has one pooler"
                )
            else:
                unknown.append(var.name)
            continue
        if official in weights:
            raise CheckpointError(
                f"{source}: {_renamed_from(renamed, official)} and {var.name} both map to "
                f"{official}: more than one ALBERT encoder in the checkpoint"
            )
        value = np.asarray(var.value)
        if official.endswith("/self/query/kernel"):
            _rank(value, 3, var.name, source)
            heads = value.shape[1]
        if "/attention_1/" in official:
            value = _merge_heads(value, official)
        elif official == "cls/seq_relationship/output_weights":
            value = value.T  # Dense [H, 2]; the official array is [2, H]
        weights[official] = value
        renamed[var.name] = official
    return Translation(weights, renamed, not_imported, skipped, unknown, heads)


def _renamed_from(renamed: dict, official: str) -> str:
    return next(k for k, v in renamed.items() if v == official)


def model_garden_name(official: str) -> str:
    """The name Model Garden saves the variable of the official name `official` under, in
    BertPretrainerV2's form (`bert/cls/predictions/...`, `output_bias/bias`): `MG_NAMES`
    read backwards, so that what `export_model_garden` writes is what this reader reads
    (object-based restoring matches by path and never looks at the names). KeyError for
    a name Model Garden has no variable for."""
    for pattern, template in MG_NAMES.items():
        form = pattern.replace("(?:bert/)?", "bert/").replace("(?:/bias)?", "/bias")
        group = re.search(r"\(([^?)][^)]*)\)", form)
        for leaf in group.group(1).split("|") if group else [None]:
            if template.format(leaf) == official:
                return form if group is None else form[: group.start()] + leaf + form[group.end() :]
    raise KeyError(official)


def _official_name(name: str) -> str | None:
    for pattern, template in MG_NAMES.items():
        m = re.fullmatch(pattern, name)
        if m:
            return template.format(*m.groups())
    return None


def _rank(value, rank, name, source):
    if value.ndim != rank:
        raise CheckpointError(
            f"{source}: {name} has shape {list(value.shape)}; Model Garden's "
            f"MultiHeadAttention kernels have rank {rank}"
        )


def _merge_heads(value: np.ndarray, official: str) -> np.ndarray:
    """Per-head attention arrays → the official [H, H] / [H]: q/k/v kernels [H, n, d] →
    [H, n·d], their biases [n, d] → [n·d], the output kernel [n, d, H] → [n·d, H]
    (head-major, as the official code's reshape to [.., n, d]); the output bias is [H]."""
    if official.endswith("/output/dense/kernel"):
        return value.reshape(-1, value.shape[-1])
    if official.endswith("/output/dense/bias"):
        return value
    if official.endswith("/kernel"):
        return value.reshape(value.shape[0], -1)
    return value.reshape(-1)


# ----------------------------------------------------------------------------- entry point
def read_model_garden(source: str, input_path: str, albert_config_file: str | None):
    """`convert --source model_garden|tfhub_v2`: (config, official-named weights,
    unrecognized names, the report's "model_garden" section). The config:
    albert_tf.checkpoints.model_garden_config."""
    from albert_tf.checkpoints.model_garden_config import model_garden_config

    saved_model = os.path.join(input_path, "saved_model.pb")
    if source == "tfhub_v2" and not os.path.isfile(saved_model):
        raise FileNotFoundError(f"{saved_model} not found: --input must be a SavedModel directory")
    prefix = resolve_checkpoint(input_path)
    translation = model_garden_to_official(read_object_graph(prefix), prefix)
    config, origin, defaulted = model_garden_config(
        translation.weights, translation.num_attention_heads, input_path, albert_config_file, prefix
    )
    section = {
        "config": origin,
        "config_fields_defaulted": defaulted,
        "renamed": translation.renamed,
        "not_imported": translation.not_imported,
        "skipped": translation.skipped,
    }
    return config, translation.weights, translation.unknown, section
