"""Score SQuAD predictions exactly as the official v1.1 and v2.0 evaluation scripts do.

Why: SQuAD results are only comparable with published ones when they come from the same
scoring rules (answer normalization, token F1, max over gold answers, no-answer handling).
This module re-implements those rules with the standard library only, so that
`evaluate` returns the numbers the official scripts print for the same files:

  v1.1  {"exact_match", "f1"}
  v2.0  {"exact", "f1", "total", "HasAns_*", "NoAns_*"} and, when no-answer probabilities
        are given, {"best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"}

Normalization is the official one: lowercase, drop every character of
`string.punctuation` (ASCII only: accents and curly quotes stay), drop the words
a/an/the, collapse whitespace.

One deliberate difference: a v2.0 question with no prediction is warned about on stderr
and scored as the empty prediction "" (the official script skips it in the raw scores and
then crashes when computing the HasAns/NoAns breakdown). With a complete predictions file
the results are identical.

Thresholds: `best_exact_thresh`/`best_f1_thresh` are tuned *on the evaluated set* and so
are an optimistic oracle. To choose the no-answer threshold you report with, tune it with
`best_threshold` on held-out data, then apply it (`apply_threshold`, or `na_prob_thresh`)
to the evaluated set; never tune on the set you report.

CLI:
  python -m data_pipeline.squad.evaluation DATA.json PREDICTIONS.json
      [--na_prob_file F] [--na_prob_thresh 1.0] [--version {1.1,2.0}]
prints one JSON object on stdout. Bad input exits 2 with "error: ..." on stderr.
"""

from __future__ import annotations

import collections
import json
import re
import string
import sys

from data_pipeline.io import filesystem

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


# --------------------------------------------------------------------------- normalization


def normalize_answer(s: str) -> str:
    """Lowercase, remove punctuation, remove articles, collapse whitespace (official order)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _token_f1(pred_tokens: list, gold_tokens: list) -> float:
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------- SQuAD v1.1


def f1_v1(prediction: str, ground_truth: str) -> float:
    """Token-level F1 of the v1.1 script (0 when nothing overlaps, empty sides included)."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def exact_match_v1(prediction: str, ground_truth: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def evaluate_v1(dataset: list, predictions: dict) -> dict:
    """`dataset` is the JSON's "data" list. Unanswered questions score 0 (with a warning)."""
    exact_match = f1 = 0.0
    total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                qid = qa["id"]
                if qid not in predictions:
                    print(f"Unanswered question {qid} will receive score 0.", file=sys.stderr)
                    continue
                ground_truths = [a["text"] for a in qa["answers"]]
                if not ground_truths:
                    raise ValueError(
                        f"question {qid} has no gold answers: a SQuAD v1.1 "
                        "evaluation needs them (is this a v2.0 file?)"
                    )
                prediction = predictions[qid]
                exact_match += max(exact_match_v1(prediction, g) for g in ground_truths)
                f1 += max(f1_v1(prediction, g) for g in ground_truths)
    if total == 0:
        raise ValueError("the dataset has no questions")
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


# --------------------------------------------------------------------------- SQuAD v2.0


def get_tokens(s: str) -> list:
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold: str, a_pred: str) -> int:
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    """v2.0 token F1: if either side is empty, 1 when both are, else 0."""
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    return _token_f1(pred_toks, gold_toks)


def _iter_qas(dataset: list):
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def make_qid_to_has_ans(dataset: list) -> dict:
    return {qa["id"]: bool(qa["answers"]) for qa in _iter_qas(dataset)}


