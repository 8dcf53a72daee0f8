"""`convert --source model_garden` and `--source tfhub_v2` against Model Garden itself.

tf-models-official cannot live in .venv (it pins its own TensorFlow and tf-keras), so
tests/support/model_garden_reference.py runs in `.venv-modelgarden`
(requirements-modelgarden.txt; `MODEL_GARDEN_PYTHON` overrides the interpreter; skipped
when absent). It builds a tiny AlbertEncoder with BertPretrainer / BertPretrainerV2 heads
from random weights with Model Garden's own classes, saves their object-based
checkpoints, exports a TF-Hub v2 SavedModel with Model Garden's export_tfhub_lib, and
writes the outputs for fixed inputs. The converted checkpoints, loaded into this
project's AlbertPretrainer, must give those outputs within 1e-5, and every variable of
the source must be accounted for in conversion_report.json. The other way
(`--to model_garden`), Model Garden restores our checkpoint and must give our outputs.
"""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertPretrainer, load_checkpoint
from albert_tf.checkpoints import save_checkpoint
from tests.support.harness import CLI_ENV, ROOT, SHARED_DATA
from tests.support.in_process import run_command

MG_PYTHON = pathlib.Path(
    os.environ.get("MODEL_GARDEN_PYTHON", ROOT / ".venv-modelgarden" / "bin" / "python")
)
SCRIPT = ROOT / "tests" / "support" / "model_garden_reference.py"
# Only stored in the SavedModel as an asset (export_tfhub_lib requires a vocabulary).
SPM = SHARED_DATA / "spm" / "test_sentencepiece_1k.model"
TOLERANCE = 1e-5
CONVERT = ("-m", "albert_tf.checkpoints.convert")
OUTPUTS = ("sequence_output", "pooled_output", "mlm_logits")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    if not MG_PYTHON.exists():
        pytest.skip(
            f"no Model Garden venv at {MG_PYTHON} (make install-modelgarden, or set "
            f"MODEL_GARDEN_PYTHON)"
        )
    if not SPM.exists():
        pytest.skip(f"real data not available: {SPM} is absent")
    out = tmp_path_factory.mktemp("model_garden")
    _in_model_garden(out, SPM)
    return out


