"""Classification task knowledge (data_pipeline.classification.tasks, .submission,
features.task_features): which file and reader, labels, metrics, the cached features and
what their metadata records (text_pair), and the GLUE submission files."""

import json
import os

import numpy as np
import pytest

from data_pipeline.classification.features import task_features
from data_pipeline.classification.submission import write_submission
from data_pipeline.classification.tasks import TaskSpec


def _csv(directory, split, rows, header=("sentence", "other", "label")):
    directory.mkdir(exist_ok=True)
    path = directory / f"{split}.csv"
    path.write_text("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n")
    return path


def test_glue_task_files_labels_splits_and_metrics():
    mnli = TaskSpec("MNLI", data_dir="glue/MNLI")
    assert mnli.name == "mnli" and not mnli.user_files and mnli.choices is None
    assert mnli.source("dev") == os.path.join("glue/MNLI", "dev_matched.tsv")
    assert mnli.dev_splits == ["dev_matched", "dev_mismatched"]
    assert mnli.labels() == ["contradiction", "entailment", "neutral"]
    assert (mnli.metric_task, mnli.best_metric) == ("mnli", "accuracy")
    stsb = TaskSpec("sts-b", data_dir="x")
    assert stsb.is_regression and stsb.labels() is None and stsb.best_metric == "corr"
    assert TaskSpec("cola", data_dir="x").best_metric == "mcc"
    assert TaskSpec("mrpc", data_dir="x").best_metric == "acc_and_f1"
    with pytest.raises(ValueError, match="--data_dir is needed for task rte"):
        TaskSpec("rte").source("train")
    with pytest.raises(ValueError, match="task 'nope' is not one of"):
        TaskSpec("nope", data_dir="x").labels()


def test_user_files_default_to_data_dir_and_labels_are_discovered(tmp_path):
    data = tmp_path / "data"
    _csv(
        data,
        "train",
        [("good day", "x", "pos"), ("bad day", "y", "neg"), ("fine", "z", "10"), ("ok", "w", "2")],
    )
    spec = TaskSpec("csv", data_dir=str(data), text_a_column="sentence")
    assert spec.user_files and spec.source("dev") == str(data / "dev.csv")
    assert spec.labels() == ["10", "2", "neg", "pos"]  # strings: sorted as strings
    given = TaskSpec("csv", data_dir=str(data), dev_file="elsewhere.csv")
    assert given.source("dev") == "elsewhere.csv"
    assert TaskSpec("race", data_dir=str(data)).source("test") == str(data / "test.json")
    assert TaskSpec("race").output_names(None) == ["A", "B", "C", "D"]
    assert spec.output_names(["neg", "pos"]) == ["neg", "pos"]
    with pytest.raises(ValueError, match="give --train_file or --data_dir for task jsonl"):
        TaskSpec("jsonl").source("train")
    with pytest.raises(FileNotFoundError, match="no train or dev file"):
        TaskSpec("tsv", data_dir=str(tmp_path / "empty")).labels()
    regression = TaskSpec("jsonl", regression=True)
    assert regression.is_regression and regression.labels() is None
    assert (regression.metric_task, regression.best_metric) == ("sts-b", "corr")
    assert TaskSpec("race", regression=True).is_regression is False  # choices: never


def test_evaluate_prefixes_several_dev_splits_and_ranks_by_the_first():
    spec = TaskSpec("mnli", data_dir="x")
    logits = np.array([[3.0, 0, 0], [0, 2.0, 0], [0, 0, 1.0], [1.0, 0, 0]])
    result = spec.evaluate(
        {
            "dev_matched": (logits, np.array([0, 1, 2, 2])),
            "dev_mismatched": (logits, np.array([1, 1, 1, 1])),
        }
    )
    assert result == {
        "dev_matched/accuracy": 0.75,
        "dev_mismatched/accuracy": 0.25,
        "accuracy": 0.75,
    }
    stsb = TaskSpec("sts-b", data_dir="x").evaluate(
        {"dev": (np.array([[0.5], [2.0], [4.0]]), np.array([1.0, 2.0, 5.0]))}
    )
    assert set(stsb) == {"pearson", "spearman", "corr"} and stsb["spearman"] == 1.0


def test_task_features_record_text_pair_and_shape_in_the_cache(tok, tmp_path):
    data = tmp_path / "data"
    _csv(data, "train", [("a good day", "and more", "pos"), ("a bad one", "", "neg")])
    cache = str(tmp_path / "cache")
    single = TaskSpec("csv", data_dir=str(data), text_a_column="sentence")
    built = task_features(single, "train", tok, cache, 16, ["neg", "pos"])
    assert not built.reused and built.count == 2 and not built.text_pair
    assert (built.max_seq_length, built.num_choices, built.regression) == (16, None, False)
    pair = TaskSpec("csv", data_dir=str(data), text_a_column="sentence", text_b_column="other")
    pairs = task_features(pair, "train", tok, cache, 16, ["neg", "pos"])
    assert not pairs.reused and pairs.text_pair  # other columns: another cache key
    again = task_features(pair, "train", tok, cache, 16, ["neg", "pos"])
    assert again.reused and again.text_pair and again.path == pairs.path
    with open(again.path[: -len(".tfrecord")] + ".json") as f:
        assert json.load(f)["info"]["text_pair"] is True
    assert (
        "csv train: 2 examples, 0 examples truncated to max_seq_length=16 (cached: "
        in again.describe()
    )
    batch = next(iter(again.dataset(8, drop_remainder=False)))
    assert batch["input_ids"].shape == (2, 16)
    assert batch["segment_ids"].numpy()[0].max() == 1  # the pair's second segment
    assert batch["segment_ids"].numpy()[1].max() == 0  # "" is no second segment
    with pytest.raises(FileNotFoundError, match="csv dev file not found: .*dev.csv"):
        task_features(pair, "dev", tok, cache, 16, ["neg", "pos"])


