"""Hyper-parameter sweeps (`--sweep NAME=v1,v2,...`): the grid of fine-tuning settings, where
each point is kept, which point wins, and the summary table.

Every point of the grid (the product of the swept values; each trained with every seed of
`--num_runs`) is scored on a held-out part of the TRAINING examples, never trained on
(`data_pipeline.classification.held_out`), at each run's best checkpoint (best/: what the
run serves; its evaluation's held-out and dev figures). The winner is the point with the
highest median held-out metric over its seeds; `select` receives those held-out numbers and
nothing else, so the reported dev set cannot take part in the choice. Dev figures are kept
beside them for the table only, as they are reported without a sweep.

Layout under the run's output directory: `sweep/<point>/` (the point's run, or its `run_i`
per seed), `sweep/<point>/point.json` once the point is finished (a resumed sweep reads it
and does not retrain the point), `sweep/sweep_results.json` (the table) and `sweep/best`
(a text file naming the winner's directory; a regular file written by atomic rename, so a
link planted at that name is replaced, never followed). The winner's servable model is its
best/ (`served` in the table): `export --init_checkpoint` takes it, as `--export_dir` does.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Sequence

import numpy as np

from data_pipeline.cli import setting
from data_pipeline.io import filesystem
from data_pipeline.io.atomic import write_json, write_text

HELD_OUT = "held_out"  # the name of the held-out split in a run's evaluation


@dataclasses.dataclass(frozen=True)
class Point:
    """One setting of every swept name: ((name, value), ...) in the order of the --sweep
    flags. Its `name` is also its directory's (values are numbers: no path separators)."""

    settings: tuple[tuple[str, object], ...]

    @property
    def name(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.settings)

    def as_dict(self) -> dict:
        return dict(self.settings)


def parse_sweeps(
    specs: Sequence[str], parsers: dict[str, Callable[[str], object]]
) -> list[tuple[str, tuple]]:
    """[(name, values)] of the `specs` ("NAME=v1,v2,..." each), every value parsed by
    `parsers[NAME]` (the flag's own parser). ValueError naming --sweep: a malformed spec,
    a name not in `parsers`, a name given twice, a value that does not parse, or a value
    given twice."""
    axes, seen = [], set()
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise ValueError(f"--sweep={spec}: expected NAME=v1,v2,...")
        if name not in parsers:
            raise ValueError(
                f"--sweep={spec}: {name} cannot be swept (one of: {', '.join(sorted(parsers))})"
            )
        if name in seen:
            raise ValueError(f"--sweep={spec}: {name} is swept twice")
        seen.add(name)
        parsed = []
        for text in values.split(","):
            try:
                value = parsers[name](text.strip())
            except (ValueError, TypeError) as e:
                raise ValueError(
                    f"--sweep={spec}: {text.strip()!r} is not a {name} ({e})"
                ) from None
            if value in parsed:
                raise ValueError(f"--sweep={spec}: {name}={value} is given twice")
            parsed.append(value)
        axes.append((name, tuple(parsed)))
    return axes


def grid(axes: list[tuple[str, tuple]]) -> list[Point]:
    """Every combination of the axes' values, the first axis varying slowest."""
    names = [name for name, _ in axes]
    return [Point(tuple(zip(names, values))) for values in itertools.product(*(v for _, v in axes))]


def seed_dir(output_dir: str, index: int, count: int) -> str:
    """The directory of seed `index` of `count` (--num_runs) of a run into `output_dir`:
    `output_dir` itself for one seed, `output_dir/run_<index>` for several."""
    return output_dir if count == 1 else filesystem.join(output_dir, f"run_{index}")


def split_evaluation(evaluation: dict) -> tuple[dict, dict]:
    """(held-out metrics, dev metrics) of one run's final evaluation, whose splits are the
    held-out part first (`held_out/<metric>`; its unprefixed copies are dropped) and then
    the dev splits (`<split>/<metric>`, kept prefixed)."""
    prefix = HELD_OUT + "/"
    held = {k[len(prefix) :]: v for k, v in evaluation.items() if k.startswith(prefix)}
    dev = {k: v for k, v in evaluation.items() if "/" in k and not k.startswith(prefix)}
    return held, dev


def select(held_out: dict[str, Sequence[float]]) -> str:
    """The point (by name) whose median held-out metric (higher is better) over its seeds is
    the highest; a tie goes to the first in grid order. It is given held-out figures only:
    the choice cannot depend on the dev set."""
    if not held_out:
        raise ValueError("no sweep points to select from")
    medians = {name: float(np.median(values)) for name, values in held_out.items()}
    return max(medians, key=lambda name: (medians[name], -list(medians).index(name)))


def _spread(values: Sequence[float]) -> dict:
    v = np.asarray(values, dtype=np.float64)
    return {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())}