def _in_model_garden(*args):
    """tests/support/model_garden_reference.py with `args`, run by the Model Garden venv's
    Python with nothing of ours on its path."""
    env = {k: v for k, v in CLI_ENV.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [str(MG_PYTHON), str(SCRIPT), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-5000:]


def _our_inputs(reference) -> dict:
    """The reference's fixed inputs (Model Garden's input names) under ours."""
    inputs = np.load(reference / "inputs.npz")
    return {
        "input_ids": inputs["input_word_ids"],
        "input_mask": inputs["input_mask"],
        "segment_ids": inputs["input_type_ids"],
        "masked_lm_positions": inputs["masked_lm_positions"],
    }


def _source_variable_count(prefix) -> int:
    """Checkpoint keys other than the object graph (a shared variable has one key)."""
    return sum(1 for name, _ in tf.train.list_variables(str(prefix)) if not name.startswith("_"))


CASES = {  # id: (source, input, config flag?, heads in the source)
    "pretrainer": ("model_garden", "pretrainer", True, ["mlm_head", "sop_head"]),
    "pretrainer_v2": ("model_garden", "pretrainer_v2", True, ["mlm_head"]),
    "tfhub_v2": ("tfhub_v2", "hub", False, ["mlm_head"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_converted_model_gives_model_gardens_outputs(reference, tmp_path, case):
    source, name, with_config, heads = CASES[case]
    out = tmp_path / "converted"
    args = ["--source", source, "--input", reference / name, "--output_dir", out]
    if with_config:
        args += ["--albert_config_file", reference / "albert_config.json"]
    run = run_command(*CONVERT, *args)
    assert run.returncode == 0, run.report()

    report = json.loads((out / "conversion_report.json").read_text())
    mg = report["model_garden"]
    assert report["heads_written"] == heads
    assert report["unrecognized_source_keys"] == []
    assert report["unused_source_variables"] == []
    assert mg["not_imported"] == {}
    assert mg["config_fields_defaulted"] == {}
    variables = reference / name / ("variables/variables" if name == "hub" else "ckpt-1")
    assert len(mg["renamed"]) + len(mg["skipped"]) == _source_variable_count(variables)
    expected = 30 + 2 * ("sop_head" in heads)  # encoder 25, MLM head 5, SOP head 2
    assert report["variables_assigned"] == len(mg["renamed"]) == expected

    # The config: given, or (SavedModel) read from Model Garden's own record of it.
    written = json.loads((out / "albert_config.json").read_text())
    for key, value in json.loads((reference / "albert_config.json").read_text()).items():
        assert written[key] == value, key

    config = AlbertConfig.from_json_file(out / "albert_config.json")
    model = AlbertPretrainer(config)
    model.build()
    load_report = load_checkpoint(model, str(out))
    assert sorted(load_report.restored) == sorted(["encoder", *heads])
    outputs = model(_our_inputs(reference))
    compared = list(OUTPUTS) + (["sop_logits"] if "sop_head" in heads else [])
    for key in compared:
        want = np.load(reference / f"{key}.npy")
        got = np.asarray(outputs[key])
        diff = float(np.max(np.abs(got - want)))
        print(f"{case} {key}: max abs difference {diff:.2e}")
        assert diff <= TOLERANCE, (key, diff)


def test_a_checkpoint_without_config_names_the_flag(reference, tmp_path):
    run = run_command(
        *CONVERT,
        "--source",
        "model_garden",
        "--input",
        reference / "pretrainer_v2",
        "--output_dir",
        tmp_path / "out",
    )
    assert run.returncode == 1, run.report()
    error = run.stderr.strip().splitlines()[-1]
    assert "num_hidden_layers" in error and "--albert_config_file" in error
    assert str(reference / "pretrainer_v2") in error
    assert not (tmp_path / "out").exists()


def test_a_config_with_another_head_count_is_refused(reference, tmp_path):
    config = json.loads((reference / "albert_config.json").read_text())
    config["num_attention_heads"] = 4  # still divides H, and every shape still fits
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(config))
    run = run_command(
        *CONVERT,
        "--source",
        "model_garden",
        "--input",
        reference / "pretrainer",
        "--output_dir",
        tmp_path / "out",
        "--albert_config_file",
        path,
    )
    assert run.returncode == 1, run.report()
    error = run.stderr.strip().splitlines()[-1]
    assert str(path) in error and "num_attention_heads=4 (weights: 2)" in error


def test_tfhub_v2_needs_a_saved_model_and_model_garden_an_object_checkpoint(reference, tmp_path):
    run = run_command(
        *CONVERT,
        "--source",
        "tfhub_v2",
        "--input",
        reference / "pretrainer",
        "--output_dir",
        tmp_path / "a",
    )
    assert run.returncode == 1 and "saved_model.pb not found" in run.stderr, run.report()


def test_our_model_leaves_for_model_garden_and_its_tfhub_export_comes_back(reference, tmp_path):
    """`--to model_garden`: Model Garden restores it as export_tfhub_lib does (every
    object and value of the checkpoint matched: assert_consumed) and computes our outputs;
    its own TF-Hub export of it imports back (`--source tfhub_v2`) to the same model."""
    config = AlbertConfig.from_json_file(reference / "albert_config.json")
    model = AlbertPretrainer(config)
    model.build()
    rng = np.random.default_rng(5)
    for w in model.weights:
        w.assign((1.0 if "gamma" in w.path else 0.0) + rng.normal(0, 0.2, w.shape))
    ours = tmp_path / "ours"
    save_checkpoint(model, str(ours), config)
    run = run_command(
        *CONVERT, "--to", "model_garden", "--input", ours, "--output_dir", tmp_path / "mg"
    )
    assert run.returncode == 0, run.report()
    assert "not written: sop_head" in run.stdout

    restored = tmp_path / "restored"
    restored.mkdir()
    (restored / "inputs.npz").write_bytes((reference / "inputs.npz").read_bytes())
    _in_model_garden("restore", tmp_path / "mg", restored, SPM)
    back = tmp_path / "back"
    run = run_command(
        *CONVERT, "--source", "tfhub_v2", "--input", restored / "hub", "--output_dir", back
    )
    assert run.returncode == 0, run.report()
    returned = AlbertPretrainer(AlbertConfig.from_json_file(back / "albert_config.json"))
    returned.build()
    load_checkpoint(returned, str(back))

    inputs = _our_inputs(reference)
    want, back_outputs = model(inputs), returned(inputs)
    for key in OUTPUTS:
        for route, got in (
            ("model_garden", np.load(restored / f"{key}.npy")),
            ("model_garden -> tfhub_v2", np.asarray(back_outputs[key])),
        ):
            diff = float(np.max(np.abs(got - np.asarray(want[key]))))
            print(f"--to {route} {key}: max abs difference {diff:.2e}")
            assert diff <= TOLERANCE, (route, key, diff)


def test_a_tf1_checkpoint_is_refused_with_the_source_to_use(tmp_path):
    """Needs no Model Garden: a name-based checkpoint has no object graph."""
    from tests.support.references import write_tf1_checkpoint

    prefix = tmp_path / "model.ckpt"
    write_tf1_checkpoint(str(prefix), {"bert/pooler/dense/bias": np.zeros(4, np.float32)})
    run = run_command(
        *CONVERT,
        "--source",
        "model_garden",
        "--input",
        prefix,
        "--output_dir",
        tmp_path / "out",
    )
    assert run.returncode == 1, run.report()
    error = run.stderr.strip().splitlines()[-1]
    assert str(prefix) in error and "--source tf1" in error


def test_convert_offers_every_source_model_garden_reads():
    """convert spells its --source choices out (so that its --help imports no TensorFlow):
    they must hold every source this module reads."""
    from albert_tf.checkpoints.convert import SOURCES
    from albert_tf.checkpoints.model_garden import MODEL_GARDEN_SOURCES

    assert set(MODEL_GARDEN_SOURCES) <= set(SOURCES)
