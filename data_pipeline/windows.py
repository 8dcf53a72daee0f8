"""The one layout of overlapping windows over a token sequence (BERT/ALBERT's SQuAD
`doc_stride`): what SQuAD contexts, tagged sentences and long classification documents are
cut into, and its one setting (`WindowSettings.doc_stride`; each command its own default).

A sequence of `num_tokens` tokens becomes windows of at most `max_tokens` tokens, the
next starting `doc_stride` tokens after the previous one's start (the step between window
starts, not the overlap), the last ending at the last token; a sequence that fits (an
empty one too) is one window. A `doc_stride` longer than a window leaves no gap: the next
window then starts where the previous ended.
"""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting


@dataclasses.dataclass(frozen=True)
class WindowSettings:
    """Windows over a text longer than max_seq_length."""

    doc_stride: int = setting(
        128,
        "Tokens between the starts of consecutive windows of a text longer than "
        "max_seq_length (a SQuAD context, a tagged sentence, a long document); each window "
        "is an example. SQuAD and NER predict each token from the window where it has the "
        "most context; the classifier combines a document's windows (--aggregate), and its "
        "default 0 truncates, as the official code.",
        minimum=0,
    )


def doc_spans(num_tokens: int, max_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) windows over `num_tokens` tokens, as BERT/ALBERT's SQuAD code."""
    if max_tokens < 1 or doc_stride < 1:
        raise ValueError(
            f"windows need max_tokens >= 1 and doc_stride >= 1, got {max_tokens} and {doc_stride}"
        )
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, doc_stride)
