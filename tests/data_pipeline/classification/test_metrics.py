"""data_pipeline.classification.metrics against independent references: golden values from
the scikit-learn and scipy documentation, brute-force reimplementations, and degenerate
cases (never NaN); the multi-seed spread.
scipy and scikit-learn are not installed in the project's environment, so the references
are written here with plain Python loops."""

import math

import numpy as np
import pytest

from data_pipeline.classification import metrics as M


def _ref_ranks(values):
    """Average ranks by counting: rank = #smaller + (#equal + 1) / 2."""
    return [sum(w < v for w in values) + (sum(w == v for w in values) + 1) / 2 for v in values]


def _ref_pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def _ref_binary(p, y):
    tp = sum(a == 1 and b == 1 for a, b in zip(p, y))
    tn = sum(a == 0 and b == 0 for a, b in zip(p, y))
    fp = sum(a == 1 and b == 0 for a, b in zip(p, y))
    fn = sum(a == 0 and b == 1 for a, b in zip(p, y))
    return tp, tn, fp, fn


def test_golden_values_from_library_documentation():
    # sklearn.metrics.matthews_corrcoef docstring: [+1,+1,+1,-1] vs [+1,-1,+1,+1] → -0.33...
    assert M.matthews_corrcoef([1, -1, 1, 1], [1, 1, 1, -1]) == pytest.approx(-1 / 3)
    # scipy.stats.pearsonr docstring example.
    assert M.pearson([1, 2, 3, 4, 5], [10, 9, 2.5, 6, 4]) == pytest.approx(
        -0.7426106572325057, abs=1e-12
    )
    # scipy.stats.spearmanr docstring example (a tie among the second values).
    assert M.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(
        0.8207826816681233, abs=1e-12
    )
    # sklearn.metrics.f1_score: y_true [0,1,1,0,1,1], y_pred [0,1,0,0,1,1]: P=1, R=3/4.
    assert M.f1([0, 1, 0, 0, 1, 1], [0, 1, 1, 0, 1, 1]) == pytest.approx(6 / 7)
    assert M.accuracy([0, 2, 1, 3], [0, 1, 2, 3]) == 0.5


def test_hand_computed_binary_case():
    y = [1, 1, 1, 1, 0, 0, 0, 0, 0, 1]
    p = [1, 1, 0, 1, 0, 1, 0, 0, 1, 1]
    # TP=4, TN=3, FP=2, FN=1
    assert _ref_binary(p, y) == (4, 3, 2, 1)
    assert M.accuracy(p, y) == pytest.approx(0.7)
    assert M.f1(p, y) == pytest.approx(8 / 11)
    assert M.matthews_corrcoef(p, y) == pytest.approx((12 - 2) / math.sqrt(6 * 5 * 5 * 4))


@pytest.mark.parametrize("seed", range(5))
def test_random_binary_against_confusion_formulas(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200).tolist()
    p = [a if rng.random() < 0.7 else 1 - a for a in y]
    tp, tn, fp, fn = _ref_binary(p, y)
    mcc = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert M.matthews_corrcoef(p, y) == pytest.approx(mcc, abs=1e-12)
    assert M.f1(p, y) == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=1e-12)
    assert M.accuracy(p, y) == pytest.approx((tp + tn) / 200)


def test_multiclass_mcc_hand_computed():
    # Confusion (rows true, cols pred): [[2,1,0],[0,2,1],[1,0,1]]; n=8, trace=5,
    # t=(3,3,2), p=(3,3,2): (5*8 - 22) / (64 - 22) = 18/42.
    y = [0, 0, 0, 1, 1, 1, 2, 2]
    p = [0, 0, 1, 1, 1, 2, 0, 2]
    assert M.matthews_corrcoef(p, y) == pytest.approx(18 / 42)
    # Labels as strings work too; perfect agreement is 1, inversion of a binary task is -1.
    assert M.matthews_corrcoef(list("abcab"), list("abcab")) == pytest.approx(1.0)
    assert M.matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)


@pytest.mark.parametrize("seed", range(5))
def test_pearson_spearman_against_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 40).astype(float).tolist()  # many ties
    y = (np.array(x) + rng.normal(0, 2, 40)).round(1).tolist()
    assert M.average_ranks(x).tolist() == _ref_ranks(x)
    assert M.pearson(x, y) == pytest.approx(_ref_pearson(x, y), abs=1e-12)
    assert M.spearman(x, y) == pytest.approx(_ref_pearson(_ref_ranks(x), _ref_ranks(y)), abs=1e-12)


