"""Hugging Face `Albert*` weights (`save_pretrained` directories) → official names.

PyTorch Linear weights are [out, in]; TF kernels are [in, out], hence the transposes.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from albert_tf.checkpoints.own import CheckpointError
from albert_tf.checkpoints.task_kinds import KINDS
from albert_tf.modeling.config import AlbertConfig, ConfigError

_HF_LAYER = r"encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\."
_HF_RULES = [  # (pattern, official template, transpose?)
    (
        r"embeddings\.(word|position|token_type)_embeddings\.weight",
        "bert/embeddings/{0}_embeddings",
        False,
    ),
    (r"embeddings\.LayerNorm\.weight", "bert/embeddings/LayerNorm/gamma", False),
    (r"embeddings\.LayerNorm\.bias", "bert/embeddings/LayerNorm/beta", False),
    (
        r"encoder\.embedding_hidden_mapping_in\.weight",
        "bert/encoder/embedding_hidden_mapping_in/kernel",
        True,
    ),
    (
        r"encoder\.embedding_hidden_mapping_in\.bias",
        "bert/encoder/embedding_hidden_mapping_in/bias",
        False,
    ),
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
    # Task heads: PyTorch's [outputs, H] is the official run_classifier / run_squad_v1
    # layout already (their kernels are stored transposed too).
    (r"classifier\.weight", "output_weights", False),
    (r"classifier\.bias", "output_bias", False),
    (r"qa_outputs\.weight", "cls/squad/output_weights", False),
    (r"qa_outputs\.bias", "cls/squad/output_bias", False),
]
# Hugging Face head classes (config.json `architectures`) → this project's task kind
# (each kind's `transformers` head, albert_tf.checkpoints.task_kinds). Classes absent here
# carry no task head.
HEAD_ARCHITECTURES = {
    k.transformers.architecture: k.name for k in KINDS.values() if k.finetuned and k.transformers
}
# Head classes with no matching model here, and why.
UNSUPPORTED_ARCHITECTURES: dict[str, str] = {}
# Config fields with the same name and meaning on both sides.
SHARED_CONFIG_FIELDS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_hidden_groups",
    "num_attention_heads",
    "intermediate_size",
    "inner_group_num",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
    "layer_norm_eps",
)
_HF_IGNORED = (r"embeddings\.position_ids", r"predictions\.decoder\.weight")


def transformers_to_official(
    state: dict[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Hugging Face `Albert*` state dict → (official-named arrays, unrecognized keys).

    PyTorch Linear weights are [out, in]; TF kernels are [in, out], hence the transposes.
    The MLM decoder weight is tied to the word embeddings; an untied one is refused.
    """
    out, unknown = {}, []
    for key, value in state.items():
        name = key[len("albert.") :] if key.startswith("albert.") else key
        if any(re.fullmatch(p, name) for p in _HF_IGNORED):
            continue
        for pattern, template, transpose in _HF_RULES:
            m = re.fullmatch(pattern, name)
            if m:
                groups = m.groups()
                layer = (
                    f"bert/encoder/transformer/group_{groups[0]}/inner_group_{groups[1]}"
                    if pattern.startswith(_HF_LAYER)
                    else ""
                )
                official = template.format(*groups, L=layer)
                out[official] = np.asarray(value).T if transpose else np.asarray(value)
                break
        else:
            unknown.append(key)
    decoder = state.get("predictions.decoder.weight")
    word = out.get("bert/embeddings/word_embeddings")
    if decoder is not None and word is not None and not np.array_equal(np.asarray(decoder), word):
        raise CheckpointError(
            "predictions.decoder.weight differs from the word embeddings: "
            "ALBERT ties them, an untied decoder cannot be imported"
        )
    return out, unknown


