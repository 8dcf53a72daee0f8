"""Checkpoints: this project's own, and the official TF1 / TF-Hub / Hugging Face layouts.

Own checkpoints are object-based (`tf.train.Checkpoint(model=...)`); every model keeps its
encoder in `model.encoder` and its heads in named attributes, so an encoder restores from
any model's checkpoint and a head that is absent is reported, not silently random.

Foreign weights are translated to the official TF1 variable names (the lingua franca:
`bert/embeddings/word_embeddings`, `bert/encoder/transformer/group_0/inner_group_0/...`,
`cls/predictions/...`) and assigned through `official_name_map`, one table for all sources.
It covers the official fine-tuned heads too: run_classifier's `output_weights` /
`output_bias` (classification, and STS-B regression with one output), run_race's (one
score per choice) and run_squad_v1's `cls/squad/output_weights` / `output_bias`.

Whatever the source, `load_checkpoint` returns a `LoadReport` naming every weight of the
model that the checkpoint did not provide, and logs a warning line for each head left at
its random initialization.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import logging
import os
import re

import numpy as np
import tensorflow as tf

from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.encoder import AlbertEncoder

log = logging.getLogger(__name__)

CONFIG_NAME = "albert_config.json"


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or does not fit the model."""


# ----------------------------------------------------------------------------- own format
def resolve_checkpoint(path: str) -> str:
    """A directory (its latest checkpoint) or a checkpoint prefix → a readable prefix."""
    path = os.fspath(path)
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            hub_variables = os.path.join(path, "variables", "variables")  # TF-Hub v1 module
            if os.path.exists(hub_variables + ".index"):
                return hub_variables
            indexes = sorted(glob.glob(os.path.join(path, "*.index")))
            if len(indexes) == 1:
                return indexes[0][: -len(".index")]
            raise CheckpointError(
                f"no checkpoint in directory {path} (no 'checkpoint' state file and "
                f"{len(indexes)} *.index files)")
        return latest
    if path.endswith(".index"):
        path = path[: -len(".index")]
    if os.path.exists(path + ".index"):
        return path
    raise FileNotFoundError(f"checkpoint not found: {path} (expected a directory or a "
                            f"checkpoint prefix with {os.path.basename(path)}.index)")


def _checkpoint_root(model, components: list[str] | None = None):
    """The object graph every own checkpoint uses: root → model → encoder/heads.

    With `components`, only those parts of `model` (e.g. ["encoder", "mlm_head"]) are
    written, so that a head that was never trained or imported is absent, not random.
    """
    if isinstance(model, AlbertEncoder):
        return tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=model))
    if components is None:
        return tf.train.Checkpoint(model=model)
    return tf.train.Checkpoint(model=tf.train.Checkpoint(
        **{name: getattr(model, name) for name in components}))


def save_checkpoint(model, directory: str, config: AlbertConfig | None = None,
                    max_to_keep: int = 1, components: list[str] | None = None) -> str:
    """Writes `model` (an encoder or any model with `.encoder`) as `directory/ckpt-N`, plus
    `albert_config.json`. Returns the checkpoint prefix.

    `components` restricts what is written (see `_checkpoint_root`). The `checkpoint`
    state file is updated only after the data is complete, so a crash never leaves a half
    checkpoint that `load_checkpoint(directory)` would pick.
    """
    if not model.built:
        model.build()
    os.makedirs(directory, exist_ok=True)
    config = config or _model_config(model)
    config.to_json_file(os.path.join(directory, CONFIG_NAME))
    manager = tf.train.CheckpointManager(_checkpoint_root(model, components), directory,
                                         max_to_keep=max_to_keep)
    return manager.save()


def _model_config(model) -> AlbertConfig:
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    return encoder.config


def _head_attributes(model) -> list[str]:
    """Named sub-layers of a task model other than its encoder (its heads)."""
    import keras
    return [name for name, value in vars(model).items()
            if isinstance(value, keras.layers.Layer) and name != "encoder"
            and not name.startswith("_")]


