"""data_pipeline.squad.evaluation: the official SQuAD v1.1 / v2.0 scoring rules on hand-made cases
with values worked out by hand, the real dev sets, and the command line."""

import json

import pytest

from data_pipeline.squad import evaluation as S
from tests.support.in_process import run_command


def _dataset(qas, version=None):
    """A one-article, one-paragraph SQuAD JSON; qas: (id, [answer texts]) pairs."""
    out = {
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "c",
                        "qas": [
                            {
                                "id": qid,
                                "question": "q?",
                                "answers": [{"text": t, "answer_start": 0} for t in golds],
                            }
                            for qid, golds in qas
                        ],
                    }
                ],
            }
        ]
    }
    if version is not None:
        out["version"] = version
    return out


# --------------------------------------------------------------------------- normalization


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("The cat", "cat"),
        ("  A  cat  sat on   AN   mat ", "cat sat on mat"),
        ("Hello, world!", "hello world"),
        ("don't", "dont"),
        ("The-end", "theend"),  # punctuation goes first: no word "the" is left
        ("theatre", "theatre"),  # articles only as whole words
        ("Café", "café"),  # accents are not stripped
        ("\u201cHello\u201d", "\u201chello\u201d"),  # curly quotes are not in string.punctuation
        ("", ""),
        ("the a an", ""),
    ],
)
def test_normalize_answer(raw, expected):
    assert S.normalize_answer(raw) == expected


def test_exact_match_articles_punctuation_unicode():
    assert S.exact_match_v1("The cat", "cat") is True
    assert S.compute_exact("cat", "The cat") == 1
    assert S.exact_match_v1("Hello, world!", "hello world") is True
    assert S.exact_match_v1("café", "cafe") is False
    assert S.compute_exact("cafe", "café") == 0
    assert S.f1_v1("café", "cafe") == 0


def test_f1_partial_overlap_by_hand():
    # "w x y z" vs "x y v": 2 common, P = 2/4, R = 2/3, F1 = 2PR/(P+R) = 4/7
    assert S.f1_v1("w x y z", "x y v") == pytest.approx(4 / 7, abs=1e-12)
    assert S.compute_f1("x y v", "w x y z") == pytest.approx(4 / 7, abs=1e-12)
    # "a" is an article: "a b c d" -> [b, c, d] vs [b, c, e]: P = R = 2/3, F1 = 2/3
    assert S.f1_v1("a b c d", "b c e") == pytest.approx(2 / 3, abs=1e-12)
    # repeated tokens count with multiplicity: [x, x, y] vs [x, y, y]: common {x:1, y:1}
    assert S.f1_v1("x x y", "x y y") == pytest.approx(2 / 3, abs=1e-12)
    assert S.f1_v1("x", "y") == 0


def test_empty_sides_v1_versus_v2():
    # v1.1: nothing overlaps, so 0 even when both sides are empty
    assert S.f1_v1("", "") == 0
    # v2.0: empty vs empty is a correct no-answer; empty vs non-empty is 0
    assert S.compute_f1("", "") == 1
    assert S.compute_f1("", "the") == 1  # normalizes to nothing
    assert S.compute_f1("cat", "") == 0
    assert S.compute_f1("", "cat") == 0
    assert S.get_tokens("") == []


# --------------------------------------------------------------------------- v1.1


def test_v1_multiple_gold_answers_take_the_max():
    data = _dataset(
        [("q1", ["Denver Broncos", "Broncos", "the Denver Broncos team"]), ("q2", ["big red dog"])]
    )
    preds = {"q1": "broncos", "q2": "red dog"}
    # q1: EM 1 (matches "Broncos"), F1 1. q2: EM 0, F1: P=1, R=2/3 -> 0.8
    out = S.evaluate(data, preds)
    assert list(out) == ["exact_match", "f1"]
    assert out["exact_match"] == pytest.approx(50.0)
    assert out["f1"] == pytest.approx(90.0)


def test_v1_missing_prediction_scores_zero_and_warns(capsys):
    data = _dataset([("q1", ["Paris"]), ("q2", ["Rome"])])
    out = S.evaluate(data, {"q1": "paris", "extra": "ignored"})
    assert out == {"exact_match": 50.0, "f1": 50.0}
    assert "Unanswered question q2 will receive score 0." in capsys.readouterr().err


