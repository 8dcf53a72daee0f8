"""This project's checkpoints → Model Garden object-based checkpoints.

    python -m albert_tf.checkpoints.convert --to model_garden --input CKPT --output_dir DIR

Writes `DIR/ckpt-1` (and its `checkpoint` state file) in the layout of
`tf.train.Checkpoint(**BertPretrainerV2.checkpoint_items)` (what Model Garden's pretraining
task saves and `export_tfhub_lib.export_model` restores): `encoder` (a
`networks.AlbertEncoder`) and, when the checkpoint has our MLM head, `masked_lm`
(`layers.MaskedLM`), plus `DIR/albert_config.json` (the official JSON, which Model
Garden's configs read). An object-based checkpoint restores by
object-graph path, so the paths are what tf-keras tracks for those classes: the
functional AlbertEncoder's layers with weights in creation order (`layer_with_weights-N`:
word, position and type embeddings, the embedding LayerNorm, the E→H projection when
E != H, the shared `transformer` block, `pooler_transform`) and the block's and heads'
attributes. The attention kernels get Model Garden's per-head shapes back ([H, H] →
[H, heads, H/heads]; output [H, H] → [heads, H/heads, H]).

Each variable carries the name Model Garden saves it under (`model_garden.model_garden_name`),
so `--source model_garden` reads this output back. A checkpoint with the masked-LM head
but no SOP head (a Model Garden or TF-Hub v2 import) keeps its head here too.

Not written, and named in the report: the SOP head (`checkpoint_items` hold no
classification logits: a ClassificationHead contributes only its `pooler_dense`) and task
heads; configs Model Garden's AlbertEncoder cannot express (more than one group or block,
partial sharing) are refused.
"""

from __future__ import annotations

import os

import numpy as np

from albert_tf.checkpoints.own import CONFIG_NAME, CheckpointError

_BLOCK = "bert/encoder/transformer/group_0/inner_group_0"
# Official name (under _BLOCK) → the TransformerEncoderBlock attribute path.
_BLOCK_PATHS = {
    "attention_1/self/query": "_attention_layer/_query_dense",
    "attention_1/self/key": "_attention_layer/_key_dense",
    "attention_1/self/value": "_attention_layer/_value_dense",
    "attention_1/output/dense": "_attention_layer/_output_dense",
    "LayerNorm": "_attention_layer_norm",
    "ffn_1/intermediate/dense": "_intermediate_dense",
    "ffn_1/intermediate/output/dense": "_output_dense",
    "LayerNorm_1": "_output_layer_norm",
}
_MLM_PATHS = {
    "cls/predictions/transform/dense": "masked_lm/dense",
    "cls/predictions/transform/LayerNorm": "masked_lm/layer_norm",
}


def model_garden_paths(config) -> dict[str, tuple[str, ...]]:
    """Official name → Model Garden object-graph path, as its objects' local names (one
    of which has a slash: MaskedLM's weight `output_bias/bias`)."""
    if (config.num_hidden_groups, config.inner_group_num, config.sharing) != (1, 1, "all"):
        raise CheckpointError(
            f"Model Garden's AlbertEncoder has one block shared by all layers; this model "
            f"has num_hidden_groups={config.num_hidden_groups}, inner_group_num="
            f"{config.inner_group_num}, sharing={config.sharing!r}"
        )
    layers = ["word", "position", "type", "norm"]
    layers += ["projection"] if config.embedding_size != config.hidden_size else []
    index = {name: f"encoder/layer_with_weights-{i}" for i, name in enumerate(layers)}
    block = f"encoder/layer_with_weights-{len(layers)}"
    pooler = f"encoder/layer_with_weights-{len(layers) + 1}"
    out = {
        "bert/embeddings/word_embeddings": index["word"] + "/embeddings",
        "bert/embeddings/position_embeddings": index["position"] + "/embeddings",
        "bert/embeddings/token_type_embeddings": index["type"] + "/embeddings",
        "bert/embeddings/LayerNorm/gamma": index["norm"] + "/gamma",
        "bert/embeddings/LayerNorm/beta": index["norm"] + "/beta",
        "bert/pooler/dense/kernel": pooler + "/kernel",
        "bert/pooler/dense/bias": pooler + "/bias",
    }
    if "projection" in index:
        for leaf in ("kernel", "bias"):
            out[f"bert/encoder/embedding_hidden_mapping_in/{leaf}"] = (
                f"{index['projection']}/{leaf}"
            )
    for official, path in _BLOCK_PATHS.items():
        leaves = ("gamma", "beta") if "LayerNorm" in official else ("kernel", "bias")
        for leaf in leaves:
            out[f"{_BLOCK}/{official}/{leaf}"] = f"{block}/{path}/{leaf}"
    for official, path in _MLM_PATHS.items():
        leaves = ("gamma", "beta") if "LayerNorm" in official else ("kernel", "bias")
        for leaf in leaves:
            out[f"{official}/{leaf}"] = f"{path}/{leaf}"
    paths = {name: tuple(path.split("/")) for name, path in out.items()}
    paths["cls/predictions/output_bias"] = ("masked_lm", "output_bias/bias")
    return paths


