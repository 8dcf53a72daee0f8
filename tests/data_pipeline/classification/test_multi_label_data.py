"""Multi-label reading: GoEmotions' real tsv, csv with the delimiter inside a quoted field,
jsonl lists, bad cells as one-line file:line errors; the held-out split; multi-hot features
through the TFRecord cache and back."""

import csv
import json

import numpy as np
import pytest

from data_pipeline.classification.held_out import HeldOut
from data_pipeline.classification.tasks import TaskSpec

GOEMOTIONS = 28  # 27 emotions + neutral


def _goemotions(shared_data, tmp_path, rows=400):
    """The first `rows` of GoEmotions' train and dev files (their own bytes)."""
    source = shared_data / "multilabel" / "goemotions"
    for split in ("train", "dev"):
        with open(source / f"{split}.tsv", encoding="utf-8") as f:
            lines = [next(f) for _ in range(rows + 1)]
        (tmp_path / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")
    return TaskSpec(
        "tsv", str(tmp_path), text_a_column="text", label_column="labels", multi_label=True
    )


def test_goemotions_labels_and_multi_hot(shared_data, tmp_path):
    from data_pipeline.classification.multi_label import multi_hot

    full = TaskSpec(
        "tsv",
        str(shared_data / "multilabel" / "goemotions"),
        text_a_column="text",
        label_column="labels",
        multi_label=True,
    )
    labels = full.labels()
    assert len(labels) == GOEMOTIONS and "neutral" in labels and labels == sorted(labels)
    spec = _goemotions(shared_data, tmp_path)
    examples = spec.read("train")
    raw = [line.split("\t")[1] for line in (tmp_path / "train.tsv").read_text().splitlines()[1:]]
    assert [",".join(e.label) for e in examples] == raw
    assert any(len(e.label) > 1 for e in examples)
    hot = multi_hot(examples, labels)
    assert hot.shape == (400, GOEMOTIONS) and hot.dtype == np.float32
    assert hot.sum(1).tolist() == [len(e.label) for e in examples]
    for e, row in zip(examples, hot):
        assert [labels[i] for i in np.flatnonzero(row)] == sorted(e.label, key=labels.index)
    spec.check_labels("dev", labels)  # every dev label is a training label


def test_delimiter_inside_a_quoted_csv_field_and_jsonl_lists(tmp_path):
    with open(tmp_path / "train.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text_a", "label"])
        w.writerow(["a, b and c", "joy,love"])  # quoted by the writer: commas inside
        w.writerow(["plain", "anger"])
    spec = TaskSpec("csv", str(tmp_path), multi_label=True)
    assert [e.label for e in spec.read("train")] == [("joy", "love"), ("anger",)]
    assert spec.labels() == ["anger", "joy", "love"]
    rows = [{"text_a": "x", "label": ["b", "a"]}, {"text_a": "y", "label": "c|a"}]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = TaskSpec("jsonl", str(tmp_path), multi_label=True, label_delimiter="|")
    assert [e.label for e in spec.read("train")] == [("b", "a"), ("c", "a")]


@pytest.mark.parametrize(
    "cell, message",
    [
        ("", "train.tsv:3: empty label list"),
        ("joy,,love", "train.tsv:3: an empty label name"),
        ("joy,joy", "train.tsv:3: a label is repeated"),
    ],
)
def test_bad_cells_name_file_and_line(tmp_path, cell, message):
    (tmp_path / "train.tsv").write_text(f"text_a\tlabel\nfine\tjoy\nbad\t{cell}\n")
    spec = TaskSpec("tsv", str(tmp_path), multi_label=True)
    with pytest.raises(ValueError, match=message):
        spec.read("train")


def test_bad_jsonl_labels_and_unknown_dev_label(tmp_path):
    (tmp_path / "train.jsonl").write_text(
        '{"text_a": "a", "label": ["x"]}\n{"text_a": "b", "label": []}\n'
    )
    spec = TaskSpec("jsonl", str(tmp_path), multi_label=True)
    with pytest.raises(ValueError, match=r"train.jsonl:2: empty label list"):
        spec.read("train")
    (tmp_path / "train.jsonl").write_text('{"text_a": "a", "label": ["x", 3]}\n')
    with pytest.raises(ValueError, match=r"train.jsonl:1: labels .* not a string or a list"):
        spec.read("train")
    (tmp_path / "train.jsonl").write_text('{"text_a": "a", "label": ["x", "y"]}\n')
    (tmp_path / "dev.jsonl").write_text(
        '{"text_a": "a", "label": "x"}\n{"text_a": "b", "label": ["y", "z"]}\n'
    )
    labels = spec.labels()
    with pytest.raises(ValueError, match=r"dev.jsonl:2: label 'z' is not one of the training"):
        spec.check_labels("dev", labels)