def config_from_transformers(hf: dict, source: str = "config.json") -> AlbertConfig:
    """Hugging Face `AlbertConfig` JSON → `AlbertConfig`.

    Hugging Face's "gelu" is the exact (erf) GELU; its "gelu_new" is the official tanh form.
    """
    acts = {
        "gelu": "gelu_exact",
        "gelu_new": "gelu",
        "gelu_pytorch_tanh": "gelu",
        "gelu_fast": "gelu",
        "relu": "relu",
    }
    act = hf.get("hidden_act", "gelu_new")
    if act not in acts:
        raise ConfigError(
            f"{source}: hidden_act={act!r} has no ALBERT equivalent (supported: {sorted(acts)})"
        )
    fields = {k: hf[k] for k in SHARED_CONFIG_FIELDS if k in hf}
    fields["hidden_act"] = acts[act]
    fields.setdefault("embedding_size", 128)  # Hugging Face's default
    return AlbertConfig.from_dict(fields, source=source)


def transformers_task(hf: dict, source: str = "config.json") -> dict | None:
    """The fine-tuning task a Hugging Face config describes (its `architectures`), as
    task.json fields: {"kind"} and what the kind's `TransformersHead.task_in` reads from
    the config (a classifier's labels from `id2label`, regression, multi-label; a token
    classifier's tags); None for a pretraining or bare model."""
    architectures = hf.get("architectures") or []
    for name in architectures:
        if name in UNSUPPORTED_ARCHITECTURES:
            raise CheckpointError(
                f"{source}: {name} cannot be imported: {UNSUPPORTED_ARCHITECTURES[name]}"
            )
    kinds = [HEAD_ARCHITECTURES[a] for a in architectures if a in HEAD_ARCHITECTURES]
    if not kinds:
        return None
    kind = KINDS[kinds[0]]
    return {"kind": kind.name, **kind.transformers.task_in(hf)}


def read_transformers_config(directory: str) -> dict:
    """config.json of a Hugging Face ALBERT directory, checked to be ALBERT's."""
    config_path = os.path.join(directory, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"not a Hugging Face model directory (no config.json): {directory}")
    with open(config_path, encoding="utf-8") as f:
        try:
            hf_config = json.load(f)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{config_path}:{e.lineno}: invalid JSON: {e.msg}") from None
        except UnicodeDecodeError as e:
            raise ConfigError(
                f"{config_path}: not UTF-8 text (byte {e.start}): not a config.json"
            ) from None
    if not isinstance(hf_config, dict):
        raise ConfigError(f"{config_path}: expected a JSON object, got {type(hf_config).__name__}")
    model_type = hf_config.get("model_type")
    if model_type not in (None, "albert"):
        raise ConfigError(f"{config_path}: model_type={model_type!r}, expected 'albert'")
    return hf_config


def transformers_finetuned_task(directory: str) -> dict | None:
    """task.json fields of a Hugging Face task model directory (`transformers_task`, plus
    max_seq_length from its positions and casing from tokenizer_config.json), or None when
    it holds no task head."""
    hf = read_transformers_config(directory)
    task = transformers_task(hf, os.path.join(directory, "config.json"))
    if task is None:
        return None
    casing = os.path.join(directory, "tokenizer_config.json")
    do_lower_case = True
    if os.path.isfile(casing):
        with open(casing, encoding="utf-8") as f:
            do_lower_case = bool(json.load(f).get("do_lower_case", True))
    return dict(
        task,
        max_seq_length=min(512, hf.get("max_position_embeddings", 512)),
        do_lower_case=do_lower_case,
        source="transformers",
    )


def _unreadable(path: str, what: str, e: Exception) -> str:
    lines = str(e).strip().splitlines()
    reason = lines[0].split(". ")[0].rstrip(".") if lines else type(e).__name__
    return f"{path}: not a readable {what} (truncated or corrupt?): {reason}"


