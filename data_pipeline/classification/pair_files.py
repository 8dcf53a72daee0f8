"""Sentence pairs for training and evaluating sentence embeddings: scored pairs (STS-B style,
for cosine regression and the Spearman evaluation) and positive pairs (paraphrases, for
in-batch negatives), from a benchmark file in its original layout or the user's own file.

Formats (`PAIR_FORMATS`):
  sts-b, mrpc, afqmc  the benchmark layouts of `benchmark_files` (headers and columns
                      checked there): STS-B's score column, MRPC's `Quality` and AFQMC's
                      third column as the label;
  tsv, csv, jsonl     the user's file (`user_files`): a header row (or JSON keys) names the
                      two text columns and the score or label column;
  auto                jsonl for `.jsonl`, csv for `.csv`, else tsv (STS-B's own files read
                      as tsv: their header has `sentence1`, `sentence2` and `score`).

Every pair is checked row by row and each error names `file:line`: a missing or empty text,
a score that is not a number or lies outside [0, max_score], a label column that does not
exist; a file with no pair (or no positive one) is an error too.
"""

from __future__ import annotations

import dataclasses
import math

from data_pipeline.classification.benchmark_files import read_task_file
from data_pipeline.classification.user_files import read_delimited, read_jsonl

BENCHMARKS = ("sts-b", "mrpc", "afqmc")
PAIR_FORMATS = ("auto", "tsv", "csv", "jsonl", *BENCHMARKS)


@dataclasses.dataclass(frozen=True)
class TextPairs:
    """N sentence pairs read from `path`: texts_a, texts_b (str), scores (float: the gold
    score of a scored pair; `max_score` for a positive pair; None: pairs to predict from a
    file without scores), lines (where each starts)."""

    path: str
    texts_a: list[str]
    texts_b: list[str]
    scores: list[float] | None
    lines: list[int]

    def __len__(self) -> int:
        return len(self.texts_a)

    def take(self, n: int | None) -> TextPairs:
        """The first n pairs (all of them for None)."""
        cut = slice(None, n)
        scores = None if self.scores is None else self.scores[cut]
        return TextPairs(self.path, self.texts_a[cut], self.texts_b[cut], scores, self.lines[cut])


def resolve_format(path: str, file_format: str) -> str:
    """`file_format`, or for "auto" the format of `path`'s extension (module docstring)."""
    if file_format not in PAIR_FORMATS:
        raise ValueError(f"format {file_format!r} is not one of {', '.join(PAIR_FORMATS)}")
    if file_format != "auto":
        return file_format
    lower = path.lower()
    return "jsonl" if lower.endswith(".jsonl") else "csv" if lower.endswith(".csv") else "tsv"


def _examples(path, file_format, text_a, text_b, value_column, split):
    """(examples, format): the rows of `path`, the label (as a string) from `value_column`
    for the user's formats, the benchmark's own label or score for the others."""
    fmt = resolve_format(path, file_format)
    if fmt in BENCHMARKS:
        return read_task_file(path, fmt, split), fmt
    if fmt == "jsonl":
        return read_jsonl(path, text_a, text_b, value_column), fmt
    delimiter = "\t" if fmt == "tsv" else ","
    return read_delimited(path, text_a, text_b, value_column, delimiter=delimiter), fmt


def _check_texts(path, example) -> None:
    for which, text in (("first", example.text_a), ("second", example.text_b)):
        if text is None or not str(text).strip():
            raise ValueError(f"{path}:{example.line}: the pair's {which} text is missing or empty")


