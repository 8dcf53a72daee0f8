"""Evaluation metrics for fine-tuning, as GLUE reports them: pure numpy, never NaN.

The official runner reported plain accuracy for CoLA; GLUE's metric is Matthews
correlation. `task_metrics` gives per task what the GLUE leaderboard reports:

  cola              mcc
  sts-b             pearson, spearman, corr (their mean)
  mrpc, qqp         f1 (positive class 1), accuracy, acc_and_f1 (their mean)
  everything else   accuracy

Definitions match scikit-learn (`accuracy_score`, `f1_score`, `matthews_corrcoef`) and
scipy (`pearsonr`, `spearmanr` with average ranks for ties). Degenerate cases, where the
textbook formula divides by zero, give 0.0 instead of NaN so that "keep the best
checkpoint" comparisons stay total:
  - MCC with a zero denominator (all labels or all predictions one class) → 0.0
    (scikit-learn's value);
  - F1 with no positive label and no positive prediction → 0.0 (scikit-learn's
    `zero_division` default);
  - Pearson/Spearman when either side is constant → 0.0 (scipy returns NaN and warns):
    a constant prediction carries no correlation with the labels.
Empty inputs and length mismatches are errors.
"""

from __future__ import annotations

import numpy as np

# The metric a task's "best checkpoint" is chosen by (higher is better for all).
PRIMARY_METRIC = {"cola": "mcc", "sts-b": "corr", "mrpc": "acc_and_f1", "qqp": "acc_and_f1"}


def _pair(predictions, labels, dtype=None) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(predictions, dtype=dtype).reshape(-1)
    y = np.asarray(labels, dtype=dtype).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"{p.size} predictions for {y.size} labels; expected equal counts")
    if p.size == 0:
        raise ValueError("no predictions: a metric of an empty set is undefined")
    return p, y


def accuracy(predictions, labels) -> float:
    """Fraction of predictions equal to their label."""
    p, y = _pair(predictions, labels)
    return float(np.mean(p == y))


def f1(predictions, labels, positive=1) -> float:
    """Binary F1 of class `positive`: 2·TP / (2·TP + FP + FN); 0.0 when that is 0/0."""
    p, y = _pair(predictions, labels)
    tp = int(np.sum((p == positive) & (y == positive)))
    fp = int(np.sum((p == positive) & (y != positive)))
    fn = int(np.sum((p != positive) & (y == positive)))
    denominator = 2 * tp + fp + fn
    return 2.0 * tp / denominator if denominator else 0.0


def matthews_corrcoef(predictions, labels) -> float:
    """Matthews correlation, multi-class form (Gorodkin 2004; scikit-learn's formula).

    From the confusion matrix C: t_k = row sums (true), p_k = column sums (predicted),
    c = trace, s = n.  MCC = (c·s − Σ t_k p_k) / sqrt((s² − Σ p_k²)(s² − Σ t_k²)).
    For two classes this is (TP·TN − FP·FN)/sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).
    A zero denominator (one class only among labels or predictions) gives 0.0.
    """
    p, y = _pair(predictions, labels)
    classes, codes = np.unique(np.concatenate([y, p]), return_inverse=True)
    k = classes.size
    confusion = np.zeros((k, k), dtype=np.float64)
    np.add.at(confusion, (codes[: y.size], codes[y.size :]), 1.0)
    t = confusion.sum(axis=1)
    q = confusion.sum(axis=0)
    c = np.trace(confusion)
    s = confusion.sum()
    cov_yp = c * s - np.dot(t, q)
    cov_pp = s * s - np.dot(q, q)
    cov_yy = s * s - np.dot(t, t)
    if cov_pp == 0 or cov_yy == 0:
        return 0.0
    return float(cov_yp / np.sqrt(cov_pp * cov_yy))


