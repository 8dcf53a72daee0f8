"""Writes Model Garden ALBERT weights and their outputs with Model Garden's own code.

Runs in `.venv-modelgarden` (requirements-modelgarden.txt: tf-models-official with its own
TensorFlow and tf-keras), never in the project's environment, and imports nothing from
this project. tests/checkpoints/test_model_garden.py runs it as a subprocess:

    .venv-modelgarden/bin/python tests/support/model_garden_reference.py OUT_DIR SPM_MODEL
    .venv-modelgarden/bin/python tests/support/model_garden_reference.py restore CKPT OUT SPM

What it builds: a tiny `official.nlp.modeling.networks.AlbertEncoder` (E != H, so the
embedding projection exists) with random weights, and on that one encoder

- `models.BertPretrainer` (the masked-LM head `cls/predictions` and the sentence-order
  `classification` head on the pooled output), saved as `tf.train.Checkpoint(model=...)`
  (the legacy pretraining layout): OUT_DIR/pretrainer/ckpt-1;
- `models.BertPretrainerV2` whose masked-LM head holds the same weights, saved as
  `tf.train.Checkpoint(**pretrainer.checkpoint_items)` (encoder, masked_lm: what
  Model Garden's pretraining task writes): OUT_DIR/pretrainer_v2/ckpt-1;
- from that checkpoint, a TF-Hub v2 SavedModel written by Model Garden's
  `export_tfhub_lib.export_model(with_mlm=True)`: OUT_DIR/hub.

References for fixed inputs (in OUT_DIR, float32 .npy): inputs.npz (input_word_ids,
input_mask, input_type_ids, masked_lm_positions, int32 [2, 16] / [2, 3]),
sequence_output [2, 16, H], pooled_output [2, H], mlm_logits [2, 3, V], sop_logits [2, 2];
albert_config.json: the AlbertEncoder's hyper-parameters in albert_config.json's keys.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
from official.modeling import tf_utils
from official.nlp.configs import encoders
from official.nlp.modeling import models, networks
from official.nlp.tools import export_tfhub_lib

CONFIG = dict(
    vocab_size=97,
    embedding_size=8,
    hidden_size=16,
    num_hidden_layers=3,
    num_attention_heads=2,
    intermediate_size=24,
    max_position_embeddings=32,
    type_vocab_size=2,
    hidden_act="gelu",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=0.02,
)


def encoder_config() -> encoders.EncoderConfig:
    c = CONFIG
    return encoders.EncoderConfig(
        type="albert",
        albert=encoders.AlbertEncoderConfig(
            vocab_size=c["vocab_size"],
            embedding_width=c["embedding_size"],
            hidden_size=c["hidden_size"],
            num_layers=c["num_hidden_layers"],
            num_attention_heads=c["num_attention_heads"],
            intermediate_size=c["intermediate_size"],
            hidden_activation=c["hidden_act"],
            dropout_rate=0.0,
            attention_dropout_rate=0.0,
            max_position_embeddings=c["max_position_embeddings"],
            type_vocab_size=c["type_vocab_size"],
            initializer_range=c["initializer_range"],
        ),
    )


def randomize(model, seed):
    """Every weight N(0, 0.2) (LayerNorm gammas around 1), so no weight is its init."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        base = 1.0 if "gamma" in w.name else 0.0
        w.assign(base + rng.normal(0, 0.2, w.shape).astype(np.float32))


