"""ALBERT model configuration: the official `albert_config.json`, presets, validation.

`AlbertConfig` is a frozen dataclass. It reads every official (google-research/albert)
and brightmart-style config: the fields the model uses are typed attributes, every other
key (`net_structure_type`, `gap_size`, `ln_type`, `pooler_*`, ...) is kept verbatim in
`extra` and written back by `to_json_file`, so a config survives a round trip.

Two fields are this project's additions and are written alongside the official keys:
`sharing` (what cross-layer sharing covers, paper Table 4) and `layer_norm_eps`
(1e-12 in the official code; Hugging Face configs may carry another value).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any

from data_pipeline.io import filesystem

# Activation names. "gelu" is the official code's tanh approximation of GELU (Hugging Face
# calls it "gelu_new"); the erf form is available as "gelu_exact" for Hugging Face configs
# whose "gelu" means the exact function.
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_exact", "relu")

# Paper Table 4: which sub-layer parameters are shared across the layers of a group.
SHARING_MODES = ("all", "attention", "ffn", "none")

_REQUIRED = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
)

# Official keys the modeling code never reads; presets write them so that the JSON looks
# like a released albert_config.json.
_OFFICIAL_UNUSED = {
    "net_structure_type": 0,
    "gap_size": 0,
    "num_memory_blocks": 0,
    "down_scale_factor": 1,
}

# The released English models (google-research/albert, TF-Hub albert_{base,large,xlarge,
# xxlarge} v1 and v2, their assets/albert_config.json): name → (layers, hidden, heads,
# intermediate, v1 dropout). E=128, V=30000, gelu, one group for all. xlarge has 32 heads
# in the released config, where the paper's Table 1 suggests 16 (google-research/albert#180,
# transformers#3164): the weights do not fix the head count, and the config is what the
# released models were trained and evaluated with. v1 dropout is 0.1 except for xxlarge,
# which was trained without dropout already (albert#23); v2 has no dropout anywhere.
_PRESET_SHAPES = {
    "base": (12, 768, 12, 3072, 0.1),
    "large": (24, 1024, 16, 4096, 0.1),
    "xlarge": (24, 2048, 32, 8192, 0.1),
    "xxlarge": (12, 4096, 64, 16384, 0.0),
}


# The largest value of each size this code builds, checked before anything is allocated: a
# config of vocab_size 10^12 (a typo, a corrupt file) is one line naming the file and
# field, not an attempted multi-terabyte table. Each is 16× or more the largest released
# ALBERT's (xxlarge: H 4096, FFN 16384, 64 heads, 12 layers; xlarge/large: 24 layers;
# brightmart's configs: 21,128 pieces, 512 positions) and above every multilingual
# vocabulary (XLM-R 250,002, XLM-V 901,629 pieces) and long-input position table (Longformer
# 4,098, BigBird 4,096).
MAX_SIZES = {
    "vocab_size": 1 << 22,  # 4,194,304
    "embedding_size": 1 << 16,
    "hidden_size": 1 << 16,
    "intermediate_size": 1 << 18,
    "num_attention_heads": 1 << 12,
    "num_hidden_layers": 1 << 10,
    "num_hidden_groups": 1 << 10,
    "inner_group_num": 1 << 6,
    "max_position_embeddings": 1 << 17,
    "type_vocab_size": 1 << 10,
}

# Parameters of the whole encoder (`parameter_count`): 64 × xxlarge's 235 million, 60 GB
# in float32 — more than any machine this code trains or serves on holds for one model, so
# within the per-field limits a config still cannot ask for an absurd model.
MAX_PARAMETERS = 15_000_000_000


class ConfigError(ValueError):
    """A config value or combination the model cannot be built from."""


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    """Hyper-parameters of an ALBERT encoder (Lan et al. 2019, Sections 3.1 and 4.1).

    Attributes:
      vocab_size: V, rows of the word-embedding table.
      embedding_size: E, width of the factorized embeddings (128 in the paper). When it
        equals `hidden_size` there is no E→H projection (as in the official code).
      hidden_size: H, width of the Transformer.
      num_hidden_layers: L, number of layers the input passes through.
      num_hidden_groups: G; layer i uses the parameters of group int(i·G/L).
      inner_group_num: blocks per group; each layer runs all blocks of its group in turn.
      num_attention_heads: heads per attention sub-layer; must divide H.
      intermediate_size: FFN width (4H in the paper).
      hidden_act: "gelu" (tanh form, official), "gelu_new" / "gelu_pytorch_tanh" (aliases),
        "gelu_exact" (erf form) or "relu" (Google's Chinese configs).
      hidden_dropout_prob, attention_probs_dropout_prob: 0.1 in v1 configs, 0 in v2.
      max_position_embeddings: rows of the position table (longest input).
      type_vocab_size: segment ids (2).
      initializer_range: stddev of the truncated-normal initializer.
      layer_norm_eps: LayerNorm epsilon (1e-12 official).
      sharing: "all" (ALBERT), "attention", "ffn" or "none" (paper Table 4): which
        sub-layers the layers of a group share. Unshared sub-layers belong to each layer.
      extra: every other key of the source JSON, kept for the round trip.
    """

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    embedding_size: int = 128
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    sharing: str = "all"
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=True)

    def __post_init__(self):
        object.__setattr__(self, "extra", dict(self.extra))
        self._validate()

    # ------------------------------------------------------------------ validation
    def _validate(self):
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "embedding_size",
            "num_hidden_groups",
            "inner_group_num",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}={value!r} must be a positive integer")
            if value > MAX_SIZES[name]:
                raise ConfigError(
                    f"{name}={value:,} is larger than {MAX_SIZES[name]:,}, the largest this code "
                    "builds (16× or more every released ALBERT's; see config.MAX_SIZES)"
                )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ConfigError(f"{name}={value!r} must be a number in [0, 1)")
        for name in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{name}={value!r} must be a positive number")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size={self.hidden_size} is not divisible by "
                f"num_attention_heads={self.num_attention_heads}"
            )
        layers, groups = self.num_hidden_layers, self.num_hidden_groups
        # The official mapping int(i*G/L) is defined for any G, but G < L with L % G != 0
        # gives groups of unequal depth, which no released model uses and is almost always
        # a typo. G >= L gives every layer its own group (brightmart's *_google_fast
        # configs have G=12 for L=4), so it is accepted.
        if groups < layers and layers % groups:
            raise ConfigError(
                f"num_hidden_layers={layers} is not divisible by num_hidden_groups={groups}"
            )
        if self.parameter_count() > MAX_PARAMETERS:
            raise ConfigError(
                f"the model would have {self.parameter_count():,} parameters (hidden_size="
                f"{self.hidden_size}, intermediate_size={self.intermediate_size}, vocab_size="
                f"{self.vocab_size}, ...); at most {MAX_PARAMETERS:,} are built"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(f"hidden_act={self.hidden_act!r} is not one of {ACTIVATIONS}")
        if self.sharing not in SHARING_MODES:
            raise ConfigError(f"sharing={self.sharing!r} is not one of {SHARING_MODES}")

    # ------------------------------------------------------------------ derived
    def parameter_count(self) -> int:
        """Weights of the encoder (embeddings, E→H projection, the distinct attention and FFN
        sub-layers of `sharing`, LayerNorms, pooler), in closed form from the sizes."""
        V, E, H = self.vocab_size, self.embedding_size, self.hidden_size
        F = self.intermediate_size
        P, T = self.max_position_embeddings, self.type_vocab_size
        inner, groups = self.inner_group_num, self.num_hidden_groups
        per_layer = max(self.num_hidden_layers, groups)
        attention = 4 * H * H + 4 * H + 2 * H
        ffn = 2 * H * F + H + F + 2 * H
        n_attention = inner * (groups if self.sharing in ("all", "attention") else per_layer)
        n_ffn = inner * (groups if self.sharing in ("all", "ffn") else per_layer)
        embeddings = (V + P + T) * E + 2 * E + (E * H + H if E != H else 0)
        return embeddings + n_attention * attention + n_ffn * ffn + H * H + H

    @property
    def attention_head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def num_blocks(self) -> int:
        """Transformer blocks the input passes through: L × inner_group_num."""
        return self.num_hidden_layers * self.inner_group_num

    def group_of_layer(self, layer_index: int) -> int:
        """Official layer→group map int(i / L * G), computed exactly in integers."""
        return layer_index * self.num_hidden_groups // self.num_hidden_layers

    # ------------------------------------------------------------------ construction
    @classmethod
    def preset(cls, name: str, version: int | None = None, **overrides) -> AlbertConfig:
        """A released ALBERT shape: "base", "large", "xlarge", "xxlarge".

        Equal, key by key, to the released albert_config.json (`_PRESET_SHAPES`).
        `version` 2 (default) has dropout 0, version 1 has dropout 0.1 (xxlarge: 0); the
        name may carry it instead ("base-v1", "albert-large-v2"). `overrides` replace any
        field.
        """
        key = name.lower().replace("_", "-")
        if key.startswith("albert-"):
            key = key[len("albert-") :]
        for suffix, v in (("-v1", 1), ("-v2", 2)):
            if key.endswith(suffix):
                if version is not None and version != v:
                    raise ConfigError(f"preset {name!r} conflicts with version={version}")
                key, version = key[: -len(suffix)], v
        if key not in _PRESET_SHAPES:
            raise ConfigError(
                f"unknown preset {name!r}; expected one of "
                f"{sorted(_PRESET_SHAPES)} (optionally with -v1/-v2)"
            )
        version = 2 if version is None else version
        if version not in (1, 2):
            raise ConfigError(f"version={version!r} must be 1 or 2")
        layers, hidden, heads, intermediate, v1_dropout = _PRESET_SHAPES[key]
        dropout = v1_dropout if version == 1 else 0.0
        fields = dict(
            vocab_size=30000,
            embedding_size=128,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=intermediate,
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            extra=dict(_OFFICIAL_UNUSED),
        )
        fields.update(overrides)
        return cls(**fields)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "config") -> AlbertConfig:
        """Builds a config from an official/brightmart/our JSON object.

        A missing `embedding_size` (a BERT config) means E = H: factorization off.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ConfigError(
                f"{source}: missing required key(s) {missing} "
                f"(an albert_config.json has {list(_REQUIRED)})"
            )
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        extra = {k: v for k, v in data.items() if k not in names}
        known.setdefault("embedding_size", known["hidden_size"])
        try:
            return cls(extra=extra, **known)
        except ConfigError as e:
            raise ConfigError(f"{source}: {e}") from None

    @classmethod
    def from_json_string(cls, text: str, source: str = "config") -> AlbertConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{source}:{e.lineno}: invalid JSON: {e.msg}") from None
        return cls.from_dict(data, source=source)

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> AlbertConfig:
        path = os.fspath(path)
        if not filesystem.isfile(path):
            raise FileNotFoundError(f"config file not found: {path}")
        with filesystem.open(path) as f:
            return cls.from_json_string(f.read(), source=path)

    def replace(self, **changes) -> AlbertConfig:
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out.update(self.extra)
        return out

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes atomically (temporary name, then rename)."""
        from data_pipeline.io.atomic import write_text

        write_text(os.fspath(path), self.to_json_string())
