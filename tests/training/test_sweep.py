"""albert_tf.training.sweep without a model: the grid from --sweep specs (each value through
the flag's parser, every error one line naming --sweep), selection on the held-out figures
alone (adversarial dev figures change nothing), the table and `best`, and a resumed sweep
that does not retrain its finished points."""

import json
import os

import numpy as np
import pytest

from albert_tf.training import sweep
from albert_tf.training.sweep import Point, SweepDirectory, grid, parse_sweeps, select

PARSERS = {"learning_rate": float, "train_batch_size": int}


def test_grid_is_the_product_of_the_parsed_values_first_axis_slowest():
    axes = parse_sweeps(["learning_rate=1e-5, 3e-5", "train_batch_size=16,32"], PARSERS)
    assert axes == [("learning_rate", (1e-5, 3e-5)), ("train_batch_size", (16, 32))]
    points = grid(axes)
    assert [p.as_dict() for p in points] == [
        {"learning_rate": 1e-5, "train_batch_size": 16},
        {"learning_rate": 1e-5, "train_batch_size": 32},
        {"learning_rate": 3e-5, "train_batch_size": 16},
        {"learning_rate": 3e-5, "train_batch_size": 32},
    ]
    assert points[1].name == "learning_rate=1e-05,train_batch_size=32"
    assert all(os.sep not in p.name for p in points)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("learning_rate", "--sweep=learning_rate: expected NAME=v1,v2,..."),
        ("learning_rate=", "--sweep=learning_rate=: expected NAME=v1,v2,..."),
        ("seed=1,2", "--sweep=seed=1,2: seed cannot be swept (one of: learning_rate, "),
        ("train_batch_size=16,3.5", "--sweep=train_batch_size=16,3.5: '3.5' is not a "),
        ("learning_rate=1e-5,0.00001", "learning_rate=1e-05 is given twice"),
    ],
)
def test_bad_specs_are_one_line_naming_sweep(spec, message):
    with pytest.raises(ValueError) as e:
        parse_sweeps([spec], PARSERS)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_name_swept_twice_is_refused():
    with pytest.raises(ValueError, match="learning_rate is swept twice"):
        parse_sweeps(["learning_rate=1", "learning_rate=2"], PARSERS)


def test_select_takes_the_best_median_over_seeds_and_the_first_on_a_tie():
    # b's best seed is the highest of all, but its median is not: the median decides.
    held = {"a": [0.70, 0.72, 0.71], "b": [0.60, 0.90, 0.65], "c": [0.72, 0.69, 0.71]}
    assert select(held) == "a"  # a and c tie at 0.71: grid order
    assert select({"x": [0.5], "y": [0.6]}) == "y"
    with pytest.raises(ValueError):
        select({})


def _evaluation(held_out: float, dev: float) -> dict:
    """A run's final evaluation as the runner's evaluate gives it (held-out split first,
    its figures also unprefixed)."""
    return {
        "held_out/accuracy": held_out,
        "dev/accuracy": dev,
        "accuracy": held_out,
    }


# Held-out figures per point and seed; dev figures chosen to point the other way.
HELD = {0.001: [0.80, 0.82], 0.01: [0.60, 0.61], 0.1: [0.70, 0.75]}
DEV = {0.001: [0.50, 0.52], 0.01: [0.95, 0.96], 0.1: [0.70, 0.71]}


def _points():
    return grid(parse_sweeps(["learning_rate=0.001,0.01,0.1"], PARSERS))


def _runner(dev, calls):
    def run_point(point, directory):
        os.makedirs(directory, exist_ok=True)
        calls.append(point.name)
        lr = point.as_dict()["learning_rate"]
        return [_evaluation(h, d) for h, d in zip(HELD[lr], dev[lr])]

    return run_point


