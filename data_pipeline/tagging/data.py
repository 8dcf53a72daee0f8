"""Token-classification (NER) files → tagged sentences, and the label list.

Formats (`read_tagged` picks by the file name: `.jsonl` / `.json` is JSON lines, anything
else column text):

  CoNLL columns   one token a line (LF, CRLF or CR line ends alike), its tag in the *last*
                  column, the token in the first
                  (columns between, such as CoNLL-2003's POS and chunk tags, are ignored);
                  columns are separated by spaces or tabs only, so a token may be any other
                  character (a Chinese full-width space U+3000 stays a token); a blank line
                  ends a sentence; `-DOCSTART-` lines (and the blank line after them) are
                  skipped, so a document marker never becomes an empty sentence.
                  Chinese one-character-a-line files (resume_zh, MSRA, Weibo) are the same
                  layout with one character per line.
  JSON lines      one object a line with `tokens` and `tags`, two lists of equal length.

Any tag scheme is read (IO, BIO, BIOES, BMES, BILOU): tags are opaque strings here; the
scheme only matters to the entity metrics (`metrics.py`). The label list is discovered
from the training file (`discover_labels`: "O" first, the others sorted, so the same file
always gives the same ids) and a tag outside it in a dev or test file is an error
(`check_labels`), rather than a silently unscorable prediction target.

Every malformed line raises `TaggingDataError` (a ValueError), one line naming
`file:line`.
"""

from __future__ import annotations

import dataclasses
import re

from data_pipeline.io import filesystem
from data_pipeline.io.text_lines import json_object, numbered_lines

DOCSTART = "-DOCSTART-"
OUTSIDE = "O"
_COLUMNS = re.compile(r"[ \t]+")


class TaggingDataError(ValueError):
    """Bad token-classification input; the message is one line naming file:line."""


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its words (tokens as the file gives them) and one tag per word.

    line: the file line where the sentence starts (for error messages; not part of the
    value)."""

    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    line: int | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self):
        if len(self.tokens) != len(self.tags):
            raise TaggingDataError(
                f"line {self.line}: {len(self.tokens)} tokens but {len(self.tags)} tags"
            )


def _lines(path: str):
    """(line number, text) of each line: BOM and line end removed; bad UTF-8 → file:line
    (data_pipeline.io.text_lines, as a TaggingDataError)."""
    if not filesystem.exists(path):
        raise FileNotFoundError(f"tagging file not found: {path}")
    try:
        yield from numbered_lines(path)
    except ValueError as e:
        raise TaggingDataError(str(e)) from None


def read_conll(path: str) -> list[TaggedSentence]:
    """Sentences of a CoNLL-style column file (module docstring), in file order."""
    sentences, tokens, tags, start = [], [], [], None

    def flush():
        if tokens:
            sentences.append(TaggedSentence(tuple(tokens), tuple(tags), start))
            tokens.clear()
            tags.clear()

    for number, line in _lines(path):
        stripped = line.strip(" \t")
        if not stripped:
            flush()
            continue
        columns = _COLUMNS.split(stripped)
        if columns[0] == DOCSTART:
            flush()
            continue
        if len(columns) < 2:
            raise TaggingDataError(
                f"{path}:{number}: expected a token and a tag separated by a space or "
                f"tab, got one column {columns[0]!r}"
            )
        if not tokens:
            start = number
        tokens.append(columns[0])
        tags.append(columns[-1])
    flush()
    return sentences


def read_jsonl(path: str) -> list[TaggedSentence]:
    """Sentences of a JSON-lines file with `tokens` and `tags` lists (blank lines skipped)."""
    sentences = []
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json_object(path, number, line)
        except ValueError as e:
            raise TaggingDataError(str(e)) from None
        for key in ("tokens", "tags"):
            value = obj.get(key)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TaggingDataError(
                    f"{path}:{number}: {key!r} must be a list of strings; the object has "
                    f"keys {sorted(obj)}"
                )
        tokens, tags = obj["tokens"], obj["tags"]
        if len(tokens) != len(tags):
            raise TaggingDataError(f"{path}:{number}: {len(tokens)} tokens but {len(tags)} tags")
        if tokens:
            sentences.append(TaggedSentence(tuple(tokens), tuple(tags), number))
    return sentences


def read_tagged(path: str) -> list[TaggedSentence]:
    """Sentences of `path`: JSON lines for `.jsonl` / `.json`, else CoNLL columns."""
    if path.endswith((".jsonl", ".json")):
        return read_jsonl(path)
    return read_conll(path)


def discover_labels(sentences: list[TaggedSentence], path: str = "training data") -> list[str]:
    """The label list of a training set: "O" first (when present), then the other tags
    sorted. An empty list (a file without any tagged token) is an error: there is nothing
    to learn and every id would be undefined."""
    tags = {t for s in sentences for t in s.tags}
    if not tags:
        raise TaggingDataError(f"{path}: no tagged tokens, so no labels to learn")
    return ([OUTSIDE] if OUTSIDE in tags else []) + sorted(tags - {OUTSIDE})


def check_labels(sentences: list[TaggedSentence], labels: list[str], path: str) -> None:
    """Raise on the first tag of `sentences` (read from `path`) that is not in `labels`."""
    known = set(labels)
    for s in sentences:
        for offset, tag in enumerate(s.tags):
            if tag not in known:
                # column files: one line per token; JSON lines: one line per sentence
                line = s.line if path.endswith((".jsonl", ".json")) else s.line + offset
                raise TaggingDataError(
                    f"{path}:{line}: tag {tag!r} is not one of the {len(labels)} labels "
                    f"of the training data"
                )
