"""Multi-label metrics equal scikit-learn's (a test-only reference) on GoEmotions' real dev
labels against corrupted copies of them; thresholds are the maximizers they claim to be."""

import numpy as np
import pytest
from sklearn import metrics as sk

from data_pipeline.classification.multi_label_metrics import (
    CANDIDATES,
    decide,
    multi_label_metrics,
    sigmoid,
    tune_thresholds,
    tuned_evaluation,
)
from data_pipeline.classification.tasks import TaskSpec


@pytest.fixture(scope="module")
def dev_gold():
    """(labels, gold bool [5426, 28]) of GoEmotions' real dev file, or skip."""
    from data_pipeline.classification.multi_label import multi_hot
    from tests.support.harness import SHARED_DATA

    folder = SHARED_DATA / "multilabel" / "goemotions"
    if not folder.is_dir():
        pytest.skip(f"real data not available: {folder} is absent")
    spec = TaskSpec(
        "tsv", str(folder), text_a_column="text", label_column="labels", multi_label=True
    )
    examples = spec.read("dev")
    labels = sorted({n for e in examples for n in e.label})
    return labels, multi_hot(examples, labels) > 0.5


def _corrupt(gold, seed, flip=0.05):
    rng = np.random.default_rng(seed)
    return gold ^ (rng.random(gold.shape) < flip)


def _reference(predicted, gold):
    out = {}
    for average in ("micro", "macro"):
        p, r, f, _ = sk.precision_recall_fscore_support(
            gold, predicted, average=average, zero_division=0
        )
        out.update({f"{average}_precision": p, f"{average}_recall": r, f"{average}_f1": f})
    for average in ("samples", "weighted"):
        out[f"{average}_f1"] = sk.f1_score(gold, predicted, average=average, zero_division=0)
    out["subset_accuracy"] = sk.accuracy_score(gold, predicted)
    out["hamming_loss"] = sk.hamming_loss(gold, predicted)
    return out, sk.f1_score(gold, predicted, average=None, zero_division=0)


@pytest.mark.parametrize("seed, flip", [(0, 0.05), (1, 0.3), (2, 0.0)])
def test_metrics_equal_scikit_learn_on_goemotions_dev(dev_gold, seed, flip):
    labels, gold = dev_gold
    predicted = _corrupt(gold, seed, flip)
    if seed == 1:
        predicted[:, 3] = False  # a label never predicted (precision 0/0 → 0)
    ours = multi_label_metrics(predicted, gold, labels)
    reference, per_label = _reference(predicted, gold)
    for name, value in reference.items():
        assert ours[name] == pytest.approx(value, abs=1e-9), name
    for name, value in zip(labels, per_label):
        assert ours[f"f1/{name}"] == pytest.approx(value, abs=1e-9), name
    if flip == 0:
        assert ours["micro_f1"] == ours["subset_accuracy"] == 1 and ours["hamming_loss"] == 0


def test_a_label_never_gold_nor_predicted_scores_zero_as_scikit_learn():
    gold = np.array([[1, 0], [1, 0], [0, 0]], bool)  # (an example with no label at all)
    predicted = np.array([[1, 0], [0, 0], [0, 0]], bool)
    ours = multi_label_metrics(predicted, gold, ["a", "b"])
    reference, _ = _reference(predicted, gold)
    for name in ("macro_f1", "samples_f1", "weighted_f1"):
        assert ours[name] == pytest.approx(reference[name], abs=1e-12), name
    assert ours["f1/b"] == 0.0 and ours["samples_f1"] == pytest.approx(1 / 3)


def _noisy_probabilities(gold, seed):
    """Probabilities that rank gold labels higher, imperfectly (like a model's)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=gold.shape) + 2.5 * gold - 2.0
    return logits, sigmoid(logits)


def test_global_threshold_maximizes_micro_f1(dev_gold):
    labels, gold = dev_gold
    gold = gold[:1500]  # (99 scikit-learn passes)
    _, probabilities = _noisy_probabilities(gold, 3)
    found = tune_thresholds(probabilities, gold, "global")
    assert len(set(found)) == 1
    scores = [sk.f1_score(gold, probabilities >= t, average="micro") for t in CANDIDATES]
    best = max(scores)
    tied = [t for t, s in zip(CANDIDATES, scores) if s >= best - 1e-12]
    assert found[0] == min(tied, key=lambda t: (abs(t - 0.5), t))


def test_per_label_thresholds_maximize_each_label_f1(dev_gold):
    labels, gold = dev_gold
    gold = gold[:1500].copy()
    gold[:, 5] = False  # a label without positive held-out examples keeps the default
    _, probabilities = _noisy_probabilities(gold, 4)
    found = tune_thresholds(probabilities, gold, "per_label", default=0.4)
    assert found[5] == 0.4
    for j in (0, 9, 27):
        scores = [
            sk.f1_score(gold[:, j], probabilities[:, j] >= t, zero_division=0) for t in CANDIDATES
        ]
        assert sk.f1_score(gold[:, j], probabilities[:, j] >= found[j]) == pytest.approx(
            max(scores), abs=1e-12
        )
    assert len(set(found)) > 3  # the labels differ


def test_tuned_evaluation_tunes_on_held_out_and_scores_dev(dev_gold):
    labels, gold = dev_gold
    tune, dev = gold[:2000], gold[2000:]
    tune_logits, _ = _noisy_probabilities(tune, 5)
    dev_logits, dev_probabilities = _noisy_probabilities(dev, 6)
    metrics, per_label = tuned_evaluation(
        (dev_logits, dev), (tune_logits, tune), labels, "per_label"
    )
    thresholds = np.array([per_label["thresholds"][n] for n in labels])
    np.testing.assert_array_equal(
        thresholds, tune_thresholds(sigmoid(tune_logits), tune, "per_label")
    )
    decided = decide(dev_probabilities, thresholds)
    assert metrics["micro_f1"] == pytest.approx(
        sk.f1_score(dev, decided, average="micro"), abs=1e-9
    )
    at_half = sk.f1_score(dev, dev_probabilities >= 0.5, average="macro", zero_division=0)
    assert metrics["at_0.5/macro_f1"] == pytest.approx(at_half, abs=1e-9)
    assert "threshold" not in metrics and not any(k.startswith("f1/") for k in metrics)
    plain, _ = tuned_evaluation((dev_logits, dev), None, labels, "none", 0.3)
    assert plain["threshold"] == 0.3
    with pytest.raises(ValueError, match="needs held-out predictions"):
        tuned_evaluation((dev_logits, dev), None, labels, "global")