def test_degenerate_cases_are_zero_not_nan():
    # All labels one class, or all predictions one class: MCC's denominator is 0 → 0.0.
    assert M.matthews_corrcoef([1, 1, 1], [1, 1, 1]) == 0.0
    assert M.matthews_corrcoef([0, 1, 0], [1, 1, 1]) == 0.0
    assert M.matthews_corrcoef([1, 1, 1], [0, 1, 0]) == 0.0
    # No positive anywhere: F1 is 0/0 → 0.0 (scikit-learn's zero_division default).
    assert M.f1([0, 0], [0, 0]) == 0.0
    # A constant side has no correlation: 0.0 (scipy would give NaN and warn).
    assert M.pearson([2.5, 2.5, 2.5], [1, 2, 3]) == 0.0
    assert M.spearman([1, 2, 3], [4, 4, 4]) == 0.0
    for name, value in M.task_metrics("sts-b", [3.0] * 4, [1, 2, 3, 4]).items():
        assert value == 0.0, name
    assert M.task_metrics("cola", [1] * 5, [0, 1, 1, 0, 1]) == {"mcc": 0.0}


def test_bad_inputs_are_errors():
    with pytest.raises(ValueError, match="3 predictions for 2 labels"):
        M.accuracy([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="empty"):
        M.matthews_corrcoef([], [])


def test_task_metrics_keys_and_primary_metric():
    p, y = [1, 0, 1, 1], [1, 0, 0, 1]
    assert M.task_metrics("CoLA", p, y) == {"mcc": pytest.approx(M.matthews_corrcoef(p, y))}
    for task in ("mrpc", "qqp"):
        m = M.task_metrics(task, p, y)
        assert m == {"f1": pytest.approx(0.8), "accuracy": 0.75, "acc_and_f1": pytest.approx(0.775)}
    m = M.task_metrics("sts-b", [0.5, 2.0, 1.0, 4.5], [1.0, 2.0, 3.0, 4.0])
    assert set(m) == {"pearson", "spearman", "corr"}
    assert m["spearman"] == pytest.approx(0.8)
    assert m["corr"] == pytest.approx((m["pearson"] + m["spearman"]) / 2)
    for task in ("sst-2", "rte", "mnli", "qnli", "wnli", "afqmc", "race"):
        assert M.task_metrics(task, p, y) == {"accuracy": 0.75}
    assert [M.primary_metric(t) for t in ("cola", "sts-b", "mrpc", "qqp", "sst-2")] == [
        "mcc",
        "corr",
        "acc_and_f1",
        "acc_and_f1",
        "accuracy",
    ]
    for task in ("cola", "sts-b", "mrpc", "qqp", "sst-2"):
        assert M.primary_metric(task) in M.task_metrics(task, p, y)


def test_spread_over_seeds():
    evals = [
        {"accuracy": 0.5, "f1": 0.1},
        {"accuracy": 0.75, "f1": 0.3},
        {"accuracy": 0.625, "f1": 0.2},
        {"accuracy": 0.25, "f1": 0.2},
    ]
    s = M.spread(evals)
    assert s["accuracy"] == {
        "median": 0.5625,
        "min": 0.25,
        "max": 0.75,
        "std": pytest.approx(math.sqrt(0.0341796875)),
    }
    assert s["f1"]["median"] == pytest.approx(0.2) and s["f1"]["min"] == 0.1
    assert M.spread([{"mcc": 0.3}]) == {"mcc": {"median": 0.3, "min": 0.3, "max": 0.3, "std": 0.0}}
    with pytest.raises(ValueError, match="no runs"):
        M.spread([])
    report, line = M.seeds_report("rte", [7, 8], evals[:2])
    assert report == {
        "task": "rte",
        "runs": 2,
        "seeds": [7, 8],
        "per_run": evals[:2],
        "summary": M.spread(evals[:2]),
    }
    assert line == (
        "over 2 seeds: accuracy median 0.6250 (min 0.5000, max 0.7500), "
        "f1 median 0.2000 (min 0.1000, max 0.3000)"
    )