def test_the_winner_follows_held_out_and_adversarial_dev_figures_change_nothing(tmp_path):
    tables = []
    for name, dev in (("real", DEV), ("flipped", {k: [1 - v for v in d] for k, d in DEV.items()})):
        calls, lines = [], []
        table = SweepDirectory(str(tmp_path / name)).run(
            _points(), [1, 2], _runner(dev, calls), "accuracy", log=lines.append
        )
        tables.append(table)
        assert calls == [p.name for p in _points()]
        assert table["winner"] == "learning_rate=0.001"  # dev alone would pick 0.01 (real)
        root = tmp_path / name / "sweep"
        assert (root / "best").read_text() == "learning_rate=0.001\n"
        assert json.loads((root / "sweep_results.json").read_text()) == table
        assert "\n* learning_rate=0.001: held-out 0.8100 [0.8000, 0.8200]; dev" in lines[-1]
    real, flipped = tables
    assert [r["held_out"] for r in real["points"]] == [r["held_out"] for r in flipped["points"]]
    for a, b in zip(real["points"], flipped["points"]):  # dev is read, for the table only
        np.testing.assert_allclose(
            a["dev"]["dev/accuracy"]["median"], 1 - b["dev"]["dev/accuracy"]["median"]
        )
    row = real["points"][0]
    assert row["held_out"] == {"median": pytest.approx(0.81), "min": 0.80, "max": 0.82}
    assert row["winner"] and not any(r["winner"] for r in real["points"][1:])


def test_selection_is_given_held_out_figures_only(tmp_path, monkeypatch):
    seen = []

    def spy(held_out):
        seen.append(held_out)
        return next(iter(held_out))

    monkeypatch.setattr(sweep, "select", spy)
    SweepDirectory(str(tmp_path)).run(_points(), [1, 2], _runner(DEV, []), "accuracy", log=print)
    assert seen == [{p.name: HELD[p.as_dict()["learning_rate"]] for p in _points()}]


def test_a_resumed_sweep_does_not_retrain_its_finished_points(tmp_path):
    points = _points()
    directory = SweepDirectory(str(tmp_path))

    def killed_at_second(point, path):
        if point == points[1]:
            raise KeyboardInterrupt  # the sweep dies during its second point
        return _runner(DEV, [])(point, path)

    with pytest.raises(KeyboardInterrupt):
        directory.run(points, [1, 2], killed_at_second, "accuracy", log=print)
    assert (tmp_path / "sweep" / points[0].name / "point.json").exists()
    assert not (tmp_path / "sweep" / "sweep_results.json").exists()
    calls, lines = [], []
    table = directory.run(points, [1, 2], _runner(DEV, calls), "accuracy", log=lines.append)
    assert calls == [points[1].name, points[2].name]
    assert f"sweep point 1/3 {points[0].name}: finished before, not retrained" in lines
    assert table["winner"] == points[0].name
    # Other seeds are another sweep: the point runs again (its runs resume on their own).
    calls.clear()
    directory.run(points[:1], [1, 2, 3], _runner({0.001: [0.5] * 3}, calls), "accuracy", print)
    assert calls == [points[0].name]


def test_best_replaces_a_planted_link_and_never_writes_through_it(tmp_path):
    target = tmp_path / "outside.txt"
    target.write_text("untouched")
    root = tmp_path / "run" / "sweep"
    root.mkdir(parents=True)
    os.symlink(target, root / "best")
    SweepDirectory(str(tmp_path / "run")).run(
        [Point((("learning_rate", 0.001),))], [1], _runner(DEV, []), "accuracy", log=print
    )
    assert not os.path.islink(root / "best")
    assert (root / "best").read_text() == "learning_rate=0.001\n"
    assert target.read_text() == "untouched"


def test_a_finished_point_is_reused_only_under_the_same_other_settings(tmp_path):
    directory, points = SweepDirectory(str(tmp_path)), _points()[:1]
    run = _runner(DEV, [])
    directory.run(points, [1, 2], run, "accuracy", log=print, settings={"train_step": 10})
    calls = []
    directory.run(points, [1, 2], _runner(DEV, calls), "accuracy", print, {"train_step": 10})
    assert calls == []
    with pytest.raises(ValueError) as e:
        directory.run(points, [1, 2], run, "accuracy", log=print, settings={"train_step": 20})
    assert "point.json: this point was trained with other settings (train_step differ)" in str(
        e.value
    )