@dataclasses.dataclass
class LoadReport:
    """What `load_checkpoint` restored."""
    path: str
    format: str                      # "albert_tf" or "tf1"
    restored: list[str]              # components: "encoder", "mlm_head", ...
    missing: list[str]               # components of the model absent from the checkpoint
    not_restored: list[str] = dataclasses.field(default_factory=list)
    # ^ every weight of the model (Keras path) the checkpoint did not provide

    def __str__(self):
        text = f"restored {', '.join(self.restored)} from {self.path} ({self.format})"
        if self.missing:
            text += f"; not in the checkpoint, left at initialization: {', '.join(self.missing)}"
        if self.not_restored:
            text += (f" ({len(self.not_restored)} weight(s): "
                     + ", ".join(self.not_restored[:6])
                     + (" ..." if len(self.not_restored) > 6 else "") + ")")
        return text

    def warnings(self) -> list[str]:
        """One line per component left at its random initialization."""
        return [f"WARNING: {self.path} has no {name}: it is left at its random "
                f"initialization ({', '.join(_weight_paths(self.not_restored, name))})"
                for name in self.missing]


def _weight_paths(paths: list[str], component: str) -> list[str]:
    named = [p for p in paths if f"/{component}/" in f"/{p}"]
    return named or paths


def load_checkpoint(model, path: str) -> LoadReport:
    """Restores `model` from a checkpoint directory or prefix.

    `model` is an `AlbertEncoder` or any model with an `encoder` attribute (pretrainer,
    task models). Accepted checkpoints: this project's own (trainer, `save_checkpoint`,
    `albert_tf.convert`) and official TF1 / TF-Hub name-based ones. The encoder must be
    complete; heads the checkpoint lacks are listed in the report and logged.

    Raises:
      FileNotFoundError: no checkpoint at `path`.
      CheckpointError: the checkpoint belongs to another model size or kind.
    """
    prefix = resolve_checkpoint(path)
    if not model.built:
        model.build()
    keys = {name: shape for name, shape in tf.train.list_variables(prefix)}
    own = _model_children(prefix)
    if own is not None:
        report = _load_own(model, prefix, own)
    elif any(_strip_module(k) == "bert/embeddings/word_embeddings" for k in keys):
        weights = read_tf1_checkpoint(prefix)
        result = assign_official(model, weights, source=prefix)
        result.raise_for_errors(allow_missing=HEADS)
        table = official_name_map(model)
        assigned = {id(table[name].variable) for name in result.assigned}
        report = LoadReport(prefix, "tf1", result.components_restored,
                            result.components_missing,
                            [w.path for w in model.weights if id(w) not in assigned])
    else:
        raise CheckpointError(f"{prefix} is neither an albert_tf checkpoint nor an official "
                              f"ALBERT TF1 checkpoint (first keys: {sorted(keys)[:3]})")
    for line in report.warnings():
        log.warning("%s", line)
    return report


