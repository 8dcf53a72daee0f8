"""Hugging Face `Albert*` weights (`save_pretrained` directories) → official names.

PyTorch Linear weights are [out, in]; TF kernels are [in, out], hence the transposes.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from albert_tf.checkpoints.own import CheckpointError
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
# (albert_tf.checkpoints.finetuned KINDS). Classes absent here carry no task head.
HEAD_ARCHITECTURES = {
    "AlbertForSequenceClassification": "classifier",
    "AlbertForMultipleChoice": "multiple_choice",
    "AlbertForQuestionAnswering": "squad",
}
# Head classes with no matching model here, and why.
UNSUPPORTED_ARCHITECTURES = {
    "AlbertForTokenClassification": "this project has no token-classification model",
}
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
    fields = {
        k: hf[k]
        for k in (
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
        if k in hf
    }
    fields["hidden_act"] = acts[act]
    fields.setdefault("embedding_size", 128)  # Hugging Face's default
    return AlbertConfig.from_dict(fields, source=source)


def transformers_task(hf: dict, source: str = "config.json") -> dict | None:
    """The fine-tuning task a Hugging Face config describes (its `architectures`), as
    task.json fields: {"kind", "labels", "regression"} for a classifier (labels from
    `id2label` in id order; one output or problem_type "regression" is a regression),
    {"kind": "multiple_choice"}, {"kind": "squad"}; None for a pretraining or bare model."""
    architectures = hf.get("architectures") or []
    for name in architectures:
        if name in UNSUPPORTED_ARCHITECTURES:
            raise CheckpointError(
                f"{source}: {name} cannot be imported: {UNSUPPORTED_ARCHITECTURES[name]}"
            )
    kinds = [HEAD_ARCHITECTURES[a] for a in architectures if a in HEAD_ARCHITECTURES]
    if not kinds:
        return None
    kind = kinds[0]
    if kind != "classifier":
        return {"kind": kind}
    id2label = hf.get("id2label") or {str(i): f"LABEL_{i}" for i in range(hf.get("num_labels", 2))}
    labels = [id2label[k] for k in sorted(id2label, key=int)]
    regression = len(labels) == 1 or hf.get("problem_type") == "regression"
    return {"kind": "classifier", "labels": [] if regression else labels, "regression": regression}


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
    model_type = hf_config.get("model_type")
    if model_type not in (None, "albert"):
        raise ConfigError(f"{config_path}: model_type={model_type!r}, expected 'albert'")
    return hf_config


def transformers_finetuned_task(directory: str) -> dict | None:
    """task.json fields of a Hugging Face task model directory (`transformers_task`, plus
    max_seq_length from its positions, casing from tokenizer_config.json, and pairs
    allowed), or None when it holds no task head."""
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
        text_pair=True,
        source="transformers",
    )


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
        from safetensors.numpy import load_file

        files = (
            [single]
            if os.path.isfile(single)
            else sorted(
                {os.path.join(directory, v) for v in json.load(open(index))["weight_map"].values()}
            )
        )
        for file in files:
            state.update(load_file(file))
    elif os.path.isfile(binary):
        try:
            import torch
        except ImportError:
            raise CheckpointError(
                f"{binary}: reading pytorch_model.bin needs torch "
                f"(pip install torch), or re-save with safetensors"
            ) from None
        loaded = torch.load(binary, map_location="cpu", weights_only=True)
        state = {k: v.float().numpy() for k, v in loaded.items()}
    else:
        raise FileNotFoundError(f"{directory}: no model.safetensors or pytorch_model.bin")
    weights, unknown = transformers_to_official(state)
    return config, weights, unknown