def test_multi_label_is_for_user_files_only():
    with pytest.raises(ValueError, match="--multi_label is for the csv, tsv and jsonl"):
        TaskSpec("mrpc", multi_label=True)
    with pytest.raises(ValueError, match="with --regression"):
        TaskSpec("csv", multi_label=True, regression=True)


def test_held_out_parts_partition_the_examples():
    examples = list(range(103))
    fit, tune = HeldOut(0.1, 7, "fit"), HeldOut(0.1, 7, "tune")
    a, b = fit.select(examples), tune.select(examples)
    assert len(b) == 10 and sorted(a + b) == examples and not set(a) & set(b)
    assert b == HeldOut(0.1, 7, "tune").select(examples)  # seeded
    assert b != HeldOut(0.1, 8, "tune").select(examples)
    with pytest.raises(ValueError, match="leaves 0 to tune on"):
        HeldOut(0.1, 7).select(list(range(4)))
    with pytest.raises(ValueError, match=r"--held_out_fraction=1.0 is not in \(0, 1\)"):
        HeldOut(1.0, 7)


def test_multi_hot_features_round_trip_the_cache(shared_data, tmp_path, tok):
    from data_pipeline.classification.features import task_features
    from data_pipeline.classification.multi_label import multi_hot

    spec = _goemotions(shared_data, tmp_path, rows=60)
    labels = spec.labels()
    cache = str(tmp_path / "cache")
    fit = task_features(spec, "train", tok, cache, 32, labels, held_out=HeldOut(0.25, 3, "fit"))
    tune = task_features(spec, "train", tok, cache, 32, labels, held_out=HeldOut(0.25, 3, "tune"))
    assert (fit.count, tune.count) == (45, 15) and fit.path != tune.path
    assert fit.multi_label == len(labels)
    examples = HeldOut(0.25, 3, "tune").select(spec.read("train"))
    batch = next(iter(tune.dataset(15, drop_remainder=False)))
    assert batch["label_ids"].shape == (15, len(labels))
    np.testing.assert_array_equal(batch["label_ids"].numpy(), multi_hot(examples, labels))
    again = task_features(spec, "train", tok, cache, 32, labels, held_out=HeldOut(0.25, 3, "tune"))
    assert again.reused and again.multi_label == len(labels)


def test_json_list_cells_in_a_tsv_are_read_as_lists(tmp_path):
    """M03: `["joy", "love"]` in a TSV cell was split at "," with the brackets kept."""
    (tmp_path / "train.tsv").write_text(
        'text_a\tlabel\none\t["joy", "love"]\ntwo\t["anger"]\nthree\tjoy,anger\n'
    )
    spec = TaskSpec("tsv", str(tmp_path), multi_label=True)
    assert [e.label for e in spec.read("train")] == [("joy", "love"), ("anger",), ("joy", "anger")]
    assert spec.labels() == ["anger", "joy", "love"]
    (tmp_path / "train.tsv").write_text('text_a\tlabel\none\t["joy", love]\n')
    with pytest.raises(
        ValueError, match=r"train.tsv:2: labels .* look like a JSON list but are not"
    ):
        spec.read("train")


def test_a_label_delimiter_that_splits_no_cell_names_file_line_and_column(tmp_path, shared_data):
    """M12: --label_delimiter ';' on comma-separated cells made every combination a label."""
    spec = _goemotions(shared_data, tmp_path, rows=60)
    wrong = TaskSpec(
        "tsv",
        str(tmp_path),
        text_a_column="text",
        label_column="labels",
        multi_label=True,
        label_delimiter=";",
    )
    with pytest.raises(ValueError) as excinfo:
        wrong.read("train")
    message = str(excinfo.value)
    lines = (tmp_path / "train.tsv").read_text().splitlines()
    first = next(n for n, line in enumerate(lines, 1) if "," in line.split("\t")[1])
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'train.tsv'}:{first}: label_column='labels': ")
    assert "--label_delimiter ';' splits no label cell" in message
    assert "give --label_delimiter ','" in message
    # The right delimiter, and single-label cells under any delimiter, read as before.
    assert any(len(e.label) > 1 for e in spec.read("train"))
    (tmp_path / "one.tsv").write_text("text\tlabels\na\tjoy\nb\tvery sad\n")
    one = wrong.read("train", str(tmp_path / "one.tsv"))
    assert [e.label for e in one] == [("joy",), ("very sad",)]
