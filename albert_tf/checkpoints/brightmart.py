"""brightmart/albert_zh checkpoints (albert_tiny_zh, albert_base_zh, albert_large_zh,
albert_xlarge_zh: their own layout, not the `*_google` releases) → official names.

What their modeling.py and run_pretraining.py do, and why the import changes the config:

- Embeddings: `bert/embeddings/word_embeddings` [V, E] is multiplied by
  `bert/embeddings/word_embeddings_2` [E, H] (no bias) *before* the position and
  token-type tables, which are H wide ([max_position, H], [type_vocab, H]), are added and
  the LayerNorm (over H) runs. ALBERT adds those tables at width E, normalizes over E and
  then projects with a biased dense (`bert/encoder/embedding_hidden_mapping_in`). The two
  are different functions: no ALBERT with E < H holds brightmart's weights. An ALBERT with
  E = H (no projection, as in the official code) holds them exactly: its word table is the
  product W·P [V, H]. The import builds that model: the written config has
  `embedding_size = hidden_size`; the word table grows from V·E + E·H to V·H numbers.
- Blocks: one shared block, `bert/encoder/layer_shared/` with BERT's names (`attention/self/
  {query,key,value}`, `attention/output/dense`, `attention/output/LayerNorm`,
  `intermediate/dense`, `output/dense`, `output/LayerNorm`), post-LayerNorm as in ALBERT:
  the official `group_0/inner_group_0` block of a one-group model.
- MLM head: `cls/predictions/transform/dense` is H → H, then its LayerNorm, and the logits
  are x · Pᵀ · Wᵀ + b = x · (W·P)ᵀ + b: the tied head of the E = H model, same names.
  The pooler and `cls/seq_relationship` (their "next sentence" head on the pooled output)
  have the official names and shapes; so have run_classifier's `output_weights`/`_bias`.
- `ln_type: "preln"` in the config (their xxlarge; xlarge's config said so from 7 to 9 Oct
  2019): the same variable names, but pre-LayerNorm blocks (LayerNorm before attention and
  before the FFN, residuals un-normalized, no final LayerNorm): another function, refused.
- `shared_type` other than "all" and the unshared `layer_N` scopes exist in their code
  but in no release; refused as not mapping.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from albert_tf.checkpoints.own import CheckpointError
from albert_tf.modeling.config import AlbertConfig

WORD = "bert/embeddings/word_embeddings"
PROJECTION = "bert/embeddings/word_embeddings_2"
SHARED = "bert/encoder/layer_shared/"
_OFFICIAL_BLOCK = "bert/encoder/transformer/group_0/inner_group_0/"

# brightmart's shared-block scope (under SHARED) → official scope (under _OFFICIAL_BLOCK).
BLOCK_NAMES = {
    "attention/self/query": "attention_1/self/query",
    "attention/self/key": "attention_1/self/key",
    "attention/self/value": "attention_1/self/value",
    "attention/output/dense": "attention_1/output/dense",
    "attention/output/LayerNorm": "LayerNorm",
    "intermediate/dense": "ffn_1/intermediate/dense",
    "output/dense": "ffn_1/intermediate/output/dense",
    "output/LayerNorm": "LayerNorm_1",
}
# Their unshared scopes (layer_N; shared_type "attention"/"ffn": attention_N, ...): no release.
_UNSHARED = re.compile(
    r"^bert/encoder/(layer_\d+|layer_shared/(attention|intermediate|output)_\d+)/"
)


def is_brightmart(names) -> bool:
    """Whether variable names are brightmart's layout: the bias-free projection
    `word_embeddings_2` or the `layer_shared` block (names without TF-Hub's `module/`)."""
    return any(n == PROJECTION or n.startswith(SHARED) for n in names)


def brightmart_config(config: AlbertConfig, source: str) -> AlbertConfig:
    """The ALBERT config that holds a brightmart model of `config` exactly: E = H.

    Raises CheckpointError (naming `source`, the config file) for what does not map: a
    pre-LayerNorm model (`ln_type: "preln"`) or a config with more than one group.
    """
    ln_type = config.extra.get("ln_type")
    if ln_type not in (None, "postln"):
        raise CheckpointError(
            f"{source}: ln_type={ln_type!r} is brightmart's pre-LayerNorm transformer, "
            f"another function than ALBERT's post-LayerNorm blocks; it cannot be imported"
        )
    if (config.num_hidden_groups, config.inner_group_num, config.sharing) != (1, 1, "all"):
        raise CheckpointError(
            f"{source}: a brightmart checkpoint has one shared block (layer_shared); the "
            f"config has num_hidden_groups={config.num_hidden_groups}, "
            f"inner_group_num={config.inner_group_num}, sharing={config.sharing!r}"
        )
    return dataclasses.replace(config, embedding_size=config.hidden_size)


@dataclasses.dataclass
class Translation:
    """brightmart arrays under official names, and what the translation did."""

    weights: dict  # official name → array
    source_embedding_size: int  # E of the source (its word table's width)
    folded: str  # how the word table was made
    renamed: dict  # brightmart name → official name, for the names that changed


def brightmart_to_official(weights: dict, source: str) -> Translation:
    """brightmart-named arrays (optimizer slots already dropped) → official names.

    The word table becomes W·P (float64 product, stored float32); the shared block's names
    become group_0/inner_group_0's; every other name is official already and passes
    through, so `assign_official` reports whatever the model does not use.

    Raises CheckpointError (naming `source`) for names or shapes that do not map.
    """
    unshared = sorted(n for n in weights if _UNSHARED.match(n))
    if unshared:
        raise CheckpointError(
            f"{source}: brightmart's unshared layer scopes ({unshared[0]}) are in no release "
            f"and have no mapping here; only the shared block (layer_shared) imports"
        )
    if WORD not in weights or PROJECTION not in weights:
        missing = WORD if WORD not in weights else PROJECTION
        raise CheckpointError(f"{source}: not a brightmart checkpoint: no {missing}")
    table, projection = np.asarray(weights[WORD]), np.asarray(weights[PROJECTION])
    if table.ndim != 2 or projection.ndim != 2 or table.shape[1] != projection.shape[0]:
        raise CheckpointError(
            f"{source}: {WORD} {list(table.shape)} and {PROJECTION} "
            f"{list(projection.shape)} do not multiply ([V, E] · [E, H])"
        )
    folded = (table.astype(np.float64) @ projection.astype(np.float64)).astype(np.float32)
    out, renamed = {WORD: folded}, {}
    for name, value in weights.items():
        if name in (WORD, PROJECTION):
            continue
        official = name
        if name.startswith(SHARED):
            scope, _, leaf = name[len(SHARED) :].rpartition("/")
            if scope in BLOCK_NAMES:
                official = _OFFICIAL_BLOCK + BLOCK_NAMES[scope] + "/" + leaf
                renamed[name] = official
        out[official] = value
    return Translation(
        weights=out,
        source_embedding_size=int(table.shape[1]),
        folded=(
            f"{WORD} {list(table.shape)} @ {PROJECTION} {list(projection.shape)} -> "
            f"{WORD} {list(folded.shape)} (embedding_size = hidden_size)"
        ),
        renamed=dict(sorted(renamed.items())),
    )