def get_raw_scores(dataset: list, predictions: dict) -> tuple:
    """Per-question (exact, f1) before any no-answer thresholding, in dataset order.

    A missing prediction is warned about and scored as "" (see the module docstring)."""
    exact_scores, f1_scores = {}, {}
    for qa in _iter_qas(dataset):
        qid = qa["id"]
        gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
        if not gold_answers:
            gold_answers = [""]  # unanswerable: the only correct prediction is empty
        if qid not in predictions:
            print(f"Missing prediction for {qid}", file=sys.stderr)
        a_pred = predictions.get(qid, "")
        exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(
    scores: dict, na_probs: dict, qid_to_has_ans: dict, thresh: float
) -> dict:
    """Questions with na_prob > thresh count as predicted "no answer"."""
    new_scores = {}
    for qid, score in scores.items():
        if na_probs[qid] > thresh:
            new_scores[qid] = float(not qid_to_has_ans[qid])
        else:
            new_scores[qid] = score
    return new_scores


def make_eval_dict(exact_scores: dict, f1_scores: dict, qid_list: list | None = None) -> dict:
    if qid_list is None:
        qid_list = list(exact_scores)
    total = len(qid_list)
    return collections.OrderedDict(
        [
            ("exact", 100.0 * sum(exact_scores[k] for k in qid_list) / total),
            ("f1", 100.0 * sum(f1_scores[k] for k in qid_list) / total),
            ("total", total),
        ]
    )


def merge_eval(main_eval: dict, new_eval: dict, prefix: str) -> None:
    for k, v in new_eval.items():
        main_eval[f"{prefix}_{k}"] = v


def find_best_thresh(preds: dict, scores: dict, na_probs: dict, qid_to_has_ans: dict) -> tuple:
    """(100 * best achievable mean score, its threshold) scanning na_probs in ascending order.

    Starting from "every question predicted no-answer" (score = #unanswerable), keeping the
    predicted answer of a question changes the total by its score when it is answerable, and
    by -1 (non-empty prediction) or 0 (empty one) when it is not."""
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = best_score = num_no_ans
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):  # sorted() is stable
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(
    main_eval: dict,
    preds: dict,
    exact_raw: dict,
    f1_raw: dict,
    na_probs: dict,
    qid_to_has_ans: dict,
) -> None:
    best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
    best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
    main_eval["best_exact"] = best_exact
    main_eval["best_exact_thresh"] = exact_thresh
    main_eval["best_f1"] = best_f1
    main_eval["best_f1_thresh"] = f1_thresh


def _complete(dataset: list, predictions: dict, na_probs: dict | None) -> tuple:
    """Predictions and na_probs with an entry for every question of the dataset.

    na_probs keep their given order (it decides ties in `find_best_thresh`, as in the
    official script); questions without one get 0.0, with a warning."""
    qids = [qa["id"] for qa in _iter_qas(dataset)]
    preds = {qid: predictions.get(qid, "") for qid in qids}
    if na_probs is None:
        return preds, {qid: 0.0 for qid in qids}
    wanted = set(qids)
    full = {qid: p for qid, p in na_probs.items() if qid in wanted}
    for qid in qids:
        if qid not in full:
            print(f"Missing no-answer probability for {qid}; using 0.0", file=sys.stderr)
            full[qid] = 0.0
    return preds, full


def evaluate_v2(
    dataset: list, predictions: dict, na_probs: dict | None = None, na_prob_thresh: float = 1.0
) -> dict:
    """`dataset` is the JSON's "data" list. Best-threshold keys only when na_probs is given."""
    qid_to_has_ans = make_qid_to_has_ans(dataset)
    if not qid_to_has_ans:
        raise ValueError("the dataset has no questions")
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = get_raw_scores(dataset, predictions)
    preds, probs = _complete(dataset, predictions, na_probs)
    exact_thresh = apply_no_ans_threshold(exact_raw, probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, probs, qid_to_has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh, has_ans_qids), "HasAns")
    if no_ans_qids:
        merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh, no_ans_qids), "NoAns")
    if na_probs is not None:
        find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, probs, qid_to_has_ans)
    return dict(out_eval)


# --------------------------------------------------------------------------- entry points