def _model_children(prefix: str) -> set[str] | None:
    """Names of the children of the root's `model` node in the checkpoint's object graph
    (e.g. {"encoder", "mlm_head", "sop_head"}), or None when there is no such node.

    Read from the object graph, not from the variable keys: a key is named after the first
    path to its variable, and in a trainer checkpoint (model + optimizer + iterator) that
    path goes through the optimizer (`optimizer/_trainable_variables/0/...`), so there are
    no `model/encoder/...` keys although the model → encoder edges are there.
    """
    from tensorflow.core.protobuf import trackable_object_graph_pb2
    reader = tf.train.load_checkpoint(prefix)
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
    if os.path.isfile(config_path):
        try:
            saved = AlbertConfig.from_json_file(config_path)
            diffs = [f"{f}: checkpoint {getattr(saved, f)} vs model {getattr(_model_config(model), f)}"
                     for f in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                               "num_hidden_groups", "inner_group_num", "intermediate_size",
                               "sharing", "max_position_embeddings", "type_vocab_size")
                     if getattr(saved, f) != getattr(_model_config(model), f)]
            if diffs:
                config_hint = f" ({config_path} differs: {'; '.join(diffs)})"
        except (ConfigError, OSError):
            pass

    components = {"encoder": model if isinstance(model, AlbertEncoder) else model.encoder}
    if not isinstance(model, AlbertEncoder):
        components.update({name: getattr(model, name) for name in _head_attributes(model)})
    restored, missing, not_restored = [], [], []
    for name, layer in components.items():
        if name not in present:
            if name == "encoder":
                raise CheckpointError(f"{prefix} holds no encoder (no model/encoder object)")
            missing.append(name)
            not_restored.extend(w.path for w in layer.weights)
            continue
        try:
            status = tf.train.Checkpoint(model=tf.train.Checkpoint(**{name: layer})).read(prefix)
            status.assert_existing_objects_matched()
            status.expect_partial()  # the other components are read separately, on purpose
        except (AssertionError, ValueError) as e:
            raise CheckpointError(f"{prefix} does not fit the model's {name}{config_hint}: "
                                  f"{_first_line(e)}") from None
        except tf.errors.OpError as e:
            raise CheckpointError(f"{prefix}: {name}: {e.message}") from None
        restored.append(name)
    return LoadReport(prefix, "albert_tf", restored, missing, not_restored)


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ----------------------------------------------------------------------------- official names
# Task heads and the official names of their (kernel, bias): the kernel is stored
# transposed, [outputs, H]. run_classifier: `num_labels` outputs (1 for STS-B); run_race:
# one score per choice; run_squad_v1: start and end.
_OFFICIAL_HEADS = {"classifier_head": ("output_weights", "output_bias"),
                   "choice_head": ("output_weights", "output_bias"),
                   "span_head": ("cls/squad/output_weights", "cls/squad/output_bias")}
# Components a checkpoint may lack (reported, never fatal): the heads.
HEADS = ("mlm_head", "sop_head", *_OFFICIAL_HEADS)


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
            f"for no sharing)")
    out = {}

    def add_dense(name, layer, component="encoder"):
        out[f"{name}/kernel"] = OfficialVariable(layer.kernel, False, component)
        out[f"{name}/bias"] = OfficialVariable(layer.bias, False, component)

    def add_norm(name, layer, component="encoder"):
        out[f"{name}/gamma"] = OfficialVariable(layer.gamma, False, component)
        out[f"{name}/beta"] = OfficialVariable(layer.beta, False, component)

    emb = encoder.embeddings
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        out[f"bert/embeddings/{table}"] = OfficialVariable(getattr(emb, table), False,
                                                           "encoder")
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
        out["cls/predictions/output_bias"] = OfficialVariable(mlm.output_bias, False,
                                                              "mlm_head")
    heads = {"sop_head": ("cls/seq_relationship/output_weights",
                          "cls/seq_relationship/output_bias"), **_OFFICIAL_HEADS}
    for component, (kernel, bias) in heads.items():
        head = getattr(model, component, None)
        if head is not None:
            dense = getattr(head, "dense", head)   # a head layer, or a Dense itself
            out[kernel] = OfficialVariable(dense.kernel, True, component)
            out[bias] = OfficialVariable(dense.bias, False, component)
    return out


@dataclasses.dataclass
class AssignResult:
    source: str
    assigned: list[str]
    missing: list[str]               # expected by the model, absent from the source
    mismatched: list[str]            # "name: source shape vs model shape"
    unused: list[str]                # in the source, not used by the model
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
                f"the model (another model size?): " + "; ".join(self.mismatched[:8]))
        projection = [n for n in self.unused
                      if n.startswith("bert/encoder/embedding_hidden_mapping_in/")]
        if projection:
            raise CheckpointError(
                f"{self.source}: the source has an E→H projection ({projection[0]}) but the "
                f"model has embedding_size == hidden_size, where the official model has none")
        fatal = [n for n in self.missing if self.components[n] not in allow_missing]
        if fatal:
            raise CheckpointError(
                f"{self.source}: {len(fatal)} variable(s) the model needs are missing: "
                + ", ".join(fatal[:8]) + (" ..." if len(fatal) > 8 else ""))


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
            mismatched.append(f"{name}: source {list(source_shape)} vs model "
                              f"{list(variable.shape)[::-1] if transpose else list(variable.shape)}")
            continue
        variable.assign(value.astype(np.float32))
        assigned.append(name)
    unused = sorted(set(weights) - set(table))
    return AssignResult(source, assigned, missing, mismatched, unused,
                        {name: entry.component for name, entry in table.items()})


