"""Numerical parity with Hugging Face transformers, official TF1 / TF-Hub checkpoints and
KerasHub, all carrying the same random weights. Tolerance: 1e-5 in float32."""

import json
import os

import numpy as np
import pytest

from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer, load_checkpoint
from albert_tf.checkpoints.convert import convert
from tests.support.harness import random_batch
from tests.support.in_process import run_command
from tests.support.references import (
    hf_outputs,
    hf_pretraining_model,
    official_arrays,
    write_tf1_checkpoint,
)
from tests.support.tiny import tiny_fields

TOL = 1e-5
CONFIGS = {
    "small": dict(),
    "grouped": dict(num_hidden_groups=2, inner_group_num=2),
    "relu": dict(hidden_act="relu", num_hidden_layers=3, num_hidden_groups=3),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def reference(request, tmp_path_factory):
    """(HF model dir, HF model, reference outputs, HF config kwargs) for one config."""
    directory = tmp_path_factory.mktemp(f"hf_{request.param}")
    model = hf_pretraining_model(directory, **CONFIGS[request.param])
    batch = random_batch()
    return directory, model, batch, hf_outputs(model, batch), CONFIGS[request.param]


def assert_parity(
    ours, expected, keys=("sequence_output", "pooled_output", "mlm_logits", "sop_logits")
):
    for key in keys:
        diff = np.max(np.abs(np.asarray(ours[key]) - expected[key]))
        assert diff <= TOL, f"{key}: max |Δ| = {diff:.2e}"


def load_converted(directory, cls=AlbertPretrainer):
    config = AlbertConfig.from_json_file(os.path.join(directory, "albert_config.json"))
    model = cls(config)
    report = load_checkpoint(model, directory)
    return model, report


def test_transformers_parity(reference, tmp_path):
    hf_dir, _, batch, expected, _ = reference
    report = convert("transformers", str(hf_dir), str(tmp_path))
    assert report["heads_written"] == ["mlm_head", "sop_head"]
    assert report["unused_source_variables"] == [] and report["unrecognized_source_keys"] == []
    model, loaded = load_converted(tmp_path)
    assert loaded.restored == ["encoder", "mlm_head", "sop_head"] and not loaded.missing
    assert_parity(model(batch), expected)
    # The checkpoint prefix works as well as the directory.
    again, _ = load_converted(tmp_path)
    load_checkpoint(again, report["checkpoint"])
    assert_parity(again(batch), expected)


def official_config_file(path, hf_kwargs):
    config = tiny_fields(
        num_hidden_groups=1,
        inner_group_num=1,
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        type_vocab_size=2,
        initializer_range=0.02,
        net_structure_type=0,
        gap_size=0,
        num_memory_blocks=0,
        down_scale_factor=1,
    )
    config.update({k: v for k, v in hf_kwargs.items() if k != "hidden_act"})
    if hf_kwargs.get("hidden_act") == "relu":
        config["hidden_act"] = "relu"
    path.write_text(json.dumps(config))
    return str(path), config


@pytest.mark.parametrize("layout", ["tf1", "tfhub"])
def test_official_checkpoint_parity(reference, tmp_path, layout):
    _, hf_model, batch, expected, kwargs = reference
    config_file, config = official_config_file(tmp_path / "albert_config.json", kwargs)
    groups = config["num_hidden_groups"]
    arrays = official_arrays(hf_model, groups, config["inner_group_num"])
    if layout == "tf1":
        source = write_tf1_checkpoint(str(tmp_path / "tf1" / "model.ckpt-1000"), arrays)
    else:  # a TF-Hub v1 module: variables/variables.*, names under module/
        os.makedirs(tmp_path / "hub" / "variables")
        write_tf1_checkpoint(
            str(tmp_path / "hub" / "variables" / "variables"), arrays, module_prefix=True
        )
        source = str(tmp_path / "hub")
    out = tmp_path / "converted"
    report = convert(layout, source, str(out), config_file)
    assert report["unused_source_variables"] == []  # adam slots and global_step skipped
    model, _ = load_converted(out)
    assert_parity(model(batch), expected)
    # An official checkpoint also works directly as an init checkpoint.
    direct = AlbertPretrainer(AlbertConfig.from_json_file(config_file))
    assert load_checkpoint(direct, source).format == "tf1"
    assert_parity(direct(batch), expected)


def test_keras_hub_parity(reference, tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    hf_dir, _, batch, _, kwargs = reference
    if kwargs.get("hidden_act") == "relu":
        pytest.skip("KerasHub's AlbertBackbone has no activation option (always tanh-GELU)")
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(hf_dir))  # KerasHub's converter
    convert("transformers", str(hf_dir), str(tmp_path))
    encoder, _ = load_converted(tmp_path, AlbertEncoder)
    assert encoder.count_params() == backbone.count_params()
    theirs = backbone(
        {
            "token_ids": batch["input_ids"],
            "segment_ids": batch["segment_ids"],
            "padding_mask": batch["input_mask"],
        }
    )
    assert_parity(
        encoder(batch),
        {k: np.asarray(v) for k, v in theirs.items()},
        keys=("sequence_output", "pooled_output"),
    )


def test_encoder_only_source_reports_absent_heads(tmp_path):
    hf_model = hf_pretraining_model(tmp_path / "hf", heads=False, num_hidden_groups=2)
    batch = random_batch()
    expected = hf_outputs(hf_model, batch)
    report = convert("transformers", str(tmp_path / "hf"), str(tmp_path / "out"))
    assert report["heads_absent_from_source"] == ["mlm_head", "sop_head"]
    assert report["heads_written"] == []
    model, loaded = load_converted(tmp_path / "out")
    assert loaded.restored == ["encoder"]
    assert loaded.missing == ["mlm_head", "sop_head"]
    assert "left at initialization: mlm_head, sop_head" in str(loaded)
    assert_parity(model(batch), expected, keys=("sequence_output", "pooled_output"))


def test_pytorch_model_bin(tmp_path):
    import torch

    hf_model = hf_pretraining_model(tmp_path / "st", num_hidden_groups=2, inner_group_num=2)
    (tmp_path / "bin").mkdir()
    torch.save(hf_model.state_dict(), tmp_path / "bin" / "pytorch_model.bin")
    (tmp_path / "bin" / "config.json").write_text((tmp_path / "st" / "config.json").read_text())
    batch = random_batch()
    convert("transformers", str(tmp_path / "bin"), str(tmp_path / "out"))
    model, _ = load_converted(tmp_path / "out")
    assert_parity(model(batch), hf_outputs(hf_model, batch))


def test_encoder_restores_from_pretrainer_checkpoint(reference, tmp_path):
    hf_dir, _, batch, expected, _ = reference
    convert("transformers", str(hf_dir), str(tmp_path))
    encoder, report = load_converted(tmp_path, AlbertEncoder)
    assert report.restored == ["encoder"] and report.missing == []
    assert_parity(encoder(batch), expected, keys=("sequence_output", "pooled_output"))


def test_convert_command_line(tmp_path):
    hf_model = hf_pretraining_model(tmp_path / "hf")
    run = run_command(
        "-m",
        "albert_tf.checkpoints.convert",
        "--source=transformers",
        f"--input={tmp_path / 'hf'}",
        f"--output_dir={tmp_path / 'out'}",
    )
    assert run.returncode == 0, run.report()
    assert "wrote" in run.stdout and "(32 variables)" in run.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "albert_config.json",
        "checkpoint",
        "ckpt-1.data-00000-of-00001",
        "ckpt-1.index",
        "conversion_report.json",
    ]
    batch = random_batch()
    model, _ = load_converted(tmp_path / "out")
    assert_parity(model(batch), hf_outputs(hf_model, batch))

    run = run_command(
        "-m",
        "albert_tf.checkpoints.convert",
        "--source=tf1",
        f"--input={tmp_path / 'hf'}",
        f"--output_dir={tmp_path / 'x'}",
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "error: --albert_config_file is required for --source tf1: a TF1 checkpoint holds "
        "no model config"
    )
    assert not (tmp_path / "x").exists()
