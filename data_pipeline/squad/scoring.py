"""What run_squad reports: official scores of its predictions and, for v2.0, the no-answer
threshold kept honest.

v2.0 predicts "no answer" when null_odds > threshold (data_pipeline.squad.postprocess). The
threshold that maximizes F1 on the evaluated set itself is what the official ALBERT
reported; it is optimistic by construction, so it is reported apart, labelled as such
(`oracle_threshold_on_this_set`). The threshold to apply is tuned on a separate file
(`tune_threshold`) and reported with the scores it gives on the evaluated set.
"""

from __future__ import annotations

import json

from data_pipeline.io import filesystem
from data_pipeline.squad import evaluation as squad_eval
from data_pipeline.squad.postprocess import predictions_at_threshold


def read_dataset(path: str) -> dict:
    """A SQuAD JSON file's content, as `evaluation.evaluate` takes it."""
    with filesystem.open(path) as f:
        return json.load(f)


def score(dataset_json: dict, predictions: dict, version: str, metric: str = "squad") -> dict:
    """The scores of `predictions` ({qas_id: text}) on a SQuAD-format file's content: the
    official SQuAD script of `version` ("1.1" / "2.0"), or with `metric` "cmrc2018" the
    CMRC 2018 script's (data_pipeline.squad.cmrc_evaluation: Chinese, answerable only)."""
    if metric == "cmrc2018":
        from data_pipeline.squad import cmrc_evaluation

        return cmrc_evaluation.evaluate(dataset_json, predictions)
    return squad_eval.evaluate(dataset_json, predictions, version=version)


def tune_threshold(dataset_json: dict, nbest: dict, null_odds: dict) -> tuple[float, float]:
    """(threshold, its F1) maximizing F1 on a held-out v2.0 set, from that set's
    postprocessed `nbest` and `null_odds` ({qas_id: float}).

    When answering nothing is best, the official search returns 0.0, which means "answer
    nothing" for probabilities in [0, 1] but not for null odds (which can be negative):
    the threshold is then put below every odds seen instead."""
    best = squad_eval.best_threshold(
        dataset_json, predictions_at_threshold(nbest, null_odds, float("inf")), null_odds
    )
    threshold = best["best_f1_thresh"]
    nothing = squad_eval.evaluate(dataset_json, {q: "" for q in null_odds}, version="2.0")
    if best["best_f1"] <= nothing["f1"]:
        threshold = min(null_odds.values()) - 1.0
    return threshold, best["best_f1"]


def evaluation_report(
    data_path: str,
    predictions: dict,
    nbest: dict,
    null_odds: dict,
    version_2: bool,
    threshold: float,
    tune_on: tuple | None = None,
    metric: str = "squad",
) -> dict:
    """The scores of `predictions` (made at `threshold`) on the SQuAD file `data_path`:
    {"scores"} for v1.1; for v2.0 also {"at_threshold": {threshold, **scores}}, the
    optimistic {"oracle_threshold_on_this_set"} (module docstring) and, when `tune_on` =
    (held-out file, its nbest, its null_odds) is given, {"tuned_threshold": {tuned_on,
    threshold, tuning_set_f1, **the scores of data_path at that threshold}}.
    `metric` "cmrc2018": {"scores"} of the CMRC 2018 script (data_pipeline.squad
    .cmrc_evaluation; answerable questions only, so v1.1)."""
    dataset = read_dataset(data_path)
    scores = score(dataset, predictions, "2.0" if version_2 else "1.1", metric)
    if not version_2:
        return {"scores": scores}
    report = {"at_threshold": {"threshold": threshold, **scores}, "scores": scores}
    if tune_on is not None:
        tune_path, tune_nbest, tune_odds = tune_on
        tuned, tune_f1 = tune_threshold(read_dataset(tune_path), tune_nbest, tune_odds)
        applied = predictions_at_threshold(nbest, null_odds, tuned)
        report["tuned_threshold"] = {
            "tuned_on": tune_path,
            "threshold": tuned,
            "tuning_set_f1": tune_f1,
            **squad_eval.evaluate(dataset, applied, version="2.0"),
        }
    report["oracle_threshold_on_this_set"] = squad_eval.best_threshold(
        dataset, predictions_at_threshold(nbest, null_odds, float("inf")), null_odds
    )
    return report
