"""SQuAD questions → windowed features with character offsets (`offsets`: which original
characters each token covers).

Features (BERT/ALBERT layout): `[CLS] question [SEP] context window [SEP]`, windows of
`max_seq_length - len(question) - 3` context tokens every `doc_stride` tokens; the
question is cut to `max_query_length` tokens. Labels: start/end token positions of the
answer when the whole answer is inside the window, else 0 (the [CLS] position: "no
answer here"). For prediction each feature carries the character offsets of its context
tokens and whether the window is the one where the token has the most context.

An answer whose boundary falls inside a piece comes back with the rest of that piece
("1990" from the piece "▁1990s"): such answers are counted (`boundary_inside_piece`), as
are answers whose offset does not match their text (`misplaced_offset`, found again
nearby when possible) and answers that cannot be located at all (`unalignable`: skipped
for training, never silently wrong).
"""

from __future__ import annotations

import collections
import re

import numpy as np

from data_pipeline.squad.examples import SquadExample
from data_pipeline.squad.offsets import offset_tokenizer
from data_pipeline.windows import doc_spans


def locate_answer(context: str, answer: dict, stats: collections.Counter) -> tuple[int, int] | None:
    """The answer's character span [s, e) in `context`: at its `answer_start` when the text
    is there, else the nearest occurrence of the text (counted `misplaced_offset`), else
    None (counted `unalignable`)."""
    text, start = answer["text"], answer["answer_start"]
    if context[start : start + len(text)] == text and text.strip():
        return start, start + len(text)
    hits = [m.start() for m in re.finditer(re.escape(text), context)] if text.strip() else []
    if hits:
        stats["misplaced_offset"] += 1
        best = min(hits, key=lambda h: abs(h - start))
        return best, best + len(text)
    stats["unalignable"] += 1
    return None


def token_span(starts: list[int], ends: list[int], span: tuple[int, int]) -> tuple[int, int] | None:
    """First token ending after span start, last token starting before span end."""
    s, e = span
    first = next((i for i, end in enumerate(ends) if end > s), None)
    last = next((i for i in range(len(starts) - 1, -1, -1) if starts[i] < e), None)
    if first is None or last is None or last < first:
        return None
    return first, last


FEATURE_KEYS = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "start_positions",
    "end_positions",
    "is_impossible",
    "qa_index",
    "context_mask",
    "max_context",
    "token_start_char",
    "token_end_char",
)
# What postprocessing needs of each feature besides the model's logits.
PREDICTION_KEYS = ("qa_index", "context_mask", "max_context", "token_start_char", "token_end_char")
# Prediction on length-grouped batches (`predict_logits(per_token=PER_TOKEN_FILL,
# length=max_seq_length)`): what the positions beyond a batch's bucket get when the
# per-token arrays are padded back to max_seq_length. Logits -1e4, as the model gives
# padding; the features 0: not context, so postprocessing never reads those logits.
PER_TOKEN_FILL = {
    "start_logits": -1e4,
    "end_logits": -1e4,
    "context_mask": 0,
    "max_context": 0,
    "token_start_char": 0,
    "token_end_char": 0,
}


def _is_max_context(spans, span_index: int, position: int) -> bool:
    """Whether window `span_index` gives token `position` the most context (min of left and
    right context, + 0.01 × window length), as the official code."""
    best, best_index = None, None
    for i, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best is None or score > best:
            best, best_index = score, i
    return best_index == span_index


