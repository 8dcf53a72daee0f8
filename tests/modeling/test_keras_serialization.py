"""AlbertEncoder inside a user's own `keras.Model`: get_config / from_config, the registered
name, and a `.keras` file that restores the same weights and outputs (the README's Keras
example on real data: tests/test_readme.py)."""

import keras
import numpy as np
import pytest

from albert_tf import AlbertEncoder
from tests.support.harness import random_batch, tiny_config

INPUTS = ("input_ids", "input_mask", "segment_ids")


def _classifier(config):
    """inputs → AlbertEncoder → pooled_output → Dense(3), functional."""
    inputs = {k: keras.Input((None,), dtype="int32", name=k) for k in INPUTS}
    pooled = AlbertEncoder(config)(inputs)["pooled_output"]
    return keras.Model(inputs, keras.layers.Dense(3, name="classifier")(pooled))


def test_config_round_trip_and_registered_name():
    config = tiny_config(sharing="ffn", num_hidden_groups=2, hidden_dropout_prob=0.0)
    encoder = AlbertEncoder(config, name="backbone")
    rebuilt = AlbertEncoder.from_config(encoder.get_config())
    assert rebuilt.config == config and rebuilt.name == "backbone"
    assert keras.saving.get_registered_object("albert_tf>AlbertEncoder") is AlbertEncoder
    assert keras.saving.get_registered_name(AlbertEncoder) == "albert_tf>AlbertEncoder"


@pytest.mark.parametrize("sharing", ["all", "none"])
def test_keras_file_restores_weights_and_outputs(tmp_path, sharing):
    """Shared blocks (sharing=all: one block object at every layer) and unshared ones both
    come back from model.save / load_model with every weight and the same logits."""
    keras.utils.set_random_seed(3)
    model = _classifier(tiny_config(sharing=sharing))
    batch = {k: v for k, v in random_batch(seed=1).items() if k in INPUTS}
    rng = np.random.default_rng(0)
    for w in model.weights:  # moved off the initializer (zero biases, unit LayerNorms)
        w.assign(w + rng.normal(0, 0.05, w.shape).astype(w.dtype))
    expected = model(batch).numpy()
    model.save(tmp_path / "x.keras")
    reloaded = keras.models.load_model(tmp_path / "x.keras")
    encoder = reloaded.get_layer("albert_encoder")
    assert isinstance(encoder, AlbertEncoder) and encoder.config.sharing == sharing
    assert len(reloaded.weights) == len(model.weights)
    for a, b in zip(model.weights, reloaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    np.testing.assert_array_equal(reloaded(batch).numpy(), expected)