def scored_pairs(
    path: str,
    file_format: str = "auto",
    text_a_column: str = "sentence1",
    text_b_column: str = "sentence2",
    score_column: str = "score",
    max_score: float = 5.0,
    split: str = "train",
) -> TextPairs:
    """Pairs with a gold similarity score in [0, max_score] (STS-B: 0-5). The benchmark
    formats other than sts-b have labels, not scores, and are refused. `split` ("train" or
    "dev") picks the benchmark layout (STS-B's two are the same)."""
    if resolve_format(path, file_format) in ("mrpc", "afqmc"):
        raise ValueError(
            f"{path}: {file_format} files have labels, not similarity scores; the cosine "
            "objective and the evaluation need scored pairs (sts-b, or a score column)"
        )
    examples, _ = _examples(path, file_format, text_a_column, text_b_column, score_column, split)
    scores = []
    for e in examples:
        _check_texts(path, e)
        try:
            score = float(e.label)
        except (TypeError, ValueError):
            raise ValueError(
                f"{path}:{e.line}: score {e.label!r} (column {score_column!r}) is not a number"
            ) from None
        if not (math.isfinite(score) and 0.0 <= score <= max_score):
            raise ValueError(f"{path}:{e.line}: score {score} is outside [0, {max_score}]")
        scores.append(score)
    return TextPairs(
        path,
        [e.text_a for e in examples],
        [e.text_b for e in examples],
        scores,
        [e.line for e in examples],
    )


def positive_pairs(
    path: str,
    file_format: str = "auto",
    text_a_column: str = "sentence1",
    text_b_column: str = "sentence2",
    label_column: str | None = None,
    positive_label: str = "1",
    max_score: float = 5.0,
) -> TextPairs:
    """The pairs whose label is `positive_label` (mrpc, afqmc: "1"; the user's files: the
    value of `label_column`; without one, every row is a positive pair), each scored
    `max_score`. No positive pair is an error naming the label."""
    if resolve_format(path, file_format) == "sts-b":
        raise ValueError(
            f"{path}: sts-b pairs have scores, not paraphrase labels; for the contrastive "
            "objective give positive pairs (mrpc, afqmc, or a file of pairs)"
        )
    examples, fmt = _examples(
        path, file_format, text_a_column, text_b_column, label_column, "train"
    )
    filtered = fmt in BENCHMARKS or label_column is not None
    kept = []
    for e in examples:
        if filtered and str(e.label).strip() != positive_label:
            continue
        _check_texts(path, e)
        kept.append(e)
    if not kept:
        column = "the label" if fmt in BENCHMARKS else f"column {label_column!r}"
        raise ValueError(f"{path}: no positive pairs ({column} is never {positive_label!r})")
    return TextPairs(
        path,
        [e.text_a for e in kept],
        [e.text_b for e in kept],
        [max_score] * len(kept),
        [e.line for e in kept],
    )


def prediction_pairs(
    path: str,
    file_format: str = "auto",
    text_a_column: str = "sentence1",
    text_b_column: str = "sentence2",
    score_column: str = "score",
    max_score: float = 5.0,
) -> TextPairs:
    """Pairs to predict a similarity for: scored as `scored_pairs` reads them when the
    file has `score_column` (sts-b: read as tsv by its header, so STS-B's test.tsv, which
    has no score, is taken too), else unscored (scores None). Labelled benchmark formats
    (mrpc, afqmc) have no scores and are refused."""
    fmt = resolve_format(path, file_format)
    if fmt in ("mrpc", "afqmc"):
        raise ValueError(
            f"{path}: {fmt} files have labels, not similarity scores; give tsv/csv/jsonl"
        )
    fmt = "tsv" if fmt == "sts-b" else fmt
    if _has_column(path, fmt, score_column):
        return scored_pairs(path, fmt, text_a_column, text_b_column, score_column, max_score)
    examples, _ = _examples(path, fmt, text_a_column, text_b_column, None, "test")
    for e in examples:
        _check_texts(path, e)
    texts_a, texts_b = [e.text_a for e in examples], [e.text_b for e in examples]
    return TextPairs(path, texts_a, texts_b, None, [e.line for e in examples])


def _has_column(path: str, fmt: str, column: str) -> bool:
    """Whether `column` is in the header (tsv, csv) or the first object (jsonl) of `path`;
    a file whose first row does not read says nothing here (its reader names the error)."""
    import csv
    import json

    from data_pipeline.io.text_lines import numbered_lines

    for _, line in numbered_lines(path):
        if not line.strip():
            continue
        if fmt == "jsonl":
            try:
                first = json.loads(line)
            except ValueError:
                return False
            return isinstance(first, dict) and column in first
        header = line.split("\t") if fmt == "tsv" else next(csv.reader([line]), [])
        return column in [h.strip() for h in header]
    return False