# ----------------------------------------------------------------------------- TF1 / TF-Hub
_OPTIMIZER_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1", "/Momentum", "/lamb_m",
                       "/lamb_v")
_SKIPPED = ("global_step", "beta1_power", "beta2_power")


def _strip_module(name: str) -> str:
    return name[len("module/"):] if name.startswith("module/") else name


def read_tf1_checkpoint(path: str) -> dict[str, np.ndarray]:
    """Reads an official TF1 checkpoint or a TF-Hub v1 module's variables.

    Drops the TF-Hub `module/` prefix, optimizer slots and `global_step`.
    """
    prefix = resolve_checkpoint(path)
    reader = tf.train.load_checkpoint(prefix)
    out = {}
    for name in reader.get_variable_to_shape_map():
        if name in _SKIPPED or name.endswith(_OPTIMIZER_SUFFIXES):
            continue
        out[_strip_module(name)] = reader.get_tensor(name)
    return out


# ----------------------------------------------------------------------------- Hugging Face
_HF_LAYER = r"encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\."
_HF_RULES = [  # (pattern, official template, transpose?)
    (r"embeddings\.(word|position|token_type)_embeddings\.weight", "bert/embeddings/{0}_embeddings", False),
    (r"embeddings\.LayerNorm\.weight", "bert/embeddings/LayerNorm/gamma", False),
    (r"embeddings\.LayerNorm\.bias", "bert/embeddings/LayerNorm/beta", False),
    (r"encoder\.embedding_hidden_mapping_in\.weight", "bert/encoder/embedding_hidden_mapping_in/kernel", True),
    (r"encoder\.embedding_hidden_mapping_in\.bias", "bert/encoder/embedding_hidden_mapping_in/bias", False),
    (_HF_LAYER + r"attention\.(query|key|value)\.weight", "{L}/attention_1/self/{2}/kernel", True),
    (_HF_LAYER + r"attention\.(query|key|value)\.bias", "{L}/attention_1/self/{2}/bias", False),
    (_HF_LAYER + r"attention\.dense\.weight", "{L}/attention_1/output/dense/kernel", True),
    (_HF_LAYER + r"attention\.dense\.bias", "{L}/attention_1/output/dense/bias", False),
    (_HF_LAYER + r"attention\.LayerNorm\.weight", "{L}/LayerNorm/gamma", False),
    (_HF_LAYER + r"attention\.LayerNorm\.bias", "{L}/LayerNorm/beta", False),
    (_HF_LAYER + r"ffn\.weight", "{L}/ffn_1/intermediate/dense/kernel", True),
    (_HF_LAYER + r"ffn\.bias", "{L}/ffn_1/intermediate/dense/bias", False),
    (_HF_LAYER + r"ffn_output\.weight", "{L}/ffn_1/intermediate/output/dense/kernel", True),
    (_HF_LAYER + r"ffn_output\.bias", "{L}/ffn_1/intermediate/output/dense/bias", False),
    (_HF_LAYER + r"full_layer_layer_norm\.weight", "{L}/LayerNorm_1/gamma", False),
    (_HF_LAYER + r"full_layer_layer_norm\.bias", "{L}/LayerNorm_1/beta", False),
    (r"pooler\.weight", "bert/pooler/dense/kernel", True),
    (r"pooler\.bias", "bert/pooler/dense/bias", False),
    (r"predictions\.dense\.weight", "cls/predictions/transform/dense/kernel", True),
    (r"predictions\.dense\.bias", "cls/predictions/transform/dense/bias", False),
    (r"predictions\.LayerNorm\.weight", "cls/predictions/transform/LayerNorm/gamma", False),
    (r"predictions\.LayerNorm\.bias", "cls/predictions/transform/LayerNorm/beta", False),
    (r"predictions\.(?:decoder\.)?bias", "cls/predictions/output_bias", False),
    (r"sop_classifier\.classifier\.weight", "cls/seq_relationship/output_weights", False),
    (r"sop_classifier\.classifier\.bias", "cls/seq_relationship/output_bias", False),
]
_HF_IGNORED = (r"embeddings\.position_ids", r"predictions\.decoder\.weight")


