"""Our GLUE metrics equal scikit-learn's and scipy's on the same predictions (random and
degenerate cases), so reported numbers mean what users expect."""

import numpy as np
import pytest

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_equal_sklearn(seed):
    from data_pipeline.classification import metrics

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 300)
    predictions = np.where(rng.random(300) < 0.7, labels, 1 - labels)
    assert metrics.accuracy(predictions, labels) == pytest.approx(
        sklearn_metrics.accuracy_score(labels, predictions)
    )
    assert metrics.f1(predictions, labels) == pytest.approx(
        sklearn_metrics.f1_score(labels, predictions)
    )
    assert metrics.matthews_corrcoef(predictions, labels) == pytest.approx(
        sklearn_metrics.matthews_corrcoef(labels, predictions)
    )
    three = rng.integers(0, 3, 300)
    guess = np.where(rng.random(300) < 0.6, three, rng.integers(0, 3, 300))
    assert metrics.matthews_corrcoef(guess, three) == pytest.approx(
        sklearn_metrics.matthews_corrcoef(three, guess)
    )


@pytest.mark.parametrize("seed", range(5))
def test_correlations_equal_scipy(seed):
    from data_pipeline.classification import metrics

    rng = np.random.default_rng(seed)
    gold = np.round(rng.uniform(0, 5, 200), 1)  # STS-B-like scores with ties
    pred = gold + rng.normal(0, 1.0, 200)
    pred[:20] = np.round(pred[:20])  # ties in predictions too
    assert metrics.pearson(pred, gold) == pytest.approx(scipy_stats.pearsonr(pred, gold)[0])
    assert metrics.spearman(pred, gold) == pytest.approx(scipy_stats.spearmanr(pred, gold)[0])


def test_degenerate_cases_are_zero_like_sklearn_not_nan():
    from data_pipeline.classification import metrics

    ones = np.ones(50, int)
    mixed = np.r_[np.ones(25, int), np.zeros(25, int)]
    # All one class: sklearn's MCC is 0.0; ours too (no NaN, no crash).
    assert (
        metrics.matthews_corrcoef(ones, mixed)
        == sklearn_metrics.matthews_corrcoef(mixed, ones)
        == 0.0
    )
    assert metrics.matthews_corrcoef(ones, ones) == 0.0
    assert metrics.f1(np.zeros(50, int), np.zeros(50, int)) == sklearn_metrics.f1_score(
        np.zeros(50, int), np.zeros(50, int), zero_division=0.0
    )
    # Constant predictions: scipy returns NaN (with a warning); we return 0.0 on purpose.
    assert metrics.pearson(np.full(10, 2.0), np.arange(10.0)) == 0.0
    assert metrics.spearman(np.full(10, 2.0), np.arange(10.0)) == 0.0
