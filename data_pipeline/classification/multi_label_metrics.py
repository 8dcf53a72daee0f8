"""Multi-label decisions and their scores: per-label thresholds on sigmoid probabilities,
tuned on held-out examples (never on the evaluated set), and the metrics scikit-learn
computes on the decisions.

Metrics (`multi_label_metrics`, each as scikit-learn with zero_division=0):
  micro_f1 / micro_precision / micro_recall: over every (example, label) decision;
  macro_f1 / macro_precision / macro_recall: the unweighted mean over labels (a label
    never gold and never predicted scores 0, as scikit-learn's zero_division=0);
  samples_f1: the mean over examples of each example's F1 (average="samples": how well
    each example's label set is found); weighted_f1: the labels' F1 weighted by their gold
    count (average="weighted": frequent labels count more);
  subset_accuracy: the fraction of examples whose predicted label set is exactly the gold
    one (`accuracy_score` on indicator matrices); hamming_loss: the fraction of wrong
    (example, label) decisions; f1/<label>: each label's F1.

Thresholds (`tune_thresholds`): "global" picks the one threshold of `CANDIDATES`
maximizing micro F1; "per_label" picks each label's maximizing its own F1. Ties go to
the candidate nearest the default (so a label with no positive held-out example, where
every candidate scores 0, keeps the default), then to the lower one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The thresholds tried: 0.01, 0.02, ..., 0.99.
CANDIDATES = np.round(np.arange(1, 100) / 100.0, 2)
TUNE_MODES = ("none", "global", "per_label")


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """float64 probabilities of logits [N, L], without overflow for large |logits|."""
    x = np.asarray(logits, np.float64)
    return np.exp(-np.logaddexp(0.0, -x))


def decide(probabilities: np.ndarray, thresholds) -> np.ndarray:
    """bool [N, L]: probability ≥ the label's threshold (thresholds: a float or [L])."""
    return np.asarray(probabilities) >= np.asarray(thresholds, np.float64)


def _counts(predicted: np.ndarray, gold: np.ndarray, axis):
    """(tp, fp, fn) summed over `axis` of bool [N, L] decisions and gold."""
    tp = np.sum(predicted & gold, axis=axis)
    fp = np.sum(predicted & ~gold, axis=axis)
    fn = np.sum(~predicted & gold, axis=axis)
    return tp, fp, fn


def _ratio(num, den):
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    return np.where(den > 0, num / np.maximum(den, 1), 0.0)


def _prf(tp, fp, fn):
    """(precision, recall, F1), 0 where undefined (scikit-learn's zero_division=0)."""
    return _ratio(tp, tp + fp), _ratio(tp, tp + fn), _ratio(2 * tp, 2 * tp + fp + fn)


def multi_label_metrics(
    predicted: np.ndarray, gold: np.ndarray, labels: Sequence[str]
) -> dict[str, float]:
    """The module's metrics of bool decisions [N, L] against gold multi-hot [N, L]."""
    predicted, gold = np.asarray(predicted, bool), np.asarray(gold) > 0.5
    if predicted.shape != gold.shape or predicted.shape[1] != len(labels):
        raise ValueError(
            f"predictions {predicted.shape} and gold {gold.shape} do not match {len(labels)} labels"
        )
    micro = _prf(*_counts(predicted, gold, axis=None))
    per_label = _prf(*_counts(predicted, gold, axis=0))
    per_example = _prf(*_counts(predicted, gold, axis=1))[2]
    support = gold.sum(axis=0)
    out = {
        "micro_precision": micro[0],
        "micro_recall": micro[1],
        "micro_f1": micro[2],
        "macro_precision": per_label[0].mean(),
        "macro_recall": per_label[1].mean(),
        "macro_f1": per_label[2].mean(),
        "samples_f1": per_example.mean(),
        "weighted_f1": _ratio((per_label[2] * support).sum(), support.sum()),
        "subset_accuracy": np.mean(np.all(predicted == gold, axis=1)),
        "hamming_loss": np.mean(predicted != gold),
    }
    out.update({f"f1/{name}": f for name, f in zip(labels, per_label[2])})
    return {k: float(v) for k, v in out.items()}


