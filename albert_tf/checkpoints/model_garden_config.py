"""The AlbertConfig of a Model Garden ALBERT (albert_tf.checkpoints.model_garden).

Model Garden keeps the config apart from the weights. Three ways to get it, best first:

- `--albert_config_file` (the official JSON): used as given, after `check_config`;
- a Keras-written SavedModel (export_tfhub_lib's) records the AlbertEncoder's own
  `get_config()` (vocab_size, embedding_width, num_layers, activation, dropout rates,
  initializer, ...) in keras_metadata.pb, or, written by older TensorFlow, in the
  saved_model.pb's object metadata: `saved_model_config` reads it, nothing is guessed;
- an object-based checkpoint: the shapes fix every size (`infer_config`) except
  num_hidden_layers (one shared block serves every layer: refused, naming the flag) and
  what `NOT_INFERABLE` lists, which take the released models' values.
"""

from __future__ import annotations

import json
import os

from albert_tf.checkpoints.own import CheckpointError
from albert_tf.modeling.config import AlbertConfig

_BLOCK = "bert/encoder/transformer/group_0/inner_group_0"
# What the weights do not fix, and the value used when nothing says otherwise.
NOT_INFERABLE = {
    "hidden_act": "gelu (the tanh form: Model Garden's default activations.gelu, as released)",
    "hidden_dropout_prob": "0.0 (training only)",
    "attention_probs_dropout_prob": "0.0 (training only)",
    "initializer_range": "0.02 (training only)",
}
# Model Garden's serialized activations → ours. "Text>gelu" is official.modeling's gelu,
# tf.keras gelu(approximate=True): the official tanh form; Keras's own "gelu" is the erf one.
_ACTIVATIONS = {"Text>gelu": "gelu", "gelu": "gelu_exact", "relu": "relu"}
_ENCODER_CLASS = "Text>AlbertEncoder"


def sizes_from_weights(weights: dict, heads: int | None, source: str) -> dict:
    """The config fields the official-named `weights` fix (all sizes but the layer count)."""
    names = (
        "bert/embeddings/word_embeddings",
        "bert/embeddings/position_embeddings",
        "bert/embeddings/token_type_embeddings",
        _BLOCK + "/ffn_1/intermediate/dense/kernel",
    )
    missing = [n for n in names if n not in weights]
    if missing or heads is None:
        what = missing[0] if missing else "attention query kernel"
        raise CheckpointError(f"{source}: not a Model Garden ALBERT encoder (no {what})")
    vocab, width = weights[names[0]].shape
    hidden, intermediate = weights[names[3]].shape
    return dict(
        vocab_size=int(vocab),
        embedding_size=int(width),
        hidden_size=int(hidden),
        num_attention_heads=int(heads),
        intermediate_size=int(intermediate),
        max_position_embeddings=int(weights[names[1]].shape[0]),
        type_vocab_size=int(weights[names[2]].shape[0]),
    )


def model_garden_config(
    weights: dict, heads: int | None, input_path: str, albert_config_file: str | None, source: str
) -> tuple[AlbertConfig, str, dict]:
    """(config, where it came from, fields that took a default → the default)."""
    sizes = sizes_from_weights(weights, heads, source)
    if albert_config_file:
        config = AlbertConfig.from_json_file(albert_config_file)
        check_config(config, sizes, albert_config_file)
        return config, albert_config_file, {}
    recorded = saved_model_config(input_path)
    if recorded is None:
        raise CheckpointError(
            f"{source}: num_hidden_layers cannot be inferred from an object-based checkpoint "
            f"(one shared block serves every layer; the shapes give {sizes}): give "
            f"--albert_config_file"
        )
    fields, defaulted = _from_encoder_config(recorded)
    config = AlbertConfig(**{**sizes, **fields})
    check_config(config, sizes, os.path.join(input_path, "keras_metadata.pb"))
    return config, "the SavedModel's AlbertEncoder config (Keras metadata)", defaulted


def check_config(config: AlbertConfig, sizes: dict, config_source: str) -> None:
    """Refuses a config that Model Garden's AlbertEncoder with these weights cannot have:
    one shared block, and every size the weights fix (the head count in particular: the
    attention kernels are reshaped, so a wrong one would pass every shape check)."""
    if (config.num_hidden_groups, config.inner_group_num) != (1, 1):
        raise CheckpointError(
            f"{config_source}: Model Garden's AlbertEncoder has one shared block; the config "
            f"has num_hidden_groups={config.num_hidden_groups}, "
            f"inner_group_num={config.inner_group_num}"
        )
    wrong = {k: (getattr(config, k), v) for k, v in sizes.items() if getattr(config, k) != v}
    if wrong:
        text = ", ".join(f"{k}={a} (weights: {b})" for k, (a, b) in wrong.items())
        raise CheckpointError(f"{config_source}: the config does not fit the weights: {text}")


def saved_model_config(directory: str) -> dict | None:
    """The AlbertEncoder's `get_config()` recorded in a Keras-written SavedModel, or None
    (not a SavedModel, or one without Keras metadata)."""
    if not os.path.isdir(directory):
        return None
    for metadata in _keras_metadata(directory):
        try:
            entry = json.loads(metadata)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("class_name") == _ENCODER_CLASS:
            return entry.get("config") or None
    return None


def _keras_metadata(directory: str):
    """The metadata JSON strings of keras_metadata.pb, else of saved_model.pb's objects."""
    path = os.path.join(directory, "keras_metadata.pb")
    if os.path.isfile(path):
        from tensorflow.python.keras.protobuf import saved_metadata_pb2

        proto = saved_metadata_pb2.SavedMetadata()
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
        yield from (node.metadata for node in proto.nodes)
    path = os.path.join(directory, "saved_model.pb")
    if os.path.isfile(path):
        from tensorflow.core.protobuf import saved_model_pb2

        proto = saved_model_pb2.SavedModel()
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
        for graph in proto.meta_graphs:
            for node in graph.object_graph_def.nodes:
                if node.WhichOneof("kind") == "user_object" and node.user_object.metadata:
                    yield node.user_object.metadata


def _from_encoder_config(recorded: dict) -> tuple[dict, dict]:
    """AlbertEncoder.get_config() → (AlbertConfig fields, defaulted fields)."""
    fields, defaulted = {"num_hidden_layers": recorded.get("num_layers")}, {}
    activation = recorded.get("activation")
    if isinstance(activation, dict):  # a serialized function: {"config": "Text>gelu", ...}
        activation = activation.get("config")
    if activation is not None:
        if activation not in _ACTIVATIONS:
            raise CheckpointError(
                f"the SavedModel's AlbertEncoder has activation {activation!r}; known: "
                f"{sorted(_ACTIVATIONS)}"
            )
        fields["hidden_act"] = _ACTIVATIONS[activation]
    fields["hidden_dropout_prob"] = recorded.get("dropout_rate")
    fields["attention_probs_dropout_prob"] = recorded.get("attention_dropout_rate")
    initializer = recorded.get("initializer")
    if isinstance(initializer, dict):
        fields["initializer_range"] = (initializer.get("config") or {}).get("stddev")
    for key in list(fields):
        if fields[key] is None:
            del fields[key]
            if key in NOT_INFERABLE:
                defaulted[key] = NOT_INFERABLE[key]
    if "num_hidden_layers" not in fields:
        raise CheckpointError("the SavedModel's AlbertEncoder config has no num_layers")
    for key in set(NOT_INFERABLE) - set(fields):
        defaulted.setdefault(key, NOT_INFERABLE[key])
    return fields, defaulted