class SweepDirectory:
    """OUTPUT_DIR/sweep: each point's directory, its finished record, the table, `best`."""

    def __init__(self, output_dir: str):
        self.root = filesystem.join(output_dir, "sweep")

    def point_dir(self, point: Point) -> str:
        return filesystem.join(self.root, point.name)

    def finished(self, point: Point, seeds: Sequence[int], settings: dict | None = None):
        """The record of `point` when it was finished with these `seeds`, else None (then
        it runs: its seeds resume from their own checkpoints). ValueError (one line) when
        it was finished with other `settings` (the run's other flags): its figures would
        not be comparable with the new points'."""
        path = filesystem.join(self.point_dir(point), "point.json")
        if not filesystem.exists(path):
            return None
        record = json.loads(filesystem.read_text(path))
        if record.get("point") != point.name or record.get("seeds") != list(seeds):
            return None
        before = record.get("run_settings") or {}
        changed = sorted(
            k for k in set(before) | set(settings or {}) if before.get(k) != (settings or {}).get(k)
        )
        if settings is not None and changed:
            raise ValueError(
                f"{path}: this point was trained with other settings ({', '.join(changed[:5])} "
                "differ): give another --output_dir, or the same flags"
            )
        return record

    def record(
        self, point: Point, seeds: Sequence[int], evaluations: list[dict], settings=None
    ) -> dict:
        """Writes (atomically) and returns the finished record of `point`: its settings,
        seeds, the run's other `settings`, and per seed the held-out and dev metrics of the
        final evaluation."""
        held, dev = zip(*(split_evaluation(e) for e in evaluations))
        record = {
            "point": point.name,
            "settings": point.as_dict(),
            "seeds": list(seeds),
            "run_settings": settings,
            "held_out": list(held),
            "dev": list(dev),
        }
        write_json(filesystem.join(self.point_dir(point), "point.json"), record)
        return record

    def run(
        self,
        points: Sequence[Point],
        seeds: Sequence[int],
        run_point: Callable[[Point, str], list[dict]],
        metric: str,
        log: Callable[[str], None] = print,
        settings: dict | None = None,
    ) -> dict:
        """Every point not finished before: `run_point(point, its directory)` → one final
        evaluation per seed (held-out split first, then dev), recorded; a finished point
        (its point.json, same seeds and `settings`: the JSON of the run's flags other than
        the swept ones) is read, not retrained. Then `conclude`; returns the table."""
        records = []
        for i, point in enumerate(points):
            record = self.finished(point, seeds, settings)
            where = f"sweep point {i + 1}/{len(points)} {point.name}"
            if record is not None:
                log(f"{where}: finished before, not retrained")
            else:
                log(where)
                evaluations = run_point(point, self.point_dir(point))
                record = self.record(point, seeds, evaluations, settings)
            records.append(record)
        table, lines = self.conclude(records, metric)
        log("\n".join(lines))
        return table

    def conclude(self, records: list[dict], metric: str) -> tuple[dict, list[str]]:
        """Selects the winner from the records' held-out `metric` alone, then writes
        sweep_results.json (every point's held-out and dev spread, the winner marked, and
        `served`: the winner's servable best/, of its seed with the best held-out figure)
        and `best` (the winner's directory name); returns (the table, its printed lines)."""
        winner = select({r["point"]: [h[metric] for h in r["held_out"]] for r in records})
        won = next(r for r in records if r["point"] == winner)
        figures = [h[metric] for h in won["held_out"]]
        seed = figures.index(max(figures))
        point_dir = filesystem.join(self.root, winner)
        served = filesystem.join(seed_dir(point_dir, seed, len(figures)), "best")
        rows = []
        for r in records:
            dev_metrics = sorted({k for d in r["dev"] for k in d})
            rows.append(
                {
                    "point": r["point"],
                    "settings": r["settings"],
                    "directory": r["point"],
                    "winner": r["point"] == winner,
                    "held_out": _spread([h[metric] for h in r["held_out"]]),
                    "dev": {k: _spread([d[k] for d in r["dev"]]) for k in dev_metrics},
                }
            )
        table = {"metric": metric, "selected_on": HELD_OUT, "winner": winner, "points": rows}
        table["served"] = served
        write_json(filesystem.join(self.root, "sweep_results.json"), table)
        write_text(filesystem.join(self.root, "best"), winner + "\n")
        return table, table_lines(table)


def table_lines(table: dict) -> list[str]:
    """The summary table as text: one line per point (held-out median [min, max], the dev
    medians), the winner starred."""
    metric = table["metric"]
    lines = [
        f"sweep: selected on held-out {metric} at each run's best checkpoint (median over "
        "seeds); dev reported only"
    ]
    for row in table["points"]:
        h = row["held_out"]
        dev = ", ".join(f"{k} {v['median']:.4f}" for k, v in row["dev"].items())
        mark = "*" if row["winner"] else " "
        lines.append(
            f"{mark} {row['point']}: held-out {h['median']:.4f} [{h['min']:.4f}, "
            f"{h['max']:.4f}]; dev {dev}"
        )
    lines.append(f"winner: {table['winner']} (sweep/best); its best checkpoint: {table['served']}")
    return lines


@dataclasses.dataclass(frozen=True)
class RunsSettings:
    """Repeated runs over seeds."""

    num_runs: int = setting(
        1,
        "Fine-tune with seeds seed, seed+1, ... (OUTPUT_DIR/run_i); eval_results.json "
        "reports median, min, max and std.",
        minimum=1,
    )


@dataclasses.dataclass(frozen=True)
class SweepSettings:
    """The grid of a sweep (albert_tf.training.sweep; albert_tf.runners.sweep)."""

    sweep: tuple[str, ...] = setting(
        (),
        "NAME=v1,v2,...: train every combination of the values (× the seeds of --num_runs) "
        "in OUTPUT_DIR/sweep/<point>, NAME a sweepable setting (learning_rate, "
        "train_batch_size, num_train_epochs, train_step, warmup_proportion, "
        "weight_decay_rate, layer_lr_decay, classifier_dropout, lora_rank); the winner is "
        "the best median metric on --held_out_fraction of the training examples (held out "
        "of training), never the dev set (reported beside it): sweep/sweep_results.json, "
        "sweep/best.",
        repeatable=True,
    )