# --------------------------------------------------------------------------- v2.0


def test_v2_empty_prediction_unanswerable_scores_1_answerable_scores_0():
    data = _dataset([("q1", []), ("q2", ["Paris"])], version="v2.0")
    out = S.evaluate(data, {"q1": "", "q2": ""})
    assert out == {
        "exact": 50.0,
        "f1": 50.0,
        "total": 2,
        "HasAns_exact": 0.0,
        "HasAns_f1": 0.0,
        "HasAns_total": 1,
        "NoAns_exact": 100.0,
        "NoAns_f1": 100.0,
        "NoAns_total": 1,
    }
    # an answer to an unanswerable question scores 0
    out = S.evaluate(data, {"q1": "Paris", "q2": "Paris"})
    assert (out["exact"], out["NoAns_exact"], out["HasAns_exact"]) == (50.0, 0.0, 100.0)


def test_v2_gold_answers_that_normalize_to_nothing_are_dropped():
    # the gold "the" normalizes to "": dropped, so the question keeps only "cat"
    data = _dataset([("q1", ["the", "cat"])], version="v2.0")
    assert S.evaluate(data, {"q1": ""})["exact"] == 0.0
    assert S.evaluate(data, {"q1": "a cat"})["exact"] == 100.0


def test_version_detection():
    answerable = _dataset([("q1", ["x"])])
    assert S.detect_version(answerable) == "1.1"
    assert S.detect_version(_dataset([("q1", ["x"])], version="v2.0")) == "2.0"
    answerable["data"][0]["paragraphs"][0]["qas"][0]["is_impossible"] = False
    assert S.detect_version(answerable) == "2.0"
    assert list(S.evaluate(answerable, {"q1": "x"})) == [
        "exact",
        "f1",
        "total",
        "HasAns_exact",
        "HasAns_f1",
        "HasAns_total",
    ]
    assert list(S.evaluate(answerable, {"q1": "x"}, version="1.1")) == ["exact_match", "f1"]


def test_v2_missing_prediction_scored_as_empty(capsys):
    data = _dataset([("q1", []), ("q2", ["Paris"])], version="v2.0")
    out = S.evaluate(data, {})
    assert (out["exact"], out["NoAns_exact"], out["HasAns_exact"]) == (50.0, 100.0, 0.0)
    err = capsys.readouterr().err
    assert "Missing prediction for q1" in err and "Missing prediction for q2" in err


# Five questions, worked out by hand:
#   qid  gold           pred       na_prob  raw EM  raw F1   diff for best-threshold scan
#   q1   Paris          Paris      0.1      1       1        +1 / +1
#   q2   big red dog    red dog    0.3      0       0.8      +0 / +0.8
#   q3   (none)         London     0.5      0       0        -1 / -1
#   q4   (none)         ""         0.7      1       1         0 /  0
#   q5   blue           green      0.9      0       0         0 /  0
# Scan starts at #no-answer = 2: EM 2 -> 3 (q1) -> 3 -> 2 -> 2 -> 2: best 3/5 at 0.1;
# F1 2 -> 3 (q1) -> 3.8 (q2) -> 2.8 -> 2.8 -> 2.8: best 3.8/5 at 0.3.
THRESH_DATA = _dataset(
    [("q1", ["Paris"]), ("q2", ["big red dog"]), ("q3", []), ("q4", []), ("q5", ["blue"])],
    version="v2.0",
)
THRESH_PREDS = {"q1": "Paris", "q2": "red dog", "q3": "London", "q4": "", "q5": "green"}
THRESH_NA = {"q1": 0.1, "q2": 0.3, "q3": 0.5, "q4": 0.7, "q5": 0.9}