def test_max_examples_draws_a_seeded_subset(tok, tmp_path):
    data = tmp_path / "data"
    _csv(data, "train", [(f"sentence {i}", "", "pos" if i % 2 else "neg") for i in range(30)])
    spec = TaskSpec("csv", data_dir=str(data), text_a_column="sentence")
    first = task_features(spec, "train", tok, str(tmp_path / "a"), 16, ["neg", "pos"], 10, 3)
    second = task_features(spec, "train", tok, str(tmp_path / "b"), 16, ["neg", "pos"], 10, 3)
    assert first.count == 10 and first.info["subset_of"] == 30
    assert "(drawn from 30)" in first.describe()
    with open(first.path, "rb") as f, open(second.path, "rb") as g:
        assert f.read() == g.read()


def test_submission_files(tmp_path):
    from data_pipeline.classification.examples import Example

    examples = [Example("test-7", "a", None, None), Example("row-3", "b", None, None)]
    logits = np.array([[0.0, 2.0], [1.0, -1.0]])
    tsv, jsonl = write_submission(str(tmp_path), "sst-2", examples, logits, ["0", "1"])
    assert os.path.basename(tsv) == "SST-2.tsv"
    assert open(tsv).read() == "index\tprediction\n7\t1\nrow-3\t0\n"
    rows = [json.loads(line) for line in open(jsonl)]
    assert os.path.basename(jsonl) == "sst-2_test_predictions.jsonl"
    assert rows[0]["guid"] == "test-7" and rows[0]["label"] == "1"
    assert rows[0]["probabilities"]["1"] == pytest.approx(1 / (1 + np.exp(-2)), abs=1e-6)
    tsv, jsonl = write_submission(str(tmp_path), "sts-b", examples, np.array([[5.7], [2.25]]), None)
    assert open(tsv).read() == "index\tprediction\n7\t5.000\nrow-3\t2.250\n"
    assert [json.loads(line)["score"] for line in open(jsonl)] == [5.7, 2.25]
    assert sorted(os.listdir(tmp_path)) == [
        "SST-2.tsv",
        "STS-B.tsv",
        "sst-2_test_predictions.jsonl",
        "sts-b_test_predictions.jsonl",
    ]


def test_misformatted_rows_are_one_line_naming_file_and_line(tok, tmp_path):
    """The rows a runner reads through `task_features`: a TSV row with a column too many, a
    line of jsonl that is not JSON, a dev label the training labels lack. Each stops before
    anything is cached, with `file:line` and what is wrong."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("text_a\tlabel\ngood\tpos\nbad\tneg\textra\n")
    (data / "train.jsonl").write_text('{"text_a": "good", "label": "pos"}\n{"text_a": "bad",\n')
    _csv(data, "dev", [("fine", "", "pos"), ("unsure", "", "maybe")])
    cache = tmp_path / "cache"
    cases = [
        (
            TaskSpec("tsv", data_dir=str(data)),
            "train",
            rf"^{data}/train.tsv:3: 3 fields, expected 2",
        ),
        (TaskSpec("jsonl", data_dir=str(data)), "train", rf"^{data}/train.jsonl:2: invalid JSON"),
        (
            TaskSpec("csv", data_dir=str(data), text_a_column="sentence"),
            "dev",
            rf"^{data}/dev.csv:3: label 'maybe' is not one of the training labels \['neg', 'p",
        ),
    ]
    for spec, split, message in cases:
        with pytest.raises(ValueError, match=message) as e:
            task_features(spec, split, tok, str(cache), 16, ["neg", "pos"])
        assert "\n" not in str(e.value)
    assert not cache.exists() or not any(cache.iterdir())
    # A GLUE file: its layout's column count, with the task and split.
    glue = tmp_path / "glue"
    glue.mkdir()
    (glue / "dev.tsv").write_text("sentence\tlabel\ngood .\t1\nbad .\t0\t0\n")
    with pytest.raises(ValueError, match=rf"^{glue}/dev.tsv:3: 3 tab-separated fields, expected 2"):
        TaskSpec("sst-2", data_dir=str(glue)).read("dev")


def test_a_task_family_registered_in_families_is_a_task(tmp_path, monkeypatch):
    """`tasks.FAMILIES` is the one place a task name is registered: an entry (reader,
    extension, multiple choice) makes the name a task with files, labels and metrics."""
    from data_pipeline.classification.examples import Example
    from data_pipeline.classification.tasks import FAMILIES, TaskFamily

    def read_lines(spec, split, path):  # "label<space>text" a line
        rows = [line.split(" ", 1) for line in open(path).read().splitlines()]
        return [Example(f"{split}-{i}", text, None, label) for i, (label, text) in enumerate(rows)]

    monkeypatch.setitem(FAMILIES, "lines", TaskFamily(read_lines, "txt"))
    (tmp_path / "train.txt").write_text("b second\na first\n")
    spec = TaskSpec("Lines", data_dir=str(tmp_path))
    assert spec.source("dev") == str(tmp_path / "dev.txt") and spec.user_files
    assert [e.text_a for e in spec.read("train")] == ["second", "first"]
    assert spec.labels() == ["a", "b"] and spec.best_metric == "accuracy"
    assert spec.choices is None and spec.dev_splits == ["dev"]
    with pytest.raises(ValueError, match=r"^task 'nope' is not one of \[.*'lines'"):
        TaskSpec("nope").read("train", "x.txt")
