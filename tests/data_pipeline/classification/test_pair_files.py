"""Sentence-pair files for embedding training (data_pipeline.classification.pair_files):
STS-B scored pairs and MRPC / AFQMC positives read from the real benchmark files, the
user's tsv / csv / jsonl, and every bad row as one error naming file:line."""

import json

import pytest

from data_pipeline.classification import pair_files
from tests.support.harness import SHARED_DATA

GLUE = SHARED_DATA / "glue"
AFQMC = SHARED_DATA / "chinese" / "AFQMC"


def _tsv_rows(path, n):
    """The header and the first n rows of a GLUE tsv, split on tabs."""
    lines = path.read_text(encoding="utf-8-sig").splitlines()[: n + 1]
    return [line.split("\t") for line in lines]


def test_sts_b_as_tsv_and_as_its_benchmark_layout_agree():
    path = GLUE / "STS-B" / "dev.tsv"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/data)")
    as_tsv = pair_files.scored_pairs(str(path))  # auto: tsv, columns sentence1/2, score
    as_sts = pair_files.scored_pairs(str(path), "sts-b", split="dev")
    assert as_tsv == as_sts and len(as_tsv) == 1500
    rows = _tsv_rows(path, 3)
    assert as_tsv.texts_a[:3] == [r[7] for r in rows[1:]]
    assert as_tsv.texts_b[:3] == [r[8] for r in rows[1:]]
    assert as_tsv.scores[:3] == [float(r[9]) for r in rows[1:]]
    assert as_tsv.lines[:3] == [2, 3, 4]
    assert all(0 <= s <= 5 for s in as_tsv.scores)


def test_mrpc_and_afqmc_positives_are_the_label_1_rows():
    mrpc, afqmc = GLUE / "MRPC" / "train.tsv", AFQMC / "train.txt"
    if not mrpc.exists() or not afqmc.exists():
        pytest.skip(f"{mrpc} or {afqmc} is absent (../shared/data)")
    pairs = pair_files.positive_pairs(str(mrpc), "mrpc")
    rows = [r for r in _tsv_rows(mrpc, 10_000)[1:] if r[0] == "1"]
    assert len(pairs) == len(rows) == 2474  # MRPC train's 3,668 pairs, 67.4% paraphrases
    assert pairs.texts_a[:5] == [r[3] for r in rows[:5]]
    assert pairs.texts_b[:5] == [r[4] for r in rows[:5]]
    assert set(pairs.scores) == {5.0}
    zh = pair_files.positive_pairs(str(afqmc), "afqmc")
    lines = afqmc.read_text(encoding="utf-8").splitlines()
    assert len(zh) == sum(line.split("\t")[2] == "1" for line in lines)
    assert lines[zh.lines[0] - 1].split("\t")[:2] == [zh.texts_a[0], zh.texts_b[0]]


def test_user_files_tsv_csv_jsonl(tmp_path):
    (tmp_path / "p.tsv").write_text("q\tp\tl\na b\tc\t1\nd\te\t0\nf\tg\t1\n")
    (tmp_path / "p.csv").write_text('q,p,s\n"a, b",c,2.5\nd,e,0\n')
    rows = [{"q": "a", "p": "b", "s": 4}, {"q": "c", "p": "d", "s": "1.5"}]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    tsv = pair_files.positive_pairs(str(tmp_path / "p.tsv"), "auto", "q", "p", "l", "1")
    assert (tsv.texts_a, tsv.texts_b, tsv.lines) == (["a b", "f"], ["c", "g"], [2, 4])
    every = pair_files.positive_pairs(str(tmp_path / "p.tsv"), "tsv", "q", "p", None)
    assert len(every) == 3  # no label column: every row is a positive pair
    csv = pair_files.scored_pairs(str(tmp_path / "p.csv"), "auto", "q", "p", "s", max_score=5)
    assert (csv.texts_a, csv.scores) == (["a, b", "d"], [2.5, 0.0])
    jsonl = pair_files.scored_pairs(str(tmp_path / "p.jsonl"), "auto", "q", "p", "s")
    assert (jsonl.texts_b, jsonl.scores, jsonl.lines) == (["b", "d"], [4.0, 1.5], [1, 2])
    assert jsonl.take(1).texts_a == ["a"]