def _split_heads(value: np.ndarray, official: str, heads: int) -> np.ndarray:
    """The official [H, H] / [H] attention arrays → Model Garden's per-head shapes."""
    if "/attention_1/" not in official or official.endswith("/output/dense/bias"):
        return value
    if official.endswith("/output/dense/kernel"):
        return value.reshape(heads, -1, value.shape[-1])
    if official.endswith("/kernel"):
        return value.reshape(value.shape[0], heads, -1)
    return value.reshape(heads, -1)


def _tree(paths_to_values: dict):
    """Nested tf.train.Checkpoint objects with the given tf.Variable at each path."""
    import tensorflow as tf

    nested: dict = {}
    for path, value in paths_to_values.items():
        node = nested
        *parents, leaf = path
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value

    def build(node):
        return tf.train.Checkpoint(
            **{k: build(v) if isinstance(v, dict) else v for k, v in node.items()}
        )

    return build(nested)


def export_model_garden(
    input_path: str,
    output_dir: str,
    albert_config_file: str | None = None,
    tokenizer=None,
    command: str | None = None,
) -> dict:
    """Writes DIR/ckpt-1, DIR/albert_config.json (module docstring) and the model card
    README.md (naming `command`); returns a report
    {output_dir, written, not_written, vocabulary}. The vocabulary is not part of a Model
    Garden checkpoint: a `tokenizer` (TokenizerSpec) is refused rather than ignored."""
    from albert_tf.checkpoints.export_transformers import _our_model
    from albert_tf.checkpoints.fresh_output import check_fresh_output
    from albert_tf.checkpoints.model_card import write_converted_card
    from albert_tf.checkpoints.model_garden import model_garden_name
    from albert_tf.checkpoints.official import official_name_map
    from albert_tf.modeling.encoder import AlbertEncoder
    from data_pipeline.io.locks import output_lock

    if tokenizer is not None:
        raise CheckpointError(
            "--to model_garden writes weights only: a Model Garden checkpoint holds no "
            f"vocabulary (drop {tokenizer.flag})"
        )
    model, task, _, absent = _our_model(input_path, albert_config_file)
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    config = encoder.config
    table, paths = official_name_map(model), model_garden_paths(config)
    import tensorflow as tf

    values, written = {}, []
    for official, entry in table.items():
        if official not in paths:
            continue
        value = np.asarray(entry.variable.numpy())
        value = _split_heads(value, official, config.num_attention_heads)
        # (named as Model Garden names it: what --source model_garden reads back)
        values[paths[official]] = tf.Variable(value, name=model_garden_name(official))
        written.append(entry.component)
    has_mlm = "mlm_head" in written
    if has_mlm:  # MaskedLM tracks the (tied) word table too: the same variable, one node
        word = values[paths["bert/embeddings/word_embeddings"]]
        values[("masked_lm", "embedding_table")] = word
    not_written = sorted({e.component for e in table.values()} - set(written) - set(absent))
    with output_lock(output_dir, "albert_tf.checkpoints.convert"):
        check_fresh_output(output_dir)
        # save(), not write(): with the save_counter and `checkpoint` state file that a
        # Model Garden checkpoint has (restoring checks that every object matched).
        prefix = _tree(values).save(os.path.join(output_dir, "ckpt"))
        config.to_json_file(os.path.join(output_dir, CONFIG_NAME))
        written = "A TF Model Garden checkpoint (BertPretrainerV2's layout)"
        write_converted_card(output_dir, input_path, written, command)
    return {
        "output_dir": output_dir,
        "checkpoint": prefix,
        "written": "encoder" + (" and masked_lm" if has_mlm else ""),
        "not_written": not_written,
        "vocabulary": "none (a Model Garden checkpoint holds none)",
    }