def test_v2_default_threshold_no_na_probs():
    out = S.evaluate(THRESH_DATA, THRESH_PREDS)
    assert list(out) == [
        "exact",
        "f1",
        "total",
        "HasAns_exact",
        "HasAns_f1",
        "HasAns_total",
        "NoAns_exact",
        "NoAns_f1",
        "NoAns_total",
    ]
    assert out["exact"] == pytest.approx(40.0)
    assert out["f1"] == pytest.approx(56.0)
    assert out["total"] == 5
    assert out["HasAns_exact"] == pytest.approx(100 / 3)
    assert out["HasAns_f1"] == pytest.approx(60.0)
    assert out["HasAns_total"] == 3
    assert out["NoAns_exact"] == pytest.approx(50.0)
    assert out["NoAns_f1"] == pytest.approx(50.0)
    assert out["NoAns_total"] == 2


def test_v2_threshold_and_best_threshold_by_hand():
    # na_prob > 0.4 -> q3, q4, q5 predicted no-answer: q3 1, q4 1, q5 0
    out = S.evaluate(THRESH_DATA, THRESH_PREDS, na_probs=THRESH_NA, na_prob_thresh=0.4)
    assert list(out)[-4:] == ["best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"]
    assert out["exact"] == pytest.approx(60.0)  # 1 + 0 + 1 + 1 + 0
    assert out["f1"] == pytest.approx(76.0)  # 1 + 0.8 + 1 + 1 + 0
    assert out["HasAns_exact"] == pytest.approx(100 / 3)
    assert out["HasAns_f1"] == pytest.approx(60.0)
    assert out["NoAns_exact"] == pytest.approx(100.0)
    assert out["NoAns_f1"] == pytest.approx(100.0)
    # best_* use the raw scores: the same whatever na_prob_thresh is
    assert out["best_exact"] == pytest.approx(60.0)
    assert out["best_exact_thresh"] == 0.1
    assert out["best_f1"] == pytest.approx(76.0)
    assert out["best_f1_thresh"] == 0.3
    best = S.best_threshold(THRESH_DATA, THRESH_PREDS, THRESH_NA)
    assert best == {
        "best_exact": pytest.approx(60.0),
        "best_exact_thresh": 0.1,
        "best_f1": pytest.approx(76.0),
        "best_f1_thresh": 0.3,
    }
    assert S.evaluate(THRESH_DATA, THRESH_PREDS, na_probs=THRESH_NA)["best_f1_thresh"] == 0.3


def test_v2_best_threshold_when_predicting_nothing_is_best():
    # every kept answer is wrong: the scan never beats its start (#no-answer / total)
    data = _dataset([("q1", []), ("q2", ["x"])], version="v2.0")
    best = S.best_threshold(data, {"q1": "y", "q2": "z"}, {"q1": 0.2, "q2": 0.6})
    assert best == {
        "best_exact": 50.0,
        "best_exact_thresh": 0.0,
        "best_f1": 50.0,
        "best_f1_thresh": 0.0,
    }


def test_tuned_threshold_applied_to_predictions_gives_the_best_score():
    tuned = S.apply_threshold(THRESH_PREDS, THRESH_NA, 0.3)
    assert tuned == {"q1": "Paris", "q2": "red dog", "q3": "", "q4": "", "q5": ""}
    out = S.evaluate(THRESH_DATA, tuned)
    assert out["f1"] == pytest.approx(76.0)
    assert out["exact"] == pytest.approx(60.0)
    # a question without a null score keeps its prediction
    assert S.apply_threshold({"a": "x", "b": "y"}, {"a": 5.0}, 1.0) == {"a": "", "b": "y"}


# --------------------------------------------------------------------------- real data


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def test_real_v1_first_gold_answer_scores_100(shared_data):
    data = _load(shared_data / "squad" / "dev-v1.1.json")
    preds = {
        qa["id"]: qa["answers"][0]["text"]
        for art in data["data"]
        for par in art["paragraphs"]
        for qa in par["qas"]
    }
    assert len(preds) == 10570
    assert S.evaluate(data, preds) == {"exact_match": 100.0, "f1": 100.0}


