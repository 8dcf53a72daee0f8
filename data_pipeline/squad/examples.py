"""SQuAD-format JSON files (v1.1, v2.0, CMRC 2018) → their questions (`SquadExample`), each
file refused in one line when it is not SQuAD, holds a question id twice, or (in v1.1 mode)
has unanswerable questions."""

from __future__ import annotations

import dataclasses
import json

from data_pipeline.io import filesystem


@dataclasses.dataclass
class SquadExample:
    """One question. `answers`: [{"text", "answer_start"}] (all gold answers; the first is
    trained on); `is_impossible`: a v2.0 unanswerable question."""

    qas_id: str
    question: str
    context: str
    answers: list
    is_impossible: bool = False
    title: str = ""
    marked_impossible: bool = False  # the file says `is_impossible: true` (v2.0)


def read_squad(path: str) -> list[SquadExample]:
    """Every question of a SQuAD-format JSON file (v1.1, v2.0, CMRC 2018), in file order.
    A missing file is a FileNotFoundError naming it; a file that is not SQuAD JSON, or that
    holds a question id twice, a one-line ValueError naming it."""
    if not filesystem.exists(path):
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    try:
        with filesystem.open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f'{path}: not a SQuAD file (expected {{"data": [articles]}})')
    examples = []
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            where = f"{path}: data[{a}].paragraphs[{p}]"
            if "context" not in paragraph or "qas" not in paragraph:
                raise ValueError(f"{where} lacks 'context' or 'qas'")
            context = paragraph["context"]
            if not isinstance(context, str):
                raise ValueError(f"{where}.context is a {_kind(context)}, not a string")
            for q, qa in enumerate(paragraph["qas"]):
                if not isinstance(qa, dict) or "id" not in qa or "question" not in qa:
                    raise ValueError(f"{where}.qas[{q}] lacks 'id' or 'question'")
                if not isinstance(qa["question"], str):
                    raise ValueError(
                        f"{where}.qas[{q}] (id {qa['id']!r}).question is a "
                        f"{_kind(qa['question'])}, not a string"
                    )
                answers = _answers(qa, f"{where}.qas[{q}] (id {qa['id']!r})")
                impossible = bool(qa.get("is_impossible", False))
                examples.append(
                    SquadExample(
                        str(qa["id"]),
                        qa["question"],
                        context,
                        answers,
                        impossible or not answers,
                        article.get("title", ""),
                        impossible,
                    )
                )
    if not examples:
        raise ValueError(f"{path}: no questions")
    _check_unique_ids(examples, path)
    return examples


def _kind(value) -> str:
    """A JSON value's type as the file would call it."""
    names = {dict: "object", list: "list", int: "number", float: "number", bool: "boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _answers(qa: dict, where: str) -> list[dict]:
    """The question's answers [{"text", "answer_start"}]: ValueError naming `where` for an
    answer that is not an object with a string text and an integer start."""
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise ValueError(f"{where}.answers is a {_kind(answers)}, not a list")
    out = []
    for i, x in enumerate(answers):
        start = x.get("answer_start") if isinstance(x, dict) else None
        text = x.get("text") if isinstance(x, dict) else None
        if isinstance(start, str) and start.strip().isdigit():
            start = int(start)  # ("12": as int() read it before)
        if isinstance(start, float) and start.is_integer():
            start = int(start)
        if not isinstance(text, str) or isinstance(start, bool) or not isinstance(start, int):
            raise ValueError(
                f"{where}.answers[{i}] must be an object with a string 'text' and an "
                f"integer 'answer_start'; got {json.dumps(x)[:80]}"
            )
        out.append({"text": text, "answer_start": start})
    return out


def _check_unique_ids(examples: list[SquadExample], path: str, shown: int = 5) -> None:
    """ValueError naming `path`, the first `shown` ids that appear more than once and how
    many there are: predictions and scores are keyed by question id, so a duplicated one
    would silently replace the other's answer."""
    seen, repeated = set(), {}
    for ex in examples:
        if ex.qas_id in seen:
            repeated[ex.qas_id] = repeated.get(ex.qas_id, 1) + 1
        seen.add(ex.qas_id)
    if repeated:
        first = ", ".join(f"{i!r} ({n} times)" for i, n in list(repeated.items())[:shown])
        more = f" and {len(repeated) - shown} more" if len(repeated) > shown else ""
        raise ValueError(
            f"{path}: {len(repeated)} question id(s) appear more than once: {first}{more}; "
            "answers are keyed by id, give each question its own"
        )


def check_version(
    examples: list[SquadExample], path: str, version_2_with_negative: bool, answers: bool
) -> None:
    """In SQuAD v1.1 mode (`version_2_with_negative` False), ValueError naming `path` and
    the first unanswerable question: one marked `is_impossible`, or, where `answers` are
    needed (training, scoring), one without answers. v1.1 would train such questions as
    "no answer here" targets and never predict "" for them. v1.1 files are fine in v2.0
    mode."""
    if version_2_with_negative:
        return
    for ex in examples:
        if ex.marked_impossible or (answers and not ex.answers):
            why = "is_impossible" if ex.marked_impossible else "has no answers"
            raise ValueError(
                f"{path}: question {ex.qas_id!r} {why} (SQuAD v2.0); "
                "pass --version_2_with_negative to train or evaluate on unanswerable questions"
            )


def read_squad_files(uses, version_2_with_negative: bool) -> dict:
    """{path: its questions} for `uses` = [(path or None, answers needed)], each file read
    once and checked with `check_version` (answers are needed to train and to score; a file
    only predicted may lack them)."""
    questions: dict = {}
    for path, answers in uses:
        if path:
            questions[path] = questions.get(path) or read_squad(path)
            check_version(questions[path], path, version_2_with_negative, answers)
    return questions


def is_v2(path: str) -> bool:
    """Whether a SQuAD file has unanswerable questions (v2.0 format)."""
    with filesystem.open(path) as f:
        data = json.load(f)
    return "2.0" in str(data.get("version", "")) or any(
        "is_impossible" in qa
        for art in data["data"]
        for par in art["paragraphs"]
        for qa in par["qas"]
    )
