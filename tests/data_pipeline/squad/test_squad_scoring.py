"""data_pipeline.squad.scoring: the v2.0 no-answer threshold tuned on held-out data (with
the "answer nothing" case the official search gets wrong for null odds), and run_squad's
report on hand-made sets with values worked out by hand."""

import json

import pytest

from data_pipeline.squad import scoring


def _v2(questions):
    """A SQuAD v2.0 JSON; questions: (id, gold answer or None for unanswerable)."""
    return {
        "version": "v2.0",
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
                                "is_impossible": gold is None,
                                "answers": []
                                if gold is None
                                else [{"text": gold, "answer_start": 0}],
                            }
                            for qid, gold in questions
                        ],
                    }
                ],
            }
        ],
    }


def _nbest(best):
    """nbest {qid: [the best span, then ""]} from {qid: best span text}."""
    return {qid: [{"text": text}, {"text": ""}] for qid, text in best.items()}


def test_tuned_threshold_separates_answerable_from_unanswerable():
    data = _v2([("a", "red"), ("b", "blue"), ("n", None), ("m", None)])
    nbest = _nbest({"a": "red", "b": "blue", "n": "green", "m": "gray"})
    # Answerable questions have low null odds, unanswerable ones high: a threshold
    # between -1 and 2 answers a and b and says nothing for n and m (F1 100).
    odds = {"a": -3.0, "b": -1.0, "n": 2.0, "m": 4.0}
    threshold, f1 = scoring.tune_threshold(data, nbest, odds)
    assert f1 == 100.0 and -1.0 <= threshold < 2.0


def test_answering_nothing_stays_below_every_null_odds():
    # Every span is wrong: answering nothing is best (F1 50: the unanswerable half). The
    # official search returns 0.0 then, which would answer the negative odds questions.
    data = _v2([("a", "red"), ("n", None)])
    nbest = _nbest({"a": "wrong", "n": "also wrong"})
    odds = {"a": -2.0, "n": -5.0}
    threshold, f1 = scoring.tune_threshold(data, nbest, odds)
    assert threshold == -6.0 and f1 == 50.0


def test_report_v1_and_v2(tmp_path):
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps({"version": "1.1", "data": _v2([("a", "red")])["data"]}))
    assert scoring.evaluation_report(str(v1), {"a": "red"}, {}, {}, False, 0.0) == {
        "scores": {"exact_match": 100.0, "f1": 100.0}
    }
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps(_v2([("a", "red"), ("n", None)])))
    tune = tmp_path / "tune.json"
    tune.write_text(json.dumps(_v2([("b", "blue"), ("m", None)])))
    nbest = _nbest({"a": "red", "n": "green"})
    odds = {"a": 1.0, "n": 3.0}  # at threshold 0 both say nothing: F1 50
    predictions = {"a": "", "n": ""}
    report = scoring.evaluation_report(
        str(v2),
        predictions,
        nbest,
        odds,
        True,
        0.0,
        (str(tune), _nbest({"b": "blue", "m": "gray"}), {"b": 1.5, "m": 2.0}),
    )
    assert report["scores"]["f1"] == 50.0
    assert report["at_threshold"] == {"threshold": 0.0, **report["scores"]}
    tuned = report["tuned_threshold"]
    assert tuned["tuned_on"] == str(tune) and tuned["tuning_set_f1"] == 100.0
    # tuned on the held-out file (b answered up to odds 1.5), then applied here: a (odds
    # 1) is answered, n (odds 3) is not, both right
    assert tuned["threshold"] == 1.5 and tuned["f1"] == 100.0 and tuned["HasAns_f1"] == 100.0
    assert report["oracle_threshold_on_this_set"]["best_f1"] == 100.0
    assert "tuned_threshold" not in scoring.evaluation_report(
        str(v2), predictions, nbest, odds, True, 0.0
    )


def test_read_dataset_names_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        scoring.read_dataset(str(tmp_path / "nowhere.json"))
