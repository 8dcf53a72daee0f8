"""Own checkpoints round trip; bad checkpoints and paths give one clear error each."""

import json

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertEncoder, AlbertPretrainer, load_checkpoint, save_checkpoint
from albert_tf.checkpoints import CheckpointError, transformers_to_official
from albert_tf.checkpoints.convert import convert
from albert_tf.modeling.config import ConfigError
from tests.support.harness import random_batch, tiny_config
from tests.support.references import hf_pretraining_model, official_arrays, write_tf1_checkpoint


def test_save_and_load_round_trip(tmp_path):
    config = tiny_config(num_hidden_groups=2, sharing="ffn")
    model = AlbertPretrainer(config)
    batch = random_batch()
    expected = model(batch)
    prefix = save_checkpoint(model, str(tmp_path))
    assert prefix.endswith("ckpt-1")
    assert json.loads((tmp_path / "albert_config.json").read_text())["sharing"] == "ffn"
    fresh = AlbertPretrainer(config)
    report = load_checkpoint(fresh, str(tmp_path))
    assert report.restored == ["encoder", "mlm_head", "sop_head"]
    got = fresh(batch)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])


def test_encoder_checkpoint_into_pretrainer_reports_heads(tmp_path):
    encoder = AlbertEncoder(tiny_config())
    encoder.build()
    save_checkpoint(encoder, str(tmp_path))
    model = AlbertPretrainer(tiny_config())
    report = load_checkpoint(model, str(tmp_path))
    assert report.restored == ["encoder"] and report.missing == ["mlm_head", "sop_head"]
    np.testing.assert_array_equal(
        model.encoder.embeddings.word_embeddings.numpy(), encoder.embeddings.word_embeddings.numpy()
    )


def test_missing_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"checkpoint not found: .*nowhere/ckpt"):
        load_checkpoint(AlbertEncoder(tiny_config()), str(tmp_path / "nowhere" / "ckpt"))
    with pytest.raises(CheckpointError, match=r"no checkpoint in directory .*"):
        load_checkpoint(AlbertEncoder(tiny_config()), str(tmp_path))


def test_checkpoint_of_another_size(tmp_path):
    save_checkpoint(AlbertPretrainer(tiny_config()), str(tmp_path))
    bigger = AlbertPretrainer(tiny_config(hidden_size=64))
    with pytest.raises(
        CheckpointError,
        match=r"does not fit the model's encoder \(.*albert_config.json differs: "
        r"hidden_size: checkpoint 32 vs model 64\)",
    ):
        load_checkpoint(bigger, str(tmp_path))


def test_official_checkpoint_of_another_size_names_variables(tmp_path):
    hf_model = hf_pretraining_model(tmp_path / "hf")
    prefix = write_tf1_checkpoint(
        str(tmp_path / "tf1" / "model.ckpt"), official_arrays(hf_model, 1, 1)
    )
    config_file = tmp_path / "albert_config.json"
    tiny_config(intermediate_size=48).to_json_file(config_file)
    with pytest.raises(
        CheckpointError,
        match=r"have another shape than the model .*"
        r"ffn_1/intermediate/dense/kernel: source \[32, 37\] vs model \[32, 48\]",
    ):
        convert("tf1", prefix, str(tmp_path / "out"), str(config_file))
    assert not (tmp_path / "out").exists()  # nothing half-written
    tiny_config(num_hidden_groups=2).to_json_file(config_file)
    with pytest.raises(CheckpointError, match=r"missing: bert/encoder/transformer/group_1/"):
        convert("tf1", prefix, str(tmp_path / "out"), str(config_file))


def test_not_an_albert_checkpoint(tmp_path):
    prefix = tf.train.Checkpoint(thing=tf.Variable([1.0])).write(str(tmp_path / "other"))
    with pytest.raises(CheckpointError, match="neither an albert_tf checkpoint nor an official"):
        load_checkpoint(AlbertEncoder(tiny_config()), prefix)


def test_transformers_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        convert("transformers", str(tmp_path), str(tmp_path / "out"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ConfigError, match="model_type='bert', expected 'albert'"):
        convert("transformers", str(tmp_path), str(tmp_path / "out"))


def test_projection_when_embedding_equals_hidden_is_refused(tmp_path):
    # Hugging Face always has embedding_hidden_mapping_in; the official model has none
    # when E == H, so such weights cannot be represented faithfully.
    hf_pretraining_model(tmp_path / "hf", embedding_size=32)
    with pytest.raises(CheckpointError, match="source has an E→H projection"):
        convert("transformers", str(tmp_path / "hf"), str(tmp_path / "out"))


def test_untied_decoder_is_refused():
    state = {
        "albert.embeddings.word_embeddings.weight": np.ones((5, 2), np.float32),
        "predictions.decoder.weight": np.zeros((5, 2), np.float32),
    }
    with pytest.raises(CheckpointError, match="untied decoder cannot be imported"):
        transformers_to_official(state)


def test_hf_exact_gelu_maps_to_gelu_exact(tmp_path):
    from tests.support.references import hf_outputs

    hf_model = hf_pretraining_model(tmp_path / "hf", hidden_act="gelu")  # HF "gelu" = erf form
    convert("transformers", str(tmp_path / "hf"), str(tmp_path / "out"))
    written = json.loads((tmp_path / "out" / "albert_config.json").read_text())
    assert written["hidden_act"] == "gelu_exact"
    model = AlbertPretrainer(tiny_config(hidden_act="gelu_exact"))
    load_checkpoint(model, str(tmp_path / "out"))
    batch = random_batch()
    expected = hf_outputs(hf_model, batch)
    got = model(batch)
    for key in expected:
        assert np.max(np.abs(got[key].numpy() - expected[key])) <= 1e-5, key
