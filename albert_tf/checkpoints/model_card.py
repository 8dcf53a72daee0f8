"""The model card: `README.md` in the Hugging Face model-card format, written beside every
model this project writes — a fine-tuned run's output directory, a SavedModel export (and
its LiteRT and ONNX directories), an encoder export, a `convert --to transformers |
keras_hub | model_garden` directory.

    ---                                  YAML front matter (Hugging Face's card metadata)
    language, license                    only when the writer knows them
    tags, pipeline_tag, datasets, metrics
    model-index: [{name, results: [{task, dataset, metrics: [{type, name, value}]}]}]
    ---
    # name
    what the directory is; Task (kind, labels, sequence length, casing); Model (config);
    Training (the run's settings); Data and tokenizer (fingerprints); Evaluation (the
    figures); How it was made (the commands)

Nothing here is new information: the card is generated from the records the project already
writes, read through their owners — task.json (`TaskInfo`), run_config.json and
eval_results.json (`RunRecord`), the tokenizer record (`tokenizer_record.recorded_in`:
task.json's vocabulary, tokenizer.json, or the run's identity). `gather` looks for each in
the directories a writer names, first found first; a record found nowhere leaves its
section out. The figures are the evaluation of the model the directory holds where the
report has it (the best checkpoint's, which a run restores before it exports), else its
final evaluation, else every number of the report.

The front matter is written as YAML block mappings whose scalars are JSON (a JSON string,
number, true/false/null is a YAML scalar of the same value), so no YAML library is needed
to write it. Uploading is one `huggingface_hub` call (docs/design/checkpoints.md, "Model cards").
"""

from __future__ import annotations

import dataclasses
import json
import os

from albert_tf.checkpoints.run_record import RunRecord
from albert_tf.checkpoints.task_info import TASK_FILE, TaskInfo
from albert_tf.checkpoints.tokenizer_record import recorded_in
from data_pipeline.io import filesystem

CARD_FILE = "README.md"
# Report keys that are bookkeeping, not figures (a run's step and seed, a seeds report's
# count).
_NOT_FIGURES = {"seed", "seeds", "step", "runs", "global_step"}


@dataclasses.dataclass(frozen=True)
class CardRecords:
    """What the card is made of; None: not found. tokenizer: {"kind", "sha256", ...} and
    where it was recorded."""

    task: TaskInfo | None = None
    run: RunRecord | None = None
    results: dict | None = None
    tokenizer: dict | None = None
    tokenizer_source: str | None = None


def near(path: str) -> tuple[str, ...]:
    """The directories whose records describe the model at `path` (a directory or a
    checkpoint prefix): its own directory and the parent (a run's output directory
    above best/ and checkpoints/), as `RunRecord.near` looks."""
    path = os.fspath(path)
    here = path if filesystem.isdir(path) else os.path.dirname(path)
    if not filesystem.is_url(here):
        here = os.path.abspath(here)
    return tuple(dict.fromkeys((here, os.path.dirname(here))))


def gather(*directories: str, known: CardRecords | None = None) -> CardRecords:
    """The records of the first of `directories` that holds each (missing directories are
    skipped); those `known` already holds (a writer that has read them) are not read
    again."""
    names = [f.name for f in dataclasses.fields(CardRecords)]
    found = {k: getattr(known, k) for k in names if getattr(known, k, None) is not None}
    for directory in directories:
        if not directory or not filesystem.isdir(directory):
            continue
        if "task" not in found and filesystem.isfile(os.path.join(directory, TASK_FILE)):
            found["task"] = TaskInfo.read(directory)
        if "run" not in found:
            run = RunRecord.read(directory)
            if run is not None:
                found["run"] = run
        if "results" not in found:
            results = RunRecord.read_results(directory)
            if results is not None:
                found["results"] = results
        if "tokenizer" not in found:
            tokenizer = recorded_in(directory)
            if tokenizer is not None:
                found["tokenizer_source"], found["tokenizer"] = tokenizer
    return CardRecords(**found)


def figures(results: dict | None) -> tuple[dict[str, float], str]:
    """({metric: value}, which evaluation) of an evaluation report: the best checkpoint's
    evaluation, else the final one, else every number in the report (nested keys joined
    by "/"); ({}, "") without a report."""
    if not results:
        return {}, ""
    best = results.get("best")
    if isinstance(best, dict) and isinstance(best.get("eval"), dict):
        return _numbers(best["eval"]), f"best checkpoint (step {best.get('step')})"
    if isinstance(results.get("final"), dict):
        return _numbers(results["final"]), f"final evaluation (step {results.get('step')})"
    return _numbers(results), "evaluation report"


