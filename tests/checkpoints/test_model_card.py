"""The model card (albert_tf.checkpoints.model_card): README.md in the Hugging Face format,
parsed back with huggingface_hub's own `ModelCard` parser, naming the run's real figures —
from records written here (unit) and beside a real fine-tuning run, its export and its
conversions (integration)."""

import json

import pytest
from huggingface_hub import ModelCard

from albert_tf.checkpoints.model_card import figures, gather, write_model_card
from albert_tf.checkpoints.run_record import RunIdentity, RunRecord, Segment
from albert_tf.checkpoints.task_info import TaskInfo
from tests.support.in_process import run_command
from tests.support.tiny import WORKFLOW, write_tiny_config


def _records(directory, results):
    """task.json, run_config.json and eval_results.json as the runners write them."""
    (directory / "spm.model").write_bytes(b"not read: only its sha256")
    TaskInfo.build(
        "classifier", labels=["neg", "pos"], task_name="sst-2", max_seq_length=64
    ).with_tokenizer(None).write(str(directory))
    identity = RunIdentity(
        "run_classifier",
        task="sst-2",
        labels=["neg", "pos"],
        albert_config={"hidden_size": 64},
        tokenizer={"kind": "sentencepiece", "sha256": "ab" * 32},
        data={"train_sha256": "cd" * 32, "max_seq_length": 64},
    )
    settings = {"learning_rate": 0.001, "num_train_steps": 20, "seed": 7}
    details = {"command": "python run_classifier.py --task_name=sst-2 --do_train"}
    RunRecord(identity, (Segment(0, None, settings),), details).write(str(directory))
    (directory / "eval_results.json").write_text(json.dumps(results))


def test_card_parses_and_names_the_records(tmp_path):
    results = {
        "task": "sst-2",
        "seed": 7,
        "step": 20,
        "final": {"accuracy": 0.625},
        "best": {"metric": "accuracy", "value": 0.6875, "step": 10, "eval": {"accuracy": 0.6875}},
    }
    _records(tmp_path, results)
    path = write_model_card(str(tmp_path), what="A test run.", commands=("python -m export",))
    card = ModelCard.load(path)
    data = card.data.to_dict()
    assert data["pipeline_tag"] == "text-classification" and data["datasets"] == ["sst-2"]
    assert "albert" in data["tags"] and "license" not in data and "language" not in data
    (result,) = card.data.eval_results
    assert (result.task_type, result.dataset_name) == ("text-classification", "sst-2")
    # The best checkpoint's figure (the model a run restores and exports), not the last one.
    assert (result.metric_type, result.metric_value) == ("accuracy", 0.6875)
    text = card.text
    assert '| labels | ["neg", "pos"] |' in text and "| learning_rate | 0.001 |" in text
    assert "ab" * 32 in text and "cd" * 32 in text and "| accuracy | 0.6875 |" in text
    assert "python run_classifier.py --task_name=sst-2 --do_train\npython -m export" in text


def test_card_without_records_is_still_a_valid_card(tmp_path):
    card = ModelCard.load(write_model_card(str(tmp_path), name="bare", what="Weights only."))
    assert card.data.eval_results is None and card.data.to_dict()["tags"][0] == "albert"
    assert "# bare" in card.text and "## Evaluation" not in card.text