def transformers_to_official(state: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Hugging Face `Albert*` state dict → (official-named arrays, unrecognized keys).

    PyTorch Linear weights are [out, in]; TF kernels are [in, out], hence the transposes.
    The MLM decoder weight is tied to the word embeddings; an untied one is refused.
    """
    out, unknown = {}, []
    for key, value in state.items():
        name = key[len("albert."):] if key.startswith("albert.") else key
        if any(re.fullmatch(p, name) for p in _HF_IGNORED):
            continue
        for pattern, template, transpose in _HF_RULES:
            m = re.fullmatch(pattern, name)
            if m:
                groups = m.groups()
                layer = (f"bert/encoder/transformer/group_{groups[0]}/inner_group_{groups[1]}"
                         if pattern.startswith(_HF_LAYER) else "")
                official = template.format(*groups, L=layer)
                out[official] = np.asarray(value).T if transpose else np.asarray(value)
                break
        else:
            unknown.append(key)
    decoder = state.get("predictions.decoder.weight")
    word = out.get("bert/embeddings/word_embeddings")
    if decoder is not None and word is not None and not np.array_equal(np.asarray(decoder), word):
        raise CheckpointError("predictions.decoder.weight differs from the word embeddings: "
                              "ALBERT ties them, an untied decoder cannot be imported")
    return out, unknown


def config_from_transformers(hf: dict, source: str = "config.json") -> AlbertConfig:
    """Hugging Face `AlbertConfig` JSON → `AlbertConfig`.

    Hugging Face's "gelu" is the exact (erf) GELU; its "gelu_new" is the official tanh form.
    """
    acts = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
            "gelu_fast": "gelu", "relu": "relu"}
    act = hf.get("hidden_act", "gelu_new")
    if act not in acts:
        raise ConfigError(f"{source}: hidden_act={act!r} has no ALBERT equivalent "
                          f"(supported: {sorted(acts)})")
    fields = {k: hf[k] for k in (
        "vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
        "num_attention_heads", "intermediate_size", "inner_group_num", "hidden_dropout_prob",
        "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
        "initializer_range", "layer_norm_eps") if k in hf}
    fields["hidden_act"] = acts[act]
    fields.setdefault("embedding_size", 128)  # Hugging Face's default
    return AlbertConfig.from_dict(fields, source=source)


def read_transformers(directory: str) -> tuple[AlbertConfig, dict[str, np.ndarray], list[str]]:
    """Reads a `save_pretrained` directory: config.json + model.safetensors (sharded or
    not), or pytorch_model.bin when torch is installed.

    Returns (config, official-named arrays, unrecognized keys).
    """
    config_path = os.path.join(directory, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"not a Hugging Face model directory (no config.json): {directory}")
    with open(config_path, encoding="utf-8") as f:
        try:
            hf_config = json.load(f)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{config_path}:{e.lineno}: invalid JSON: {e.msg}") from None
    model_type = hf_config.get("model_type")
    if model_type not in (None, "albert"):
        raise ConfigError(f"{config_path}: model_type={model_type!r}, expected 'albert'")
    config = config_from_transformers(hf_config, source=config_path)

    state = {}
    single = os.path.join(directory, "model.safetensors")
    index = single + ".index.json"
    binary = os.path.join(directory, "pytorch_model.bin")
    if os.path.isfile(single) or os.path.isfile(index):
        from safetensors.numpy import load_file
        files = [single] if os.path.isfile(single) else sorted(
            {os.path.join(directory, v) for v in json.load(open(index))["weight_map"].values()})
        for file in files:
            state.update(load_file(file))
    elif os.path.isfile(binary):
        try:
            import torch
        except ImportError:
            raise CheckpointError(f"{binary}: reading pytorch_model.bin needs torch "
                                  f"(pip install torch), or re-save with safetensors") from None
        loaded = torch.load(binary, map_location="cpu", weights_only=True)
        state = {k: v.float().numpy() for k, v in loaded.items()}
    else:
        raise FileNotFoundError(f"{directory}: no model.safetensors or pytorch_model.bin")
    weights, unknown = transformers_to_official(state)
    return config, weights, unknown
