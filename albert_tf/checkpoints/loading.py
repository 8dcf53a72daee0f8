"""`load_checkpoint`: restores any model from any checkpoint this project accepts (its
own, official TF1, TF-Hub v1 modules, converted ones) and reports what it did not restore.
brightmart/albert_zh checkpoints load into a model whose config has embedding_size =
hidden_size (what `convert --source brightmart` writes); any other model refuses them with
a pointer to that conversion.

Whatever the source, the `LoadReport` names every weight of the model that the checkpoint
did not provide, and a warning line is logged for each head left at its random
initialization.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import tensorflow as tf

from albert_tf.checkpoints.brightmart import (
    brightmart_config,
    brightmart_to_official,
    is_brightmart,
)
from albert_tf.checkpoints.official import (
    HEADS,
    assign_official,
    official_name_map,
    read_tf1_checkpoint,
    strip_module,
)
from albert_tf.checkpoints.own import (
    CONFIG_NAME,
    ENCODER_OBJECT,
    CheckpointError,
    checkpoint_reader,
    checkpoint_variables,
    head_attributes,
    model_config,
    resolve_checkpoint,
)
from albert_tf.modeling.config import AlbertConfig, ConfigError
from albert_tf.modeling.encoder import AlbertEncoder
from data_pipeline.io import filesystem

log = logging.getLogger(__name__)


@dataclasses.dataclass
class LoadReport:
    """What `load_checkpoint` restored."""

    path: str
    format: str  # "albert_tf", "tf1" or "brightmart"
    restored: list[str]  # components: "encoder", "mlm_head", ...
    missing: list[str]  # components of the model absent from the checkpoint
    not_restored: list[str] = dataclasses.field(default_factory=list)
    # ^ every weight of the model (Keras path) the checkpoint did not provide

    def __str__(self):
        text = f"restored {', '.join(self.restored)} from {self.path} ({self.format})"
        if self.missing:
            text += f"; not in the checkpoint, left at initialization: {', '.join(self.missing)}"
        if self.not_restored:
            text += (
                f" ({len(self.not_restored)} weight(s): "
                + ", ".join(self.not_restored[:6])
                + (" ..." if len(self.not_restored) > 6 else "")
                + ")"
            )
        return text

    def warnings(self) -> list[str]:
        """One line per component left at its random initialization."""
        return [
            f"WARNING: {self.path} has no {name}: it is left at its random "
            f"initialization ({', '.join(_weight_paths(self.not_restored, name))})"
            for name in self.missing
        ]


def _weight_paths(paths: list[str], component: str) -> list[str]:
    named = [p for p in paths if f"/{component}/" in f"/{p}"]
    return named or paths


def load_checkpoint(model, path: str) -> LoadReport:
    """Restores `model` from a checkpoint directory or prefix.

    `model` is an `AlbertEncoder` or any model with an `encoder` attribute (pretrainer,
    task models). Accepted checkpoints: this project's own (trainer, `save_checkpoint`,
    `albert_tf.checkpoints.convert`) and official TF1 / TF-Hub name-based ones. The encoder must be
    complete; heads the checkpoint lacks are listed in the report and logged.

    Raises:
      FileNotFoundError: no checkpoint at `path`.
      CheckpointError: the checkpoint belongs to another model size or kind.
    """
    prefix = resolve_checkpoint(path)
    if not model.built:
        model.build()
    try:
        return _load(model, prefix)
    except (tf.errors.OpError, IndexError) as e:  # a truncated or corrupt .index / .data
        # (TensorFlow's checkpoint reader raises IndexError for a data file cut short)
        reason = _first_line(e.message if isinstance(e, tf.errors.OpError) else e)
        raise CheckpointError(f"{prefix} is unreadable (truncated or corrupt?): {reason}") from None


def _load(model, prefix: str) -> LoadReport:
    keys = {name: shape for name, shape in checkpoint_variables(prefix)}
    own = _model_children(prefix)
    if own is not None:
        report = _load_own(model, prefix, own)
    elif is_brightmart({strip_module(k) for k in keys}):
        report = _load_official(model, prefix, _brightmart_weights(model, prefix), "brightmart")
    elif any(strip_module(k) == "bert/embeddings/word_embeddings" for k in keys):
        report = _load_official(model, prefix, read_tf1_checkpoint(prefix), "tf1")
    else:
        raise CheckpointError(
            f"{prefix} is neither an albert_tf checkpoint nor an official "
            f"ALBERT TF1 checkpoint (first keys: {sorted(keys)[:3]})"
        )
    for line in report.warnings():
        log.warning("%s", line)
    return report


def _load_official(model, prefix: str, weights: dict, format: str) -> LoadReport:
    result = assign_official(model, weights, source=prefix)
    result.raise_for_errors(allow_missing=HEADS)
    table = official_name_map(model)
    assigned = {id(table[name].variable) for name in result.assigned}
    return LoadReport(
        prefix,
        format,
        result.components_restored,
        result.components_missing,
        [w.path for w in model.weights if id(w) not in assigned],
    )


def _brightmart_weights(model, prefix: str) -> dict:
    """A brightmart checkpoint's arrays under official names, for a model that can hold
    them (embedding_size = hidden_size, one shared block); else a one-line refusal."""
    config = model_config(model)
    if config.embedding_size != config.hidden_size:
        raise CheckpointError(
            f"{prefix} is a brightmart/albert_zh checkpoint, which a model with "
            f"embedding_size={config.embedding_size} < hidden_size={config.hidden_size} "
            f"cannot hold: convert it first (python -m albert_tf.checkpoints.convert "
            f"--source brightmart --input {prefix} --albert_config_file CONFIG "
            f"--output_dir DIR) and use DIR"
        )
    brightmart_config(config, "the model's config")
    return brightmart_to_official(read_tf1_checkpoint(prefix), prefix).weights


def _model_children(prefix: str) -> set[str] | None:
    """Names of the children of the root's `model` node in the checkpoint's object graph
    (e.g. {"encoder", "mlm_head", "sop_head"}), or None when there is no such node.

    Read from the object graph, not from the variable keys: a key is named after the first
    path to its variable, and in a trainer checkpoint (model + optimizer + iterator) that
    path goes through the optimizer (`optimizer/_trainable_variables/0/...`), so there are
    no `model/encoder/...` keys although the model → encoder edges are there.
    """
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    reader = checkpoint_reader(prefix)
    if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
        return None
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    for child in graph.nodes[0].children:
        if child.local_name == "model":
            return {c.local_name for c in graph.nodes[child.node_id].children}
    return None


def _load_own(model, prefix: str, present: set[str]) -> LoadReport:
    config_hint = ""
    config_path = os.path.join(os.path.dirname(prefix), CONFIG_NAME)
    if filesystem.isfile(config_path):
        try:
            saved = AlbertConfig.from_json_file(config_path)
            diffs = [
                f"{f}: checkpoint {getattr(saved, f)} vs model {getattr(model_config(model), f)}"
                for f in (
                    "vocab_size",
                    "embedding_size",
                    "hidden_size",
                    "num_hidden_layers",
                    "num_hidden_groups",
                    "inner_group_num",
                    "intermediate_size",
                    "sharing",
                    "max_position_embeddings",
                    "type_vocab_size",
                )
                if getattr(saved, f) != getattr(model_config(model), f)
            ]
            if diffs:
                config_hint = f" ({config_path} differs: {'; '.join(diffs)})"
        except (ConfigError, OSError):
            pass

    if ENCODER_OBJECT not in present:
        raise CheckpointError(f"{prefix} holds no encoder (no model/{ENCODER_OBJECT} object)")
    components = {ENCODER_OBJECT: model if isinstance(model, AlbertEncoder) else model.encoder}
    if not isinstance(model, AlbertEncoder):
        components.update({name: getattr(model, name) for name in head_attributes(model)})
    restored, missing, not_restored = [], [], []
    for name, layer in components.items():
        if name not in present:
            missing.append(name)
            not_restored.extend(w.path for w in layer.weights)
            continue
        try:
            status = tf.train.Checkpoint(model=tf.train.Checkpoint(**{name: layer})).read(prefix)
            status.assert_existing_objects_matched()
            status.expect_partial()  # the other components are read separately, on purpose
        except (AssertionError, ValueError) as e:
            raise CheckpointError(
                f"{prefix} does not fit the model's {name}{config_hint}: {_first_line(e)}"
            ) from None
        except tf.errors.OpError as e:
            raise CheckpointError(
                f"{prefix} is unreadable (truncated or corrupt?): {name}: {_first_line(e.message)}"
            ) from None
        restored.append(name)
    return LoadReport(prefix, "albert_tf", restored, missing, not_restored)


def _first_line(e: Exception | str) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
