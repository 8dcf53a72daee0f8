"""The one layout of overlapping windows over a token sequence (BERT/ALBERT's SQuAD
`doc_stride`): what SQuAD contexts and long classification documents are cut into.

A sequence of `num_tokens` tokens becomes windows of at most `max_tokens` tokens, the
next starting `doc_stride` tokens after the previous one's start (the step between window
starts, not the overlap), the last ending at the last token; a sequence that fits (an
empty one too) is one window. A `doc_stride` longer than a window leaves no gap: the next
window then starts where the previous ended.
"""

from __future__ import annotations


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
