"""Shared fixtures: tiny configs, the ../shared/data location, Hugging Face references."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


def two_cpu_driver(runner: str) -> str:
    """A script running `runner` (run_pretraining, run_classifier, ...) with two logical
    CPU devices, so that `--strategy mirrored` has two replicas on a CPU machine (logical
    devices must exist before TensorFlow initializes its runtime)."""
    return ("import sys\nimport tensorflow as tf\n"
            "cpus = tf.config.list_physical_devices('CPU')\n"
            "tf.config.set_logical_device_configuration(\n"
            "    cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)\n"
            f"from absl import app\nimport {runner}\n{runner}.define_flags()\n"
            f"app.run(lambda argv: sys.exit({runner}.main(argv)))\n")


@pytest.fixture
def shared_data():
    """../shared/data, or skip: a user's fresh clone has no ../shared."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    return SHARED_DATA


def tiny_config(**overrides):
    from albert_tf import AlbertConfig
    fields = dict(vocab_size=99, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                  num_attention_heads=4, intermediate_size=37, max_position_embeddings=40)
    fields.update(overrides)
    return AlbertConfig(**fields)


def random_batch(vocab_size=99, batch=3, seq=11, positions=3, seed=0):
    """Inputs with padding in the batch (rows 1 and 2 padded) and two segments."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, (batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    if batch > 1:
        mask[1, seq - 4:] = 0
    if batch > 2:
        mask[2, 3:] = 0
    ids[mask == 0] = 0
    segments = np.zeros_like(ids)
    segments[:, seq // 2:] = 1
    segments[mask == 0] = 0
    lm_positions = np.sort(rng.integers(0, 3, (batch, positions)), axis=1).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "masked_lm_positions": lm_positions}


@pytest.fixture(autouse=True)
def _float32_policy():
    """Tests that switch Keras to mixed precision must not leak it into others."""
    import keras
    yield
    keras.config.set_dtype_policy("float32")