def _numbers(report: dict, prefix: str = "") -> dict[str, float]:
    out = {}
    for key, value in report.items():
        if key in _NOT_FIGURES:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_numbers(value, name + "/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
    return out


def model_card(
    records: CardRecords,
    name: str,
    what: str,
    commands: tuple[str, ...] = (),
    language: str | None = None,
    license: str | None = None,
    own_figures: bool = True,
) -> str:
    """The card's text for the model `name` (`what`: one line saying what the directory
    holds); `commands`: the commands that made it besides the run's own (an export, a
    conversion). `own_figures` False: the report's figures are another model's (an
    encoder taken from a fine-tuned model): shown as such, not in the model-index."""
    task, run = records.task, records.run
    kind = task.task_kind if task is not None else None
    dataset = _dataset(records)
    scores, which = figures(records.results)
    metadata = {}
    if language:
        metadata["language"] = language
    if license:
        metadata["license"] = license
    metadata["library_name"] = "albert_tf"
    tags = ["albert", "tensorflow", "keras", *([kind.name] if kind else [])]
    metadata["tags"] = tags
    if kind is not None and kind.pipeline_tag:
        metadata["pipeline_tag"] = kind.pipeline_tag
    if dataset:
        metadata["datasets"] = [dataset]
    if scores and own_figures:
        metadata["metrics"] = list(scores)
        metadata["model-index"] = [_model_index(name, kind, dataset, scores)]
    lines = ["---", *_yaml(metadata), "---", "", f"# {name}", "", what, ""]
    lines += _task_section(task)
    lines += _model_section(run)
    lines += _training_section(run)
    lines += _data_section(records)
    if scores:
        title = "Evaluation" if own_figures else "Evaluation of the model it was taken from"
        lines += [f"## {title}", "", f"On {dataset or 'the evaluation set'}, {which}:", ""]
        lines += ["| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in scores.items()] + [""]
    made = [c for c in ((run.details.get("command"),) if run else ()) + tuple(commands) if c]
    if made:
        lines += ["## How it was made", "", "```bash", *made, "```", ""]
    return "\n".join(lines)


def write_model_card(directory: str, sources=(), name=None, what="", known=None, **card) -> str:
    """Writes `directory`/README.md (atomically) from the records `gather` finds in
    `directory` and then `sources` (`known`: those the writer holds already); `card`:
    `model_card`'s commands, language, license, own_figures. Returns its path."""
    from data_pipeline.io.atomic import write_text

    records = gather(directory, *sources, known=known)
    name = name or os.path.basename(os.path.normpath(directory))
    path = os.path.join(directory, CARD_FILE)
    write_text(path, model_card(records, name, what, **card))
    return path


def write_converted_card(output_dir: str, input_path: str, written: str, command=None) -> str:
    """The README.md of a `convert --to` directory (`written`: what it holds), from the
    records beside `input_path` only (a run's best/, a fine-tuned or encoder directory):
    the directory's own files are the target's (a KerasHub preset's task.json is
    KerasHub's)."""
    from data_pipeline.io.atomic import write_text

    name = os.path.basename(os.path.normpath(output_dir))
    what = f"{written}, converted from {input_path}."
    text = model_card(gather(*near(input_path)), name, what, (command,) if command else ())
    path = os.path.join(output_dir, CARD_FILE)
    write_text(path, text)
    return path


def _dataset(records: CardRecords) -> str | None:
    details = records.task.details if records.task is not None else None
    named = getattr(details, "task_name", None)
    if named:
        return named
    return records.run.identity.task if records.run is not None else None


def _model_index(name, kind, dataset, scores) -> dict:
    task = {"type": kind.pipeline_tag} if kind is not None and kind.pipeline_tag else {}
    result = {"task": task or {"type": "other"}}
    if dataset:
        result["dataset"] = {"name": dataset, "type": dataset}
    result["metrics"] = [{"type": k, "name": k, "value": v} for k, v in scores.items()]
    return {"name": name, "results": [result]}


def _task_section(task: TaskInfo | None) -> list[str]:
    if task is None:
        return []
    rows = [("kind", task.kind), ("max_seq_length", task.max_seq_length)]
    rows += [("do_lower_case", task.do_lower_case), ("step", task.step)]
    rows += [(k, v) for k, v in dataclasses.asdict(task.details).items() if v not in (None, ())]
    return ["## Task", "", *_table(rows), ""]


def _model_section(run: RunRecord | None) -> list[str]:
    config = run.albert_config if run is not None else None
    if not config:
        return []
    return ["## Model", "", "ALBERT, `albert_config.json`:", "", *_table(config.items()), ""]


def _training_section(run: RunRecord | None) -> list[str]:
    if run is None or not run.settings:
        return []
    rows = [(k, v) for k, v in run.settings.items() if v is not None]
    resumed = f" (resumed {len(run.segments) - 1} time(s))" if len(run.segments) > 1 else ""
    head = f"`{run.identity.runner}`, the newest segment's settings{resumed}:"
    return ["## Training", "", head, "", *_table(rows), ""]


def _data_section(records: CardRecords) -> list[str]:
    rows = []
    if records.run is not None:
        rows += [(k, v) for k, v in (records.run.identity.data or {}).items()]
        rows += [("labels", records.run.identity.labels)] if records.run.identity.labels else []
    if records.tokenizer is not None:
        rows += [("tokenizer", records.tokenizer.get("kind", "sentencepiece"))]
        rows += [("tokenizer sha256", records.tokenizer.get("sha256"))]
    return ["## Data and tokenizer", "", *_table(rows), ""] if rows else []


def _table(rows) -> list[str]:
    return ["| | |", "|---|---|"] + [f"| {k} | {_cell(v)} |" for k, v in rows]


def _cell(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|")


def _yaml(value, indent: str = "") -> list[str]:
    """Block-style YAML of dicts and lists whose leaves are JSON scalars."""
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines += [f"{indent}{key}:", *_yaml(item, indent + "  ")]
            else:
                lines.append(f"{indent}{key}: {json.dumps(item, ensure_ascii=False)}")
        return lines
    for item in value:
        if isinstance(item, (dict, list)) and item:
            first, *rest = _yaml(item, indent + "  ")
            lines += [f"{indent}- {first.lstrip()}", *rest]
        else:
            lines.append(f"{indent}- {json.dumps(item, ensure_ascii=False)}")
    return lines
