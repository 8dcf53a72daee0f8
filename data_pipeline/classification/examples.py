"""The examples the classification readers produce and the feature writer packs: a text or a
text pair with its label (`Example`), a multiple-choice question (`MultipleChoiceExample`),
and how an option becomes the second sequence (`choice_text`)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Example:
    """One classification/regression example.

    guid: "<split>-<n>": n is the file's index/id column where there is one (GLUE test
      predictions are submitted by it), else the 0-based row number.
    text_a, text_b: the texts (text_b None for single-sentence tasks).
    label: a label name (str), a float score (regression), a tuple of names (multi-label),
      or None (test files).
    line: the line of the file where the example starts (for error messages; None: not
      read from a file). Not part of the example's value (equality ignores it).
    """

    guid: str
    text_a: str
    text_b: str | None
    label: str | float | None
    line: int | None = dataclasses.field(default=None, compare=False)


def choice_text(question: str, option: str) -> str:
    """The second sequence of one option (official RACE code): the question with its "_"
    blank filled by the option, else the question and the option joined by a space."""
    return question.replace("_", option) if "_" in question else f"{question} {option}"


@dataclasses.dataclass(frozen=True)
class MultipleChoiceExample:
    """One multiple-choice question (RACE): `[CLS] context [SEP] question + option [SEP]`
    per option, one logit each.

    options: the choices as the data gives them (RACE has questions with 2 or 3 options;
      the feature writer pads to a fixed count). label: index into options, or None.
    level: "middle" / "high" where the data says (RACE ids or directories), else None.
    """

    guid: str
    context: str
    question: str
    options: tuple[str, ...]
    label: int | None
    level: str | None = None