def test_real_v2_empty_everywhere(shared_data):
    data = _load(shared_data / "squad" / "dev-v2.0.json")
    preds = {qa["id"]: "" for art in data["data"] for par in art["paragraphs"] for qa in par["qas"]}
    out = S.evaluate(data, preds)
    assert out["total"] == 11873
    assert out["NoAns_total"] == 5945 and out["HasAns_total"] == 5928
    assert abs(out["exact"] - 50.07) < 0.005
    assert abs(out["f1"] - 50.07) < 0.005
    assert out["exact"] == pytest.approx(100 * 5945 / 11873)
    assert out["NoAns_exact"] == 100.0
    assert out["HasAns_exact"] == 0.0


def test_real_v2_perfect_predictions(shared_data):
    data = _load(shared_data / "squad" / "dev-v2.0.json")
    preds = {
        qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "")
        for art in data["data"]
        for par in art["paragraphs"]
        for qa in par["qas"]
    }
    out = S.evaluate(data, preds)
    assert out["exact"] == 100.0 and out["f1"] == 100.0
    assert out["HasAns_exact"] == 100.0 and out["NoAns_exact"] == 100.0


# --------------------------------------------------------------------------- command line


def _cli(*args):
    return run_command("-m", "data_pipeline.squad.evaluation", *args, timeout=120)


def _write(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_cli_v1(tmp_path):
    data = _write(
        tmp_path / "data.json",
        _dataset([("q1", ["Denver Broncos"]), ("q2", ["big red dog"])], "1.1"),
    )
    preds = _write(tmp_path / "preds.json", {"q1": "the Denver Broncos", "q2": "red dog"})
    res = _cli(data, preds)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert list(out) == ["exact_match", "f1"]
    assert out["exact_match"] == pytest.approx(50.0)
    assert out["f1"] == pytest.approx(90.0)


def test_cli_v2_with_na_prob_file(tmp_path):
    data = _write(tmp_path / "data.json", THRESH_DATA)
    preds = _write(tmp_path / "preds.json", THRESH_PREDS)
    na = _write(tmp_path / "na.json", THRESH_NA)
    res = _cli(data, preds, "--na_prob_file", na, "--na_prob_thresh", "0.4")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert list(out) == [
        "exact",
        "f1",
        "total",
        "HasAns_exact",
        "HasAns_f1",
        "HasAns_total",
        "NoAns_exact",
        "NoAns_f1",
        "NoAns_total",
        "best_exact",
        "best_exact_thresh",
        "best_f1",
        "best_f1_thresh",
    ]
    assert out["exact"] == pytest.approx(60.0)
    assert out["f1"] == pytest.approx(76.0)
    assert out["total"] == 5
    assert out["best_exact_thresh"] == 0.1 and out["best_f1_thresh"] == 0.3
    assert out["best_f1"] == pytest.approx(76.0)


def test_cli_v2_real_data_empty_predictions(shared_data, tmp_path):
    path = shared_data / "squad" / "dev-v2.0.json"
    data = _load(path)
    preds = _write(
        tmp_path / "preds.json",
        {qa["id"]: "" for art in data["data"] for par in art["paragraphs"] for qa in par["qas"]},
    )
    res = _cli(path, preds)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["total"] == 11873 and out["NoAns_exact"] == 100.0
    assert abs(out["exact"] - 50.07) < 0.005


@pytest.mark.parametrize("content", ['["not", "a", "mapping"]', '{"q1": 3}', "{not json"])
def test_cli_bad_predictions_file(tmp_path, content):
    data = _write(tmp_path / "data.json", _dataset([("q1", ["x"])]))
    bad = tmp_path / "bad_predictions.json"
    bad.write_text(content, encoding="utf-8")
    res = _cli(data, bad)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.startswith("error: ")
    assert "bad_predictions.json" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_cli_missing_file(tmp_path):
    preds = _write(tmp_path / "preds.json", {"q1": "x"})
    res = _cli(tmp_path / "no_such_data.json", preds)
    assert res.returncode == 2
    assert res.stderr.startswith("error: ") and "no_such_data.json" in res.stderr


def test_main_in_process(tmp_path, capsys):
    data = _write(tmp_path / "data.json", _dataset([("q1", []), ("q2", ["x"])], "v2.0"))
    preds = _write(tmp_path / "preds.json", {"q1": "", "q2": "x"})
    assert S.main([str(data), str(preds)]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == 100.0