def convert_squad_examples(
    examples: list[SquadExample],
    tokenizer,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    is_training: bool = False,
    stats: dict | None = None,
) -> dict[str, np.ndarray]:
    """Features of `examples` as {key: array [F, ...]} (keys: FEATURE_KEYS; per-token
    arrays [F, max_seq_length] int64, the rest [F]). `qa_index` is the example's index.

    Training drops only examples whose answer cannot be located (counted in `stats`);
    `stats` also counts answers whose boundary falls inside a piece, questions cut to
    `max_query_length`, examples spread over several windows and features.
    """
    if max_seq_length < max_query_length + 3 + 1:
        raise ValueError(
            f"max_seq_length {max_seq_length} leaves no room for context "
            f"after max_query_length {max_query_length}"
        )
    counts = collections.Counter()
    offsets = offset_tokenizer(tokenizer)
    rows = {k: [] for k in FEATURE_KEYS}
    contexts: dict[str, tuple] = {}
    for index, ex in enumerate(examples):
        query = tokenizer.encode(ex.question)
        if len(query) > max_query_length:
            counts["questions_truncated"] += 1
            query = query[:max_query_length]
        cached = contexts.get(ex.context)
        if cached is None:
            cached = contexts[ex.context] = offsets.encode(ex.context)
            if len(contexts) > 4:  # consecutive questions share a context
                contexts.pop(next(iter(contexts)))
        ids, starts, ends = cached
        answer_tokens = None
        if is_training and not ex.is_impossible:
            span = locate_answer(ex.context, ex.answers[0], counts)
            answer_tokens = span and token_span(starts, ends, span)
            if answer_tokens is None:
                if span is not None:
                    counts["unalignable"] += 1
                continue
            if (
                ex.context[starts[answer_tokens[0]] : ends[answer_tokens[1]]]
                != ex.context[span[0] : span[1]]
            ):
                counts["boundary_inside_piece"] += 1
        max_tokens = max_seq_length - len(query) - 3
        spans = doc_spans(len(ids), max_tokens, doc_stride)
        if len(spans) > 1:
            counts["examples_with_several_windows"] += 1
        for s, (start, length) in enumerate(spans):
            n_query = len(query) + 2
            input_ids = (
                [tokenizer.cls_id]
                + query
                + [tokenizer.sep_id]
                + ids[start : start + length]
                + [tokenizer.sep_id]
            )
            pad = max_seq_length - len(input_ids)
            context_mask = [0] * n_query + [1] * length + [0] * (pad + 1)
            max_ctx = (
                [0] * n_query
                + [int(_is_max_context(spans, s, start + j)) for j in range(length)]
                + [0] * (pad + 1)
            )
            tok_s = [0] * n_query + starts[start : start + length] + [0] * (pad + 1)
            tok_e = [0] * n_query + ends[start : start + length] + [0] * (pad + 1)
            start_pos = end_pos = 0
            if answer_tokens is not None:
                a, b = answer_tokens
                if a >= start and b < start + length:
                    start_pos, end_pos = a - start + n_query, b - start + n_query
            rows["input_ids"].append(input_ids + [0] * pad)
            rows["input_mask"].append([1] * len(input_ids) + [0] * pad)
            rows["segment_ids"].append([0] * n_query + [1] * (length + 1) + [0] * pad)
            rows["context_mask"].append(context_mask)
            rows["max_context"].append(max_ctx)
            rows["token_start_char"].append(tok_s)
            rows["token_end_char"].append(tok_e)
            rows["start_positions"].append(start_pos)
            rows["end_positions"].append(end_pos)
            rows["is_impossible"].append(int(ex.is_impossible or start_pos == 0))
            rows["qa_index"].append(index)
    counts["features"] = len(rows["qa_index"])
    counts["examples"] = len(examples)
    if stats is not None:
        stats.update(counts)
    shape = (len(rows["qa_index"]), max_seq_length)
    return {
        k: np.asarray(v, np.int64).reshape(shape if isinstance(v[0], list) else (-1,))
        if v
        else np.zeros(
            (0,)
            + (
                (max_seq_length,)
                if k not in ("start_positions", "end_positions", "is_impossible", "qa_index")
                else ()
            ),
            np.int64,
        )
        for k, v in rows.items()
    }


# The per-token features of the records ([max_seq_length] each): what length-grouped
# batches cut and pad to their bucket.
