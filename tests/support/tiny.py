"""The tests' tiny models, written once (as KerasHub's test cases keep one small config per
component): every test that builds a tiny ALBERT or writes its albert_config.json starts
from one of these two and passes as overrides only what it changes.

- `TINY`: the unit tests' model over a 99-id vocabulary: four layers sharing one block,
  E = 16, H = 32, 4 heads, intermediate size 37, 40 positions.
- `WORKFLOW`: the command-line workflows' model (tests/workflows/), a tiny model over the
  30k SentencePiece vocabulary of ../shared/data/spm, without dropout.

`tiny_config(**overrides)` gives an `AlbertConfig`, `tiny_fields(**overrides)` the plain
dict (what a Hugging Face or official config is built from), and
`write_tiny_config(path, **overrides)` an albert_config.json holding exactly those fields
(`base=WORKFLOW` for the workflows' model)."""

import json
import os

TINY = {
    "vocab_size": 99,
    "embedding_size": 16,
    "hidden_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "max_position_embeddings": 40,
}

WORKFLOW = {
    "vocab_size": 30000,
    "embedding_size": 32,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 64,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
}


def tiny_fields(base=TINY, **overrides) -> dict:
    """The recipe's fields (`base`, TINY by default) with `overrides` on top, as a new dict."""
    return {**base, **overrides}


def tiny_config(base=TINY, **overrides):
    """An `AlbertConfig` of the recipe."""
    from albert_tf import AlbertConfig

    return AlbertConfig(**tiny_fields(base, **overrides))


def write_tiny_config(path, base=TINY, **overrides):
    """Writes the recipe's fields (and only those: the rest stays AlbertConfig's defaults)
    as JSON to `path`; returns `path`."""
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        json.dump(tiny_fields(base, **overrides), f)
    return path