def detect_version(dataset_json: dict) -> str:
    """ "2.0" if the "version" string says so or any question has "is_impossible"."""
    if "2.0" in str(dataset_json.get("version", "")):
        return "2.0"
    if any("is_impossible" in qa for qa in _iter_qas(dataset_json["data"])):
        return "2.0"
    return "1.1"


def evaluate(
    dataset_json: dict,
    predictions: dict,
    na_probs: dict | None = None,
    na_prob_thresh: float = 1.0,
    version: str | None = None,
) -> dict:
    """Scores of `predictions` (id -> answer text) on a whole SQuAD JSON file's content."""
    version = version or detect_version(dataset_json)
    if version == "1.1":
        return evaluate_v1(dataset_json["data"], predictions)
    if version == "2.0":
        return evaluate_v2(dataset_json["data"], predictions, na_probs, na_prob_thresh)
    raise ValueError(f"unknown SQuAD version {version!r} (expected '1.1' or '2.0')")


def best_threshold(dataset_json: dict, predictions: dict, na_probs: dict) -> dict:
    """best_exact, best_exact_thresh, best_f1, best_f1_thresh on raw (unthresholded) scores.

    Use it on held-out data to pick a threshold, then score the evaluated set with it."""
    dataset = dataset_json["data"]
    qid_to_has_ans = make_qid_to_has_ans(dataset)
    if not qid_to_has_ans:
        raise ValueError("the dataset has no questions")
    exact_raw, f1_raw = get_raw_scores(dataset, predictions)
    preds, probs = _complete(dataset, predictions, na_probs)
    out = {}
    find_all_best_thresh(out, preds, exact_raw, f1_raw, probs, qid_to_has_ans)
    return out


def apply_threshold(predictions: dict, null_odds: dict, threshold: float) -> dict:
    """Predictions with "" (no answer) wherever null_odds[qid] > threshold."""
    return {
        qid: ("" if qid in null_odds and null_odds[qid] > threshold else text)
        for qid, text in predictions.items()
    }


class InputError(Exception):
    """Bad input file; the message names the file."""


def _load_json(path: str):
    try:
        with filesystem.open(path) as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not valid JSON: {e}") from e


def _load_dataset(path: str) -> dict:
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError(f'{path} is not a SQuAD dataset (a JSON object with a "data" list)')
    return data


def _load_mapping(path: str, kind: str, value_ok) -> dict:
    data = _load_json(path)
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a JSON object of question id -> {kind}")
    for qid, value in data.items():
        if not value_ok(value):
            raise InputError(f"{path}: the value for {qid!r} is not a {kind}: {value!r:.60}")
    return data


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m data_pipeline.squad.evaluation",
        description="Score SQuAD v1.1 / v2.0 predictions as the official scripts do.",
    )
    parser.add_argument("data_file", help="SQuAD dataset JSON (e.g. dev-v2.0.json)")
    parser.add_argument("pred_file", help="JSON object: question id -> predicted answer text")
    parser.add_argument(
        "--na_prob_file",
        default=None,
        help="JSON object: question id -> no-answer probability (v2.0)",
    )
    parser.add_argument(
        "--na_prob_thresh",
        type=float,
        default=1.0,
        help="predict no-answer when the probability is above this (v2.0)",
    )
    parser.add_argument(
        "--version", choices=["1.1", "2.0"], default=None, help="default: detected from the dataset"
    )
    args = parser.parse_args(argv)
    try:
        dataset_json = _load_dataset(args.data_file)
        predictions = _load_mapping(args.pred_file, "string", lambda v: isinstance(v, str))
        na_probs = None
        if args.na_prob_file is not None:
            na_probs = _load_mapping(args.na_prob_file, "number", _is_number)
        try:
            result = evaluate(
                dataset_json,
                predictions,
                na_probs=na_probs,
                na_prob_thresh=args.na_prob_thresh,
                version=args.version,
            )
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise InputError(f"{args.data_file}: malformed SQuAD data: {e!r}") from e
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
