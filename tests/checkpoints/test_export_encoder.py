"""albert_tf.checkpoints.export_encoder: a run's checkpoint → an encoder-only checkpoint +
config that restores exactly; configs found where runs and tools put them; one clear error
each."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import (
    AlbertConfig,
    AlbertEncoder,
    AlbertPretrainer,
    load_checkpoint,
    save_checkpoint,
)
from albert_tf.checkpoints import CheckpointError
from albert_tf.checkpoints.export_encoder import checkpoint_config, export_encoder, main
from albert_tf.modeling.config import ConfigError
from albert_tf.modeling.encoder import count_parameters
from tests.support.harness import random_batch, tiny_config


def trainer_run(run_dir, config, seed=0):
    """A pretraining run's output as the trainer leaves it: OUTPUT_DIR/checkpoints/ckpt-N of
    model + optimizer (which names most variables `optimizer/...`), and run_config.json."""
    keras.utils.set_random_seed(seed)
    model = AlbertPretrainer(config)
    model.build()
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(model.trainable_variables)
    batch = random_batch()
    with tf.GradientTape() as tape:  # one step, so no weight is at its initial value
        outputs = model(batch)
        loss = tf.reduce_mean(outputs["mlm_logits"] ** 2) + tf.reduce_mean(
            outputs["sop_logits"] ** 2
        )
    optimizer.apply_gradients(
        zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
    )
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model, optimizer=optimizer),
        os.path.join(run_dir, "checkpoints"),
        max_to_keep=2,
    )
    manager.save()
    with open(os.path.join(run_dir, "run_config.json"), "w") as f:
        json.dump({"runner": "run_pretraining", "albert_config": config.to_dict()}, f)
    return model


def test_trainer_checkpoint_exports_an_equal_encoder(tmp_path):
    config = tiny_config(
        num_hidden_groups=2, sharing="attention", hidden_act="relu", extra={"ln_type": "postln"}
    )
    pretrainer = trainer_run(str(tmp_path / "run"), config)
    keys = [k for k, _ in tf.train.list_variables(str(tmp_path / "run" / "checkpoints"))]
    assert not any(k.startswith("model/encoder/") for k in keys)  # the hard case

    out = str(tmp_path / "export")
    prefix = export_encoder(str(tmp_path / "run" / "checkpoints"), out)
    assert prefix == os.path.join(out, "ckpt-1")
    assert AlbertConfig.from_json_file(os.path.join(out, "albert_config.json")) == config
    names = {k for k, _ in tf.train.list_variables(prefix)} - {
        "_CHECKPOINTABLE_OBJECT_GRAPH",
        "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
    }
    assert names and all(k.startswith("model/encoder/") for k in names)

    encoder = AlbertEncoder(AlbertConfig.from_json_file(os.path.join(out, "albert_config.json")))
    assert load_checkpoint(encoder, out).restored == ["encoder"]
    batch = random_batch()
    expected, got = pretrainer.encoder(batch), encoder(batch)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(got[key], expected[key], rtol=0, atol=1e-6)
    # A task model takes it as --init_checkpoint: encoder restored, heads reported absent.
    report = load_checkpoint(AlbertPretrainer(config), prefix)
    assert report.restored == ["encoder"] and report.missing == ["mlm_head", "sop_head"]


def test_cli_from_run_output_dir(tmp_path, capsys):
    config = tiny_config(num_hidden_layers=2, sharing="none")
    trainer_run(str(tmp_path / "run"), config)
    out = tmp_path / "export"
    assert (
        main(
            ["export_encoder", "--init_checkpoint", str(tmp_path / "run"), "--output_dir", str(out)]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        f"wrote {out / 'ckpt-1'} (encoder only, {count_parameters(config):,} parameters) "
        f"and {out / 'albert_config.json'}"
    ) in printed
    assert f"config {tmp_path / 'run' / 'run_config.json'} (albert_config)" in printed
    assert sorted(os.listdir(out)) == [
        "README.md",  # its model card (albert_tf.checkpoints.model_card)
        "albert_config.json",
        "checkpoint",
        "ckpt-1.data-00000-of-00001",
        "ckpt-1.index",
    ]
    assert not any(".tmp-export" in n for n in os.listdir(tmp_path))


def test_config_sources(tmp_path):
    # save_checkpoint / albert_tf.checkpoints.convert layout: albert_config.json beside the
    # checkpoint.
    config = tiny_config(num_hidden_layers=2)
    encoder = AlbertEncoder(config)
    encoder.build()
    prefix = save_checkpoint(encoder, str(tmp_path / "saved"))
    assert checkpoint_config(prefix) == (config, str(tmp_path / "saved" / "albert_config.json"))
    # albert_config.json beside beats run_config.json; the given file beats both.
    run = tmp_path / "saved" / "run_config.json"
    run.write_text(json.dumps({"albert_config": tiny_config(num_hidden_layers=4).to_dict()}))
    assert checkpoint_config(str(tmp_path / "saved"))[0] == config
    other = tmp_path / "other.json"
    tiny_config(num_hidden_layers=2, hidden_act="relu").to_json_file(other)
    assert checkpoint_config(prefix, str(other)) == (AlbertConfig.from_json_file(other), str(other))
    export_encoder(prefix, str(tmp_path / "a"), str(other))
    assert AlbertConfig.from_json_file(tmp_path / "a" / "albert_config.json").hidden_act == "relu"


def test_errors(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match=r"checkpoint not found: .*nowhere"):
        export_encoder(str(tmp_path / "nowhere"), str(tmp_path / "out"))

    # A checkpoint with no config anywhere near it.
    config = tiny_config(num_hidden_layers=2, sharing="none")
    encoder = AlbertEncoder(config)
    encoder.build()
    bare = tmp_path / "bare" / "ckpts"
    tf.train.CheckpointManager(
        tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=encoder)), str(bare), max_to_keep=1
    ).save()
    with pytest.raises(
        ConfigError,
        match=r"no config for checkpoint .*bare/ckpts/ckpt-1: none "
        r"of .*bare/ckpts/albert_config.json, .*bare/ckpts/run_config.json, "
        r".*bare/albert_config.json, .*bare/run_config.json holds one",
    ):
        export_encoder(str(bare), str(tmp_path / "out"))

    # Another width: the load error, with the config's path.
    wide = tmp_path / "wide.json"
    config.replace(hidden_size=64).to_json_file(wide)
    with pytest.raises(
        CheckpointError,
        match=rf"does not fit the model's encoder.*\[config: "
        rf"{wide}\]",
    ):
        export_encoder(str(bare), str(tmp_path / "out"), str(wide))

    # Fewer layers than the checkpoint: every variable of the model restores, but the
    # checkpoint's last layers would be silently dropped.
    shallow = tmp_path / "shallow.json"
    config.replace(num_hidden_layers=1).to_json_file(shallow)
    with pytest.raises(
        CheckpointError,
        match=r"holds 16 encoder variable\(s\) that config "
        rf"{shallow} has no place for .*: layer_1_inner_group_0/",
    ):
        export_encoder(str(bare), str(tmp_path / "out"), str(shallow))
    assert not (tmp_path / "out").exists()  # nothing half-written
    assert not any(".tmp-export" in n for n in os.listdir(tmp_path))

    # An output directory that already holds a checkpoint is not overwritten.
    good = tmp_path / "good.json"
    config.to_json_file(good)
    export_encoder(str(bare), str(tmp_path / "out"), str(good))
    with pytest.raises(CheckpointError, match=r"already holds a checkpoint"):
        export_encoder(str(bare), str(tmp_path / "out"), str(good))

    # The CLI: one line on stderr, exit status 1; a missing flag, exit status 2.
    capsys.readouterr()
    assert (
        main(
            ["export_encoder", "--init_checkpoint", str(bare), "--output_dir", str(tmp_path / "o2")]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith("error: no config for checkpoint") and err.count("\n") == 1
    assert main(["export_encoder", "--init_checkpoint", str(bare)]) == 2