def _shards(index: str, directory: str) -> list[str]:
    """The files of a sharded safetensors checkpoint's index (its weight_map's values)."""
    try:
        with open(index, encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
        return sorted({os.path.join(directory, v) for v in weight_map.values()})
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # (JSON and Unicode too)
        raise CheckpointError(_unreadable(index, "safetensors index", e)) from None


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    """{name: array} of one safetensors file; CheckpointError naming it when it does not
    read (random bytes, a truncated download)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(_unreadable(path, "safetensors file", e)) from None


def read_transformers(directory: str) -> tuple[AlbertConfig, dict[str, np.ndarray], list[str]]:
    """Reads a `save_pretrained` directory: config.json + model.safetensors (sharded or
    not), or pytorch_model.bin when torch is installed.

    Returns (config, official-named arrays, unrecognized keys).
    """
    config_path = os.path.join(directory, "config.json")
    config = config_from_transformers(read_transformers_config(directory), source=config_path)

    state = {}
    single = os.path.join(directory, "model.safetensors")
    index = single + ".index.json"
    binary = os.path.join(directory, "pytorch_model.bin")
    if os.path.isfile(single) or os.path.isfile(index):
        files = [single] if os.path.isfile(single) else _shards(index, directory)
        for file in files:
            state.update(_read_safetensors(file))
    elif os.path.isfile(binary):
        try:
            import torch
        except ImportError:
            raise CheckpointError(
                f"{binary}: reading pytorch_model.bin needs torch "
                f"(pip install torch), or re-save with safetensors"
            ) from None
        try:
            loaded = torch.load(binary, map_location="cpu", weights_only=True)
        except Exception as e:  # torch's unpickler and zip reader raise many kinds
            raise CheckpointError(_unreadable(binary, "PyTorch state dict", e)) from None
        if not isinstance(loaded, dict) or not all(
            isinstance(v, torch.Tensor) for v in loaded.values()
        ):
            raise CheckpointError(f"{binary}: not a PyTorch state dict of tensors")
        state = {k: v.float().numpy() for k, v in loaded.items()}
    else:
        raise FileNotFoundError(f"{directory}: no model.safetensors or pytorch_model.bin")
    weights, unknown = transformers_to_official(state)
    return config, weights, unknown


# --- this project → Hugging Face ------------------------------------------------------------

_OFFICIAL_LAYER = r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/"
_HF_LAYER_OUT = r"encoder.albert_layer_groups.\1.albert_layers.\2."
# (official name pattern, Hugging Face key template, transpose?, backbone?): the inverse of
# _HF_RULES. Backbone keys take the "albert." prefix inside a model with heads.
_OFFICIAL_RULES = [
    (r"bert/embeddings/(word|position|token_type)_embeddings", r"embeddings.\1_embeddings.weight"),
    (r"bert/embeddings/LayerNorm/gamma", "embeddings.LayerNorm.weight"),
    (r"bert/embeddings/LayerNorm/beta", "embeddings.LayerNorm.bias"),
    (
        r"bert/encoder/embedding_hidden_mapping_in/kernel",
        "encoder.embedding_hidden_mapping_in.weight",
    ),
    (r"bert/encoder/embedding_hidden_mapping_in/bias", "encoder.embedding_hidden_mapping_in.bias"),
    (
        _OFFICIAL_LAYER + r"attention_1/self/(query|key|value)/kernel",
        _HF_LAYER_OUT + r"attention.\3.weight",
    ),
    (
        _OFFICIAL_LAYER + r"attention_1/self/(query|key|value)/bias",
        _HF_LAYER_OUT + r"attention.\3.bias",
    ),
    (
        _OFFICIAL_LAYER + r"attention_1/output/dense/kernel",
        _HF_LAYER_OUT + "attention.dense.weight",
    ),
    (_OFFICIAL_LAYER + r"attention_1/output/dense/bias", _HF_LAYER_OUT + "attention.dense.bias"),
    (_OFFICIAL_LAYER + r"LayerNorm/gamma", _HF_LAYER_OUT + "attention.LayerNorm.weight"),
    (_OFFICIAL_LAYER + r"LayerNorm/beta", _HF_LAYER_OUT + "attention.LayerNorm.bias"),
    (_OFFICIAL_LAYER + r"ffn_1/intermediate/dense/kernel", _HF_LAYER_OUT + "ffn.weight"),
    (_OFFICIAL_LAYER + r"ffn_1/intermediate/dense/bias", _HF_LAYER_OUT + "ffn.bias"),
    (
        _OFFICIAL_LAYER + r"ffn_1/intermediate/output/dense/kernel",
        _HF_LAYER_OUT + "ffn_output.weight",
    ),
    (_OFFICIAL_LAYER + r"ffn_1/intermediate/output/dense/bias", _HF_LAYER_OUT + "ffn_output.bias"),
    (_OFFICIAL_LAYER + r"LayerNorm_1/gamma", _HF_LAYER_OUT + "full_layer_layer_norm.weight"),
    (_OFFICIAL_LAYER + r"LayerNorm_1/beta", _HF_LAYER_OUT + "full_layer_layer_norm.bias"),
    (r"bert/pooler/dense/kernel", "pooler.weight"),
    (r"bert/pooler/dense/bias", "pooler.bias"),
    (r"cls/predictions/transform/dense/kernel", "predictions.dense.weight"),
    (r"cls/predictions/transform/dense/bias", "predictions.dense.bias"),
    (r"cls/predictions/transform/LayerNorm/gamma", "predictions.LayerNorm.weight"),
    (r"cls/predictions/transform/LayerNorm/beta", "predictions.LayerNorm.bias"),
    (r"cls/predictions/output_bias", "predictions.bias"),
    (r"cls/seq_relationship/output_weights", "sop_classifier.classifier.weight"),
    (r"cls/seq_relationship/output_bias", "sop_classifier.classifier.bias"),
    (r"output_weights", "classifier.weight"),
    (r"output_bias", "classifier.bias"),
    (r"cls/squad/output_weights", "qa_outputs.weight"),
    (r"cls/squad/output_bias", "qa_outputs.bias"),
]


def official_to_transformers(official: dict) -> dict:
    """Official-named arrays (kernels as TF stores them, [in, out]) → a Hugging Face state
    dict: Linear weights transposed to [out, in] (the official head matrices, stored
    [outputs, H] already, are not), backbone keys under "albert." (what every Albert*
    class saves; AlbertModel strips the prefix when loading, and KerasHub's loader needs
    it), and the MLM decoder tied to the word embeddings as ALBERT ties them."""
    out = {}
    for name, value in official.items():
        for pattern, template in _OFFICIAL_RULES:
            if re.fullmatch(pattern, name):
                key = re.sub(pattern, template, name)
                break
        else:
            raise CheckpointError(f"{name}: no Hugging Face name for this variable")
        value = np.asarray(value)
        if name.endswith("/kernel"):
            value = value.T
        backbone = not key.startswith(("predictions.", "sop_classifier.", "classifier.", "qa_"))
        out[f"albert.{key}" if backbone else key] = np.ascontiguousarray(value)
    if "predictions.bias" in out:
        word = "albert.embeddings.word_embeddings.weight"
        out["predictions.decoder.weight"] = out[word]
        out["predictions.decoder.bias"] = out["predictions.bias"]
    return out


def config_to_transformers(config: AlbertConfig) -> dict:
    """This project's AlbertConfig → Hugging Face config.json fields (model_type albert).
    Our "gelu" is the official tanh form, Hugging Face's "gelu_new"; "gelu_exact" is its
    "gelu". Only the official sharing layout ("all") exists there."""
    if config.sharing != "all":
        raise ConfigError(f"sharing={config.sharing!r} has no Hugging Face ALBERT layout")
    acts = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu"}
    if config.hidden_act not in acts:
        raise ConfigError(f"hidden_act={config.hidden_act!r} has no Hugging Face equivalent")
    fields = {k: getattr(config, k) for k in SHARED_CONFIG_FIELDS}
    return dict(fields, hidden_act=acts[config.hidden_act], model_type="albert")