def main(out_dir, spm_model):
    tf.keras.utils.set_random_seed(0)
    c, activation = CONFIG, tf_utils.get_activation(CONFIG["hidden_act"])
    # What encoders.build_encoder(encoder_config()) builds, with list outputs, which
    # BertPretrainer (V1) needs; export_model below builds it from encoder_config().
    encoder = networks.AlbertEncoder(
        vocab_size=c["vocab_size"],
        embedding_width=c["embedding_size"],
        hidden_size=c["hidden_size"],
        num_layers=c["num_hidden_layers"],
        num_attention_heads=c["num_attention_heads"],
        max_sequence_length=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"],
        intermediate_size=c["intermediate_size"],
        activation=activation,
        dropout_rate=0.0,
        attention_dropout_rate=0.0,
    )
    v1 = models.BertPretrainer(
        network=encoder,
        num_classes=2,
        num_token_predictions=3,
        embedding_table=encoder.get_embedding_table(),
        activation=activation,
        output="logits",
    )
    v2 = models.BertPretrainerV2(encoder_network=encoder, mlm_activation=activation)
    rng = np.random.default_rng(1)
    inputs = dict(
        input_word_ids=rng.integers(0, CONFIG["vocab_size"], (2, 16)).astype(np.int32),
        input_mask=np.array([[1] * 16, [1] * 11 + [0] * 5], np.int32),
        input_type_ids=np.array([[0] * 8 + [1] * 8, [0] * 5 + [1] * 6 + [0] * 5], np.int32),
        masked_lm_positions=np.array([[1, 5, 9], [2, 3, 10]], np.int32),
    )
    v2(inputs)  # builds the V2 masked-LM head
    randomize(v1, seed=2)
    v2.masked_lm.set_weights(v1.masked_lm.get_weights())

    sequence_output, pooled_output = encoder(
        [inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]]
    )
    v1_out = v1(
        [
            inputs["input_word_ids"],
            inputs["input_mask"],
            inputs["input_type_ids"],
            inputs["masked_lm_positions"],
        ]
    )
    v2_out = v2(inputs)
    np.testing.assert_allclose(v2_out["mlm_logits"], v1_out["masked_lm"], atol=1e-6)
    refs = dict(
        sequence_output=sequence_output,
        pooled_output=pooled_output,
        mlm_logits=v1_out["masked_lm"],
        sop_logits=v1_out["classification"],
    )
    os.makedirs(out_dir, exist_ok=True)
    for name, value in refs.items():
        np.save(os.path.join(out_dir, f"{name}.npy"), np.asarray(value, np.float32))
    np.savez(os.path.join(out_dir, "inputs.npz"), **inputs)
    with open(os.path.join(out_dir, "albert_config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)

    tf.train.Checkpoint(model=v1).save(os.path.join(out_dir, "pretrainer", "ckpt"))
    v2_prefix = tf.train.Checkpoint(**v2.checkpoint_items).save(
        os.path.join(out_dir, "pretrainer_v2", "ckpt")
    )
    export_tfhub_lib.export_model(
        os.path.join(out_dir, "hub"),
        encoder_config=encoder_config(),
        model_checkpoint_path=v2_prefix,
        with_mlm=True,
        sp_model_file=spm_model,
    )
    # The SavedModel, loaded back by TensorFlow, gives the same outputs.
    hub = tf.saved_model.load(os.path.join(out_dir, "hub"))  # what hub.load does
    hub_out = hub.mlm(inputs)
    np.testing.assert_allclose(hub_out["mlm_logits"], refs["mlm_logits"], atol=1e-6)
    np.testing.assert_allclose(hub_out["pooled_output"], refs["pooled_output"], atol=1e-6)


def restore(checkpoint_dir, out_dir, spm_model):
    """`restore CKPT_DIR OUT_DIR SPM_MODEL`: what `convert --to model_garden` wrote, restored
    by Model Garden as export_tfhub_lib does (BertPretrainerV2.checkpoint_items, every
    object of the checkpoint matched), then its outputs for OUT_DIR/inputs.npz and a TF-Hub
    export of it by export_tfhub_lib (OUT_DIR/hub)."""
    with open(os.path.join(checkpoint_dir, "albert_config.json")) as f:
        c = json.load(f)
    config = encoder_config()
    for ours, theirs in (
        ("vocab_size", "vocab_size"),
        ("embedding_size", "embedding_width"),
        ("hidden_size", "hidden_size"),
        ("num_hidden_layers", "num_layers"),
        ("num_attention_heads", "num_attention_heads"),
        ("intermediate_size", "intermediate_size"),
        ("max_position_embeddings", "max_position_embeddings"),
        ("type_vocab_size", "type_vocab_size"),
    ):
        setattr(config.albert, theirs, c[ours])
    config.albert.hidden_activation = c["hidden_act"]  # tf_utils names: "gelu" is the tanh form
    encoder = encoders.build_encoder(config)
    v2 = models.BertPretrainerV2(
        encoder_network=encoder, mlm_activation=tf_utils.get_activation(c["hidden_act"])
    )
    inputs = dict(np.load(os.path.join(out_dir, "inputs.npz")))
    v2(inputs)
    prefix = tf.train.latest_checkpoint(checkpoint_dir) or os.path.join(checkpoint_dir, "ckpt-1")
    status = tf.train.Checkpoint(**v2.checkpoint_items).restore(prefix)
    status.assert_existing_objects_matched()
    status.assert_consumed()
    outputs = v2(inputs)
    for name in ("sequence_output", "pooled_output", "mlm_logits"):
        np.save(os.path.join(out_dir, f"{name}.npy"), np.asarray(outputs[name], np.float32))
    export_tfhub_lib.export_model(
        os.path.join(out_dir, "hub"),
        encoder_config=config,
        model_checkpoint_path=prefix,
        with_mlm=True,
        sp_model_file=spm_model,
    )


if __name__ == "__main__":
    if sys.argv[1] == "restore":
        restore(*sys.argv[2:5])
    else:
        main(sys.argv[1], sys.argv[2])
