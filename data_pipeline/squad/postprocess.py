"""Start/end logits of every feature → answer text per question (SQuAD v1.1 and v2.0).

For each question, over all its windows: the `n_best_size` best start and end positions
of each window are paired; a pair is kept when both tokens are context tokens, the end is
not before the start, the span has at most `max_answer_length` tokens, and the window is
the one giving the start token the most context. A span's score is start + end logit;
its text is the original context between the start token's first character and the end
token's last (data_pipeline.squad.offsets), so accents, case and spacing are the
context's own.

`postprocess_beam` is the official ALBERT v2.0 head's (`--squad_head albert`): a beam of
start × end log-probabilities and an answer-class logit.

v2.0 with the BERT-style head (`--squad_head bert`): the null score is the
smallest [CLS] start + end logit over the question's windows; `null_odds` = null score −
best span score, and the prediction is "" when null_odds > `null_score_diff_threshold`.
The threshold is a free parameter: tune it on held-out data (`run_squad.py
--tune_threshold_on`), never on the set being scored.
"""

from __future__ import annotations

import collections

import numpy as np


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, largest first."""
    k = min(k, len(values))
    idx = np.argpartition(-values, k - 1)[:k]
    return idx[np.argsort(-values[idx], kind="stable")]


def _distinct_spans(candidates, context: str, n_best_size: int, parts: tuple) -> list[dict]:
    """The best `n_best_size` of `candidates` (score, start part, end part, start char, end
    char) whose texts are distinct and not empty (a lone "▁" covers no character), as
    n-best entries {text, parts[0], parts[1], score, start, end}."""
    seen, nbest = set(), []
    for score, first, second, a, b in sorted(candidates, key=lambda c: -c[0]):
        text = context[a:b].strip()
        if not text or text in seen:
            continue
        seen.add(text)
        nbest.append(
            {"text": text, parts[0]: first, parts[1]: second, "score": score, "start": a, "end": b}
        )
        if len(nbest) >= n_best_size:
            break
    return nbest


def postprocess(
    examples,
    features: dict,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2: bool = False,
    null_score_diff_threshold: float = 0.0,
):
    """(predictions {qas_id: text}, nbest {qas_id: [{text, probability, start_logit,
    end_logit, start, end}]}, null_odds {qas_id: float}, empty for v1.1).

    `features`: the arrays of `convert_squad_examples` (qa_index, context_mask,
    max_context, token_start_char, token_end_char: [F] / [F, S]) for the rows of the logits
    ([F, S]); `examples`: the SquadExamples their qa_index points into.
    """
    by_example = collections.defaultdict(list)
    for row, qa in enumerate(features["qa_index"]):
        by_example[int(qa)].append(row)
    predictions, nbest_json, null_odds = {}, {}, {}
    for index, ex in enumerate(examples):
        rows = by_example.get(index, [])
        candidates = []
        null_score, null_parts = None, (0.0, 0.0)
        for row in rows:
            start, end = start_logits[row], end_logits[row]
            context = features["context_mask"][row].astype(bool)
            if version_2:
                score = float(start[0] + end[0])
                if null_score is None or score < null_score:
                    null_score, null_parts = score, (float(start[0]), float(end[0]))
            max_ctx = features["max_context"][row]
            ends = _top(np.where(context, end, -np.inf), n_best_size)
            for s in _top(np.where(context, start, -np.inf), n_best_size):
                if not context[s] or not max_ctx[s]:
                    continue
                for e in ends:
                    if not context[e] or e < s or e - s + 1 > max_answer_length:
                        continue
                    candidates.append(
                        (
                            float(start[s] + end[e]),
                            float(start[s]),
                            float(end[e]),
                            int(features["token_start_char"][row][s]),
                            int(features["token_end_char"][row][e]),
                        )
                    )
        nbest = _distinct_spans(candidates, ex.context, n_best_size, ("start_logit", "end_logit"))
        best_text = nbest[0]["text"] if nbest else ""
        best_score = nbest[0]["score"] if nbest else None
        if version_2:
            nbest.append(
                {
                    "text": "",
                    "start_logit": null_parts[0],
                    "end_logit": null_parts[1],
                    "score": null_score if null_score is not None else 0.0,
                    "start": -1,
                    "end": -1,
                }
            )
            nbest.sort(key=lambda c: -c["score"])
            # No span at all (no window, or no valid pair): certainly "no answer".
            odds = (null_score - best_score) if best_score is not None and rows else 1e9
            null_odds[ex.qas_id] = odds
            predictions[ex.qas_id] = "" if odds > null_score_diff_threshold else best_text
        else:
            predictions[ex.qas_id] = best_text
        if nbest:
            scores = np.array([c["score"] for c in nbest])
            probs = np.exp(scores - scores.max())
            probs /= probs.sum()
            for c, p in zip(nbest, probs):
                c["probability"] = float(p)
                del c["score"]
        nbest_json[ex.qas_id] = nbest
    return predictions, nbest_json, null_odds


def postprocess_beam(
    examples,
    features: dict,
    outputs: dict,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    null_score_diff_threshold: float = 0.0,
):
    """The official v2.0 post-processing of the ALBERT head (squad_utils
    accumulate_predictions_v2 / write_predictions_v2), with the same return values as
    `postprocess`: (predictions, nbest, null_odds).

    `outputs`: start_top_log_probs, start_top_index [F, k]; end_top_log_probs,
    end_top_index [F, k * k_end] (the ends of start i at i * k_end ...); cls_logits [F].
    Over a question's windows, every beam pair is kept when both tokens are context, the
    window gives the start its most context, the end is not before the start and the span
    has at most `max_answer_length` tokens; its score is the sum of the two
    log-probabilities. null_odds = the smallest answer-class logit over the windows (the
    official `score_diff`); the prediction is "" when it exceeds the threshold.
    """
    by_example = collections.defaultdict(list)
    for row, qa in enumerate(features["qa_index"]):
        by_example[int(qa)].append(row)
    k_end = outputs["end_top_index"].shape[1] // max(outputs["start_top_index"].shape[1], 1)
    predictions, nbest_json, null_odds = {}, {}, {}
    for index, ex in enumerate(examples):
        candidates, score_null = [], None
        for row in by_example.get(index, []):
            cls = float(outputs["cls_logits"][row])
            score_null = cls if score_null is None else min(score_null, cls)
            context = features["context_mask"][row].astype(bool)
            max_ctx = features["max_context"][row]
            for i, s in enumerate(outputs["start_top_index"][row]):
                s_lp = float(outputs["start_top_log_probs"][row][i])
                for j in range(k_end):
                    e = int(outputs["end_top_index"][row][i * k_end + j])
                    e_lp = float(outputs["end_top_log_probs"][row][i * k_end + j])
                    if not context[s] or not context[e] or not max_ctx[s]:
                        continue
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    a = int(features["token_start_char"][row][s])
                    b = int(features["token_end_char"][row][e])
                    candidates.append((s_lp + e_lp, s_lp, e_lp, a, b))
        nbest = _distinct_spans(
            candidates, ex.context, n_best_size, ("start_log_prob", "end_log_prob")
        )
        if not nbest:  # (the official nonce entry)
            nbest.append(
                {
                    "text": "",
                    "start_log_prob": -1e6,
                    "end_log_prob": -1e6,
                    "start": -1,
                    "end": -1,
                    "score": -2e6,
                }
            )
        scores = np.array([c.pop("score") for c in nbest])
        probs = np.exp(scores - scores.max())
        for c, p in zip(nbest, probs / probs.sum()):
            c["probability"] = float(p)
        odds = score_null if score_null is not None else 1e9
        null_odds[ex.qas_id] = odds
        predictions[ex.qas_id] = "" if odds > null_score_diff_threshold else nbest[0]["text"]
        nbest_json[ex.qas_id] = nbest
    return predictions, nbest_json, null_odds


def predictions_at_threshold(nbest: dict, null_odds: dict, threshold: float) -> dict:
    """{qas_id: text} choosing "" when null_odds > threshold, else the best non-empty span
    of `nbest` (threshold=inf: always the best span — what threshold search needs)."""
    out = {}
    for qid, candidates in nbest.items():
        best = next((c["text"] for c in candidates if c["text"]), "")
        out[qid] = "" if null_odds.get(qid, 0.0) > threshold else best
    return out


def write_predictions(output_dir: str, predictions: dict, nbest: dict, null_odds: dict | None):
    """OUTPUT_DIR/predictions.json ({qas_id: text}), nbest_predictions.json and, for v2.0,
    null_odds.json — the official script's three files, each written atomically. Returns
    the path of predictions.json."""
    import os

    from data_pipeline.io.atomic import write_json

    files = {"predictions": predictions, "nbest_predictions": nbest, "null_odds": null_odds}
    for name, obj in files.items():
        if obj is not None:
            write_json(os.path.join(output_dir, f"{name}.json"), obj)
    return os.path.join(output_dir, "predictions.json")