def test_the_first_directory_holding_a_record_wins(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _records(b, {"final": {"f1": 0.5}})
    (a / "eval_results.json").write_text(json.dumps({"exact_match": 40.0, "f1": 51.5}))
    records = gather(str(tmp_path / "absent"), str(a), str(b))
    assert records.results == {"exact_match": 40.0, "f1": 51.5}
    assert records.task.kind == "classifier" and records.run.identity.task == "sst-2"


@pytest.mark.parametrize(
    "report, expected, which",
    [
        ({"final": {"accuracy": 0.5}, "step": 3}, {"accuracy": 0.5}, "final evaluation (step 3)"),
        (  # SQuAD: the figures at the top level, step and version aside
            {"predict_file": "dev.json", "version": "v2.0", "step": 9, "exact_match": 40.0},
            {"exact_match": 40.0},
            "evaluation report",
        ),
        (  # --num_runs: the spread of each figure, nested keys joined
            {"runs": 2, "seeds": [1, 2], "summary": {"accuracy": {"median": 0.5, "min": 0.4}}},
            {"summary/accuracy/median": 0.5, "summary/accuracy/min": 0.4},
            "evaluation report",
        ),
        (None, {}, ""),
    ],
)
def test_figures_of_each_report_shape(report, expected, which):
    assert figures(report) == (expected, which)


@pytest.mark.slow  # a fine-tuning run, two SavedModel exports, LiteRT, four conversions
def test_every_written_model_carries_a_card_with_the_runs_figures(tmp_path, shared_data):
    spm = shared_data / "spm" / "de-30k-clean.model"
    out, export = tmp_path / "run", tmp_path / "export"
    run = run_command(
        "run_classifier.py",
        "--task_name=sst-2",
        f"--data_dir={shared_data / 'glue' / 'SST-2'}",
        f"--output_dir={out}",
        f"--spm_model_file={spm}",
        f"--albert_config_file={write_tiny_config(tmp_path / 'config.json', base=WORKFLOW)}",
        "--max_seq_length=32",
        "--max_train_examples=256",
        "--train_batch_size=32",
        "--train_step=8",
        "--steps_per_loop=4",
        "--learning_rate=1e-3",
        "--do_train",
        "--do_eval",
        f"--export_dir={export}",
    )
    assert run.returncode == 0, run.report()
    results = json.loads((out / "eval_results.json").read_text())
    accuracy = results["best"]["eval"]["accuracy"]
    written = {"run": out, "export": export / "1"}
    # From the run's best/, and (as the README converts) from the export's kept directory,
    # whose version keeps the run's records in assets.extra.
    kept = export / "1" / "assets.extra" / "finetuned"
    for target, source in (
        ("transformers", kept),
        ("keras_hub", out / "best"),
        ("model_garden", out / "best"),
    ):
        written[target] = tmp_path / target
        converted = run_command(
            "-m",
            "albert_tf.checkpoints.convert",
            f"--to={target}",
            f"--input={source}",
            f"--output_dir={written[target]}",
        )
        assert converted.returncode == 0, converted.report()
    exported = run_command(  # the export command from the run's best/: its records beside
        "-m",
        "albert_tf.serving.export",
        "--task=classifier",
        f"--init_checkpoint={out / 'best'}",
        f"--export_dir={tmp_path / 'served'}",
        "--export_format=savedmodel",
        "--export_format=tflite",
    )
    assert exported.returncode == 0, exported.report()
    written["served"] = tmp_path / "served" / "1"
    written["litert"] = tmp_path / "served" / "litert"
    assert "classifier-float32.tflite" in (written["litert"] / "README.md").read_text()
    assert (
        "\npython -m albert_tf.serving.export --task=classifier --init_checkpoint="
        in (written["served"] / "README.md").read_text()
    )
    encoder = run_command(
        "-m",
        "albert_tf.checkpoints.export_encoder",
        f"--init_checkpoint={out}",
        f"--output_dir={tmp_path / 'encoder'}",
    )
    assert encoder.returncode == 0, encoder.report()
    sha = json.loads((out / "run_config.json").read_text())["identity"]["tokenizer"]["sha256"]
    for what, directory in written.items():
        card = ModelCard.load(directory / "README.md")
        (result,) = card.data.eval_results
        assert (result.metric_type, result.metric_value) == ("accuracy", accuracy), what
        assert card.data.to_dict()["pipeline_tag"] == "text-classification", what
        assert sha in card.text and "\npython run_classifier.py --output_dir=" in card.text
        assert f"--task_name=sst-2 --data_dir={shared_data / 'glue' / 'SST-2'}" in card.text
    assert "--to=transformers" in (written["transformers"] / "README.md").read_text()
    # The encoder export: the run's records and tokenizer; the run's figures are its
    # classifier's, shown as the source model's, not claimed in the encoder's model-index.
    encoder_card = ModelCard.load(tmp_path / "encoder" / "README.md")
    assert sha in encoder_card.text and "export_encoder --init_checkpoint" in encoder_card.text
    assert encoder_card.data.eval_results is None
    assert "## Evaluation of the model it was taken from" in encoder_card.text