@pytest.mark.parametrize(
    "content, call, message",
    [
        (
            "sentence1\tsentence2\tscore\na\tb\t4\nc\t\t3\n",
            "scored",
            r"p\.tsv:3: the pair's second text is missing or empty",
        ),
        (
            "sentence1\tsentence2\tscore\na\tb\tfour\n",
            "scored",
            r"p\.tsv:2: score 'four' \(column 'score'\) is not a number",
        ),
        (
            "sentence1\tsentence2\tscore\na\tb\t5.5\n",
            "scored",
            r"p\.tsv:2: score 5\.5 is outside \[0, 5\.0\]",
        ),
        ("sentence1\tsentence2\tscore\na\tb\tnan\n", "scored", r"p\.tsv:2: score nan is outside"),
        (
            "sentence1\tsentence2\nab\tcd\n",
            "scored",
            r"p\.tsv:1: label_column='score' is not a column",
        ),
        (
            "sentence1\tsentence2\tlabel\na\tb\t0\nc\td\t0\n",
            "positive",
            r"p\.tsv: no positive pairs \(column 'label' is never '1'\)",
        ),
        (
            "sentence1\tsentence2\tlabel\na\tb\t0\n \tx\t1\n",
            "positive",
            r"p\.tsv:3: the pair's first text is missing or empty",
        ),
        ("sentence1\tsentence2\tlabel\na\tb\n", "positive", r"p\.tsv:2: 2 fields, expected 3"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, content, call, message):
    path = tmp_path / "p.tsv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        if call == "scored":
            pair_files.scored_pairs(str(path))
        else:
            pair_files.positive_pairs(str(path), label_column="label")


def test_a_format_without_what_the_objective_needs_is_refused(tmp_path):
    path = str(tmp_path / "x.tsv")  # refused before the file is read
    with pytest.raises(ValueError, match="mrpc files have labels, not similarity scores"):
        pair_files.scored_pairs(path, "mrpc")
    with pytest.raises(ValueError, match="sts-b pairs have scores, not paraphrase labels"):
        pair_files.positive_pairs(path, "sts-b")
    with pytest.raises(ValueError, match="format 'xml' is not one of"):
        pair_files.resolve_format(path, "xml")
    assert [pair_files.resolve_format(p, "auto") for p in ("a.JSONL", "b.csv", "c.txt")] == [
        "jsonl",
        "csv",
        "tsv",
    ]


def test_pairs_to_predict_keep_their_scores_only_when_the_file_has_them(tmp_path):
    """prediction_pairs: a score column read (and checked) as scored_pairs does; none, no
    scores (STS-B's test.tsv layout: index, sentence1, sentence2); label files refused."""
    tsv = tmp_path / "s.tsv"
    tsv.write_text("sentence1\tsentence2\tscore\na b\tc d\t3.5\ne\tf\t0\n", encoding="utf-8")
    scored = pair_files.prediction_pairs(str(tsv))
    assert (scored.texts_a, scored.scores, scored.lines) == (["a b", "e"], [3.5, 0.0], [2, 3])
    test = tmp_path / "test.tsv"
    test.write_text("index\tsentence1\tsentence2\n0\ta b\tc d\n1\te\tf\n", encoding="utf-8")
    for fmt in ("auto", "sts-b"):
        plain = pair_files.prediction_pairs(str(test), fmt)
        assert (plain.texts_b, plain.scores, plain.lines) == (["c d", "f"], None, [2, 3])
        assert len(plain) == 2 and plain.take(1).texts_a == ["a b"]
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(
        json.dumps({"q": "x", "d": "y", "sim": 1}) + "\n" + json.dumps({"q": "z", "d": "w"}) + "\n"
    )
    with pytest.raises(ValueError, match=r"p.jsonl:2: label_column='sim' is not a key"):
        pair_files.prediction_pairs(str(jsonl), "auto", "q", "d", "sim")  # (scored: every row)
    assert pair_files.prediction_pairs(str(jsonl), "auto", "q", "d").scores is None
    bad = tmp_path / "bad.csv"
    bad.write_text("sentence1,sentence2,score\na,b,7\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: score 7.0 is outside \[0, 5.0\]"):
        pair_files.prediction_pairs(str(bad))
    with pytest.raises(ValueError, match="mrpc files have labels, not similarity scores"):
        pair_files.prediction_pairs(str(tsv), "mrpc")