def pearson(predictions, labels) -> float:
    """Pearson correlation; 0.0 when either side is constant (see module docstring)."""
    p, y = _pair(predictions, labels, dtype=np.float64)
    dp, dy = p - p.mean(), y - y.mean()
    norm = np.sqrt(np.dot(dp, dp) * np.dot(dy, dy))
    if norm == 0 or not np.isfinite(norm):
        return 0.0
    return float(np.clip(np.dot(dp, dy) / norm, -1.0, 1.0))


def average_ranks(values) -> np.ndarray:
    """1-based ranks with ties given the mean of the ranks they span (scipy's "average")."""
    v = np.asarray(values).reshape(-1)
    order = np.argsort(v, kind="stable")
    sorted_v = v[order]
    # Start index of each run of equal values in the sorted order.
    starts = np.flatnonzero(np.concatenate([[True], sorted_v[1:] != sorted_v[:-1]]))
    ends = np.concatenate([starts[1:], [v.size]])
    run_rank = (starts + ends + 1) / 2.0  # mean of 1-based ranks starts+1 .. ends
    ranks = np.empty(v.size, dtype=np.float64)
    ranks[order] = np.repeat(run_rank, ends - starts)
    return ranks


def spearman(predictions, labels) -> float:
    """Spearman rank correlation: Pearson of average ranks; 0.0 when either side is constant."""
    p, y = _pair(predictions, labels, dtype=np.float64)
    return pearson(average_ranks(p), average_ranks(y))


def task_metrics(task_name: str, predictions, labels) -> dict[str, float]:
    """What GLUE reports for `task_name` (module docstring), as {name: value}.

    Args:
      task_name: "cola", "sts-b", "mrpc", "qqp", or any other task (accuracy).
      predictions: [n] predicted label indices (float scores for "sts-b").
      labels: [n] gold label indices (float scores for "sts-b").
    """
    task = task_name.lower()
    if task == "cola":
        return {"mcc": matthews_corrcoef(predictions, labels)}
    if task == "sts-b":
        r, rho = pearson(predictions, labels), spearman(predictions, labels)
        return {"pearson": r, "spearman": rho, "corr": (r + rho) / 2.0}
    if task in ("mrpc", "qqp"):
        f, acc = f1(predictions, labels, positive=1), accuracy(predictions, labels)
        return {"f1": f, "accuracy": acc, "acc_and_f1": (f + acc) / 2.0}
    return {"accuracy": accuracy(predictions, labels)}


def primary_metric(task_name: str) -> str:
    """The key of `task_metrics` that ranks checkpoints for `task_name`."""
    return PRIMARY_METRIC.get(task_name.lower(), "accuracy")


def spread(evals: list[dict]) -> dict[str, dict[str, float]]:
    """{metric: {median, min, max, std}} over the runs' results `evals` (one {metric:
    value} each, e.g. one per seed): a single run's figure cannot be reproduced by
    another seed, so multi-seed results report the spread (std: population, ddof 0)."""
    if not evals:
        raise ValueError("no runs to summarize")
    summary = {}
    for name in evals[0]:
        values = np.array([e[name] for e in evals], dtype=np.float64)
        summary[name] = {
            "median": float(np.median(values)),
            "min": float(values.min()),
            "max": float(values.max()),
            "std": float(np.std(values)),
        }
    return summary


def seeds_report(task_name: str, seeds: list[int], evals: list[dict]) -> tuple[dict, str]:
    """The eval_results.json of a multi-seed run ({task, runs, seeds, summary: `spread`,
    per_run}) and a one-line account of it (median, min and max of every metric)."""
    summary = spread(evals)
    line = f"over {len(evals)} seeds: " + ", ".join(
        f"{k} median {v['median']:.4f} (min {v['min']:.4f}, max {v['max']:.4f})"
        for k, v in summary.items()
    )
    return {
        "task": task_name,
        "runs": len(evals),
        "seeds": list(seeds),
        "summary": summary,
        "per_run": list(evals),
    }, line