def _best(scores: np.ndarray, default: float) -> float:
    """The candidate of the highest score; ties: nearest `default`, then the lower."""
    top = np.flatnonzero(scores >= scores.max() - 1e-12)
    return float(CANDIDATES[min(top, key=lambda i: (abs(CANDIDATES[i] - default), i))])


def tune_thresholds(
    probabilities: np.ndarray, gold: np.ndarray, mode: str, default: float = 0.5
) -> np.ndarray:
    """float64 [L] thresholds from held-out probabilities and gold [N, L]: `mode` "none"
    (`default` for every label), "global" or "per_label" (module docstring)."""
    if mode not in TUNE_MODES:
        raise ValueError(f"--tune_thresholds={mode!r} is not one of {', '.join(TUNE_MODES)}")
    probabilities, gold = np.asarray(probabilities, np.float64), np.asarray(gold) > 0.5
    count = probabilities.shape[1]
    if mode == "none":
        return np.full(count, float(default))
    # decisions [T, N, L] at every candidate, counted once.
    predicted = probabilities[None] >= CANDIDATES[:, None, None]
    if mode == "global":
        f1 = _prf(*_counts(predicted, gold[None], axis=(1, 2)))[2]
        return np.full(count, _best(f1, default))
    f1 = _prf(*_counts(predicted, gold[None], axis=1))[2]  # [T, L]
    return np.array([_best(f1[:, j], default) for j in range(count)])


def evaluate_multi_label(
    logits: np.ndarray,
    gold: np.ndarray,
    labels: Sequence[str],
    thresholds,
) -> dict[str, float]:
    """`multi_label_metrics` of logits [N, L] decided at `thresholds` (a float or [L]),
    with the metrics at 0.5 as `at_0.5/micro_f1` and `at_0.5/macro_f1` beside them (what
    tuning gained)."""
    probabilities = sigmoid(logits)
    out = multi_label_metrics(decide(probabilities, thresholds), gold, labels)
    plain = multi_label_metrics(decide(probabilities, 0.5), gold, labels)
    out.update({f"at_0.5/{k}": plain[k] for k in ("micro_f1", "macro_f1")})
    return out


def tuned_evaluation(
    dev: tuple,
    tune: tuple | None,
    labels: Sequence[str],
    mode: str,
    threshold: float = 0.5,
    fixed: Sequence[float] | None = None,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(metrics, per label) of `dev` = (logits [N, L], gold [N, L]) decided at the
    thresholds `tune_thresholds` finds on `tune` = (logits, gold) of held-out examples
    (mode "none": `threshold` for every label, `tune` unused), or at `fixed` (one per
    label: a trained model's own, mode and `tune` unused).

    metrics: `evaluate_multi_label`'s without the per-label F1s, plus "threshold" when one
      threshold serves every label; per label: {"thresholds": {label: t}, "f1": {label: F1}}.
    """
    if fixed is None and mode != "none" and tune is None:
        raise ValueError(f"--tune_thresholds={mode} needs held-out predictions to tune on")
    if fixed is not None:
        thresholds = np.asarray(fixed, np.float64)
    elif mode == "none":
        thresholds = np.full(len(labels), float(threshold))
    else:
        thresholds = tune_thresholds(sigmoid(tune[0]), tune[1], mode, threshold)
    found = evaluate_multi_label(dev[0], dev[1], labels, thresholds)
    metrics = {k: v for k, v in found.items() if not k.startswith("f1/")}
    if mode != "per_label" and (fixed is None or len(set(thresholds.tolist())) == 1):
        metrics["threshold"] = float(thresholds[0])
    per_label = {
        "thresholds": {name: float(t) for name, t in zip(labels, thresholds)},
        "f1": {name: found[f"f1/{name}"] for name in labels},
    }
    return metrics, per_label
