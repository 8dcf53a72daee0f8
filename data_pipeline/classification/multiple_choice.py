"""Multiple-choice questions from files: RACE (the ExpMRC layout or one original article
file) and the user's JSON lines. Each error names the file and the article, question or
line."""

from __future__ import annotations

import json
import os

from data_pipeline.classification.examples import MultipleChoiceExample
from data_pipeline.io import filesystem
from data_pipeline.io.text_lines import json_object, numbered_lines


def _answer_index(path, where, answer, options) -> int:
    if isinstance(answer, str) and len(answer) == 1 and "A" <= answer <= "Z":
        index = ord(answer) - ord("A")
    elif isinstance(answer, int) and not isinstance(answer, bool):
        index = answer
    else:
        raise ValueError(f"{path}: {where}: answer {answer!r} is not a letter A.. or an index")
    if not 0 <= index < len(options):
        raise ValueError(f"{path}: {where}: answer {answer!r} but only {len(options)} options")
    return index


def _level(article_id: str, path: str) -> str | None:
    for source in (str(article_id), *reversed(os.path.normpath(path).split(os.sep))):
        for level in ("middle", "high"):
            if source.lower().startswith(level):
                return level
    return None


def read_race(path: str) -> list[MultipleChoiceExample]:
    """RACE questions from `path`: the ExpMRC layout `{"data": [article, ...]}` or one
    original RACE article file. Each article has `article`, `questions`, `options` (a list
    per question) and `answers` ("A".."D") and `id`.

    level: "middle"/"high" from the id ("high1234.txt", original RACE) or a directory
    named middle/high; None otherwise (ExpMRC ids are hex digests and do not say).
    """
    with filesystem.open(path) as f:
        try:
            obj = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    articles = obj["data"] if isinstance(obj, dict) and "data" in obj else [obj]
    if not isinstance(articles, list):
        raise ValueError(f'{path}: "data" is a {type(articles).__name__}; expected a list')
    examples = []
    for a, article in enumerate(articles):
        where = f"article {a}"
        if not isinstance(article, dict):
            raise ValueError(f"{path}: {where}: a {type(article).__name__}; expected an object")
        for key in ("article", "questions", "options", "answers"):
            if key not in article:
                raise ValueError(f"{path}: {where}: missing key {key!r}")
        questions, options, answers = (article["questions"], article["options"], article["answers"])
        if not len(questions) == len(options) == len(answers):
            raise ValueError(
                f"{path}: {where}: {len(questions)} questions, "
                f"{len(options)} option lists, {len(answers)} answers; "
                f"expected equal counts"
            )
        article_id = str(article.get("id", a))
        level = _level(article_id, path)
        for q, (question, opts, answer) in enumerate(zip(questions, options, answers)):
            if not isinstance(opts, list) or len(opts) < 2:
                raise ValueError(
                    f"{path}: {where} question {q}: options {opts!r}; expected a list of at least 2"
                )
            label = _answer_index(path, f"{where} question {q}", answer, opts)
            examples.append(
                MultipleChoiceExample(
                    f"{article_id}-{q}", article["article"], question, tuple(opts), label, level
                )
            )
    if not examples:
        raise ValueError(f"{path}: no questions")
    return examples


def read_multiple_choice_jsonl(path: str) -> list[MultipleChoiceExample]:
    """The user's multiple choice: one JSON object a line with `context` (or `article`),
    `question`, `options` (a list) and optionally `label` (index or letter) and `level`."""
    examples = []
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        obj = json_object(path, number, line)
        context = obj.get("context", obj.get("article"))
        if context is None or "question" not in obj or "options" not in obj:
            raise ValueError(
                f"{path}:{number}: expected keys context (or article), "
                f"question, options; got {sorted(obj)}"
            )
        opts = obj["options"]
        if not isinstance(opts, list) or len(opts) < 2:
            raise ValueError(f"{path}:{number}: options must be a list of at least 2")
        label = None
        if obj.get("label") is not None:
            label = _answer_index(path, f"line {number}", obj["label"], opts)
        examples.append(
            MultipleChoiceExample(
                str(obj.get("id", f"row-{len(examples)}")),
                context,
                obj["question"],
                tuple(opts),
                label,
                obj.get("level"),
            )
        )
    if not examples:
        raise ValueError(f"{path}: no examples (the file is empty)")
    return examples
