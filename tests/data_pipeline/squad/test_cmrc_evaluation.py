"""The CMRC 2018 metric (data_pipeline.squad.cmrc_evaluation) on hand-computed cases: the
mixed segmentation, EM after punctuation removal, F1 by the longest common contiguous run
of segments, the max over gold answers, and missing predictions."""

import json

import pytest

from data_pipeline.squad import cmrc_evaluation as cmrc
from data_pipeline.squad import evaluation as squad_eval


def test_mixed_segmentation():
    seg = cmrc.mixed_segmentation
    assert seg(" CMRC 2018是中文阅读理解 ", True) == [
        "cmrc",
        "2018",
        "是",
        "中",
        "文",
        "阅",
        "读",
        "理",
        "解",
    ]
    # Listed punctuation is a segment, or with removal gone without ending the run.
    assert seg("1:30", False) == ["1", ":", "30"]
    assert seg("1:30", True) == ["130"]
    assert seg("《战国无双3》", False) == ["《", "战", "国", "无", "双", "3", "》"]
    assert seg("《战国无双3》", True) == ["战", "国", "无", "双", "3"]
    # Between CJK characters: words, numbers with inner separators, clitics, other marks.
    assert seg("约1,000.5元(don't)", True) == ["约", "1,000.5", "元", "(", "do", "n't", ")"]
    assert seg("小巴 47M, it's", True) == ["小", "巴", "47m", ",", "it", "'s"]
    # Only U+4E00-U+9FA5 are CJK segments; "…" is not in the list ("……" is one entry).
    assert seg("好…\u9fa6", True) == ["好", "…", "\u9fa6"]


def test_exact_match_removes_punctuation_not_spaces():
    assert cmrc.exact_match(["《战国无双3》"], "战国无双3") == 1
    assert cmrc.exact_match(["Wi-Fi"], "wifi") == 1
    assert cmrc.exact_match(["Wi-Fi"], "wi fi") == 0
    assert cmrc.exact_match(["北京", "北京大学"], " 北京大学。") == 1
    assert cmrc.exact_match(["北京"], "北京.") == 0  # ASCII "." is not in the list


def test_f1_is_the_longest_common_contiguous_run():
    # 3 of 10 characters: P = 1, R = 0.3, F1 = 0.6 / 1.3.
    assert cmrc.f1_score(["任天堂游戏谜之村雨城"], "村雨城") == pytest.approx(0.6 / 1.3)
    # The best gold answer counts.
    assert cmrc.f1_score(["任天堂游戏谜之村雨城", "村雨城"], "村雨城") == 1.0
    # Contiguous, not a subsequence: 北京大学 / 北大 share runs of one; P = 1/2, R = 1/4.
    assert cmrc.f1_score(["北京大学"], "北大") == pytest.approx(1 / 3)
    # Mixed: 1999年 vs 1999年底 → run 2 of 2 and 3: P = 2/3, R = 1, F1 = 0.8.
    assert cmrc.f1_score(["1999年"], "1999年底") == pytest.approx(0.8)
    assert cmrc.f1_score(["Wi-Fi"], "wi fi") == 0.0
    assert cmrc.f1_score(["村雨城"], "") == 0.0
    assert cmrc.f1_score(["《》"], "《》") == 0.0  # nothing left to compare
    # SQuAD's F1 counts whitespace words: on Chinese, one word, so F1 = EM.
    assert squad_eval.f1_v1("村雨城", "任天堂游戏谜之村雨城") == 0


def test_evaluate_averages_over_all_questions(tmp_path, capsys):
    data = {
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "任天堂游戏谜之村雨城",
                        "qas": [
                            {"id": "q1", "answers": [{"text": "村雨城"}, {"text": "谜之村雨城"}]},
                            {"id": "q2", "answers": [{"text": "任天堂游戏"}]},
                            {"id": "q3 ", "answers": [{"text": "游戏"}]},
                        ],
                    }
                ]
            }
        ]
    }
    predictions = {"q1": "之村雨城", "q2": "任天堂游戏"}
    # q1: EM 0, F1 max(2·(3/4)·1/(7/4), 2·1·(4/5)/(9/5)) = max(6/7, 8/9); q2: 1, 1; q3: skipped.
    f1 = 100 * (8 / 9 + 1) / 3
    em = 100 * 1 / 3
    scores = cmrc.evaluate(data, predictions)
    assert scores == {
        "exact_match": pytest.approx(em),
        "f1": pytest.approx(f1),
        "average": pytest.approx((em + f1) / 2),
        "total": 3,
        "skip": 1,
    }
    assert "Unanswered question: q3" in capsys.readouterr().err
    # The command line prints the same; bad input is one line on stderr, exit 2.
    (tmp_path / "data.json").write_text(json.dumps(data))
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    assert cmrc.main([str(tmp_path / "data.json"), str(tmp_path / "pred.json")]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == pytest.approx(f1)
    (tmp_path / "pred.json").write_text("[1]")
    assert cmrc.main([str(tmp_path / "data.json"), str(tmp_path / "pred.json")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"] = []
    with pytest.raises(ValueError, match="q1 has no gold answers"):
        cmrc.evaluate(data, predictions)
