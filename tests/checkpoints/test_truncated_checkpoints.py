"""C09: a checkpoint whose .data file is cut short is one line naming it (`own.unreadable`)
for `--source model_garden` and `--source tf1` alike, not tf's IndexError traceback
("Read less bytes than requested")."""

import numpy as np
import pytest

from tests.support.tiny import tiny_config


def _cut(prefix):
    data = f"{prefix}.data-00000-of-00001"
    raw = open(data, "rb").read()
    open(data, "wb").write(raw[: len(raw) // 2])


def test_a_cut_model_garden_checkpoint_is_one_line(tmp_path):
    from albert_tf.checkpoints import CheckpointError, save_checkpoint
    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.export_model_garden import export_model_garden
    from albert_tf.modeling.models import AlbertPretrainer

    model = AlbertPretrainer(tiny_config(num_hidden_layers=2))
    model.build()
    save_checkpoint(model, str(tmp_path / "ours"))
    export_model_garden(str(tmp_path / "ours"), str(tmp_path / "mg"))
    prefix = str(tmp_path / "mg" / "ckpt-1")
    _cut(prefix)
    config = str(tmp_path / "mg" / "albert_config.json")
    with pytest.raises(CheckpointError) as excinfo:
        convert("model_garden", prefix, str(tmp_path / "out"), config)
    message = str(excinfo.value)
    assert "\n" not in message
    assert message.startswith(f"{prefix}: not a readable TensorFlow checkpoint (truncated")
    assert not (tmp_path / "out").exists()


def test_a_cut_tf1_checkpoint_is_one_line(tmp_path):
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.checkpoints.official import read_tf1_checkpoint
    from tests.support.references import write_tf1_checkpoint

    prefix = str(tmp_path / "model.ckpt")
    big = np.arange(4096, dtype=np.float32)
    write_tf1_checkpoint(prefix, {"bert/embeddings/word_embeddings": big, "z": big + 1})
    _cut(prefix)
    with pytest.raises(CheckpointError, match=r"not a readable TensorFlow checkpoint") as e:
        read_tf1_checkpoint(prefix)
    assert "\n" not in str(e.value) and str(e.value).startswith(prefix)
