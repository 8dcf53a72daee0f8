"""data_pipeline.classification readers: GLUE/Chinese/RACE readers on the real files (counts as in
../shared/data/README.md), each layout's quirks, the user's csv/tsv/jsonl, and malformed
rows reported as file:line."""

import json

import pytest

from data_pipeline.classification.benchmark_files import (
    is_regression,
    label_names,
    read_task,
    read_task_file,
    splits,
)
from data_pipeline.classification.examples import Example
from data_pipeline.classification.multiple_choice import read_multiple_choice_jsonl, read_race
from data_pipeline.classification.user_files import discover_labels, read_delimited, read_jsonl

# (task, folder under ../shared/data, train count, dev count, test count, label counts dev)
REAL = [
    ("cola", "glue/CoLA", 8551, 1043, 1063, {"1": 721, "0": 322}),
    ("sst-2", "glue/SST-2", 67349, 872, 1821, {"1": 444, "0": 428}),
    ("mrpc", "glue/MRPC", 3668, 408, 1725, {"1": 279, "0": 129}),
    ("rte", "glue/RTE", 2490, 277, 3000, {"entailment": 146, "not_entailment": 131}),
    ("sts-b", "glue/STS-B", 5749, 1500, 1379, None),
    ("chnsenticorp", "chinese/ChnSentiCorp", 9600, 1200, 1200, {"negative": 607, "positive": 593}),
    ("afqmc", "chinese/AFQMC", 34334, 4316, 3861, {"0": 2978, "1": 1338}),
]


@pytest.mark.parametrize(
    "task,folder,n_train,n_dev,n_test,dev_labels", REAL, ids=[r[0] for r in REAL]
)
def test_real_files_counts_and_labels(
    shared_data, task, folder, n_train, n_dev, n_test, dev_labels
):
    data_dir = str(shared_data / folder)
    train, dev, test = (read_task(data_dir, task, s) for s in ("train", "dev", "test"))
    assert (len(train), len(dev), len(test)) == (n_train, n_dev, n_test)
    assert all(e.label is None for e in test)
    # Test guids carry the file's index column (the GLUE submission key), in order.
    if task not in ("afqmc",):
        assert [e.guid for e in test[:3]] == ["test-0", "test-1", "test-2"]
    pair = task in ("mrpc", "rte", "sts-b", "afqmc")
    for e in train + dev + test:
        assert e.text_a and "\t" not in e.text_a and "\n" not in e.text_a
        assert (e.text_b is not None) == pair
    if dev_labels is None:
        assert all(isinstance(e.label, float) and 0 <= e.label <= 5 for e in train + dev)
    else:
        counts = {}
        for e in dev:
            counts[e.label] = counts.get(e.label, 0) + 1
        assert counts == dev_labels
        assert set(counts) <= set(label_names(task))


def test_real_file_quirks(shared_data):
    glue = shared_data / "glue"
    # MRPC: the BOM does not leak into the header check; a sentence opening a quote that
    # never closes stays one field (QUOTE_NONE), the next row is not swallowed.
    dev = read_task(str(glue / "MRPC"), "mrpc", "dev")
    assert (
        dev[0].text_b == '"The foodservice pie business does not fit our long-term growth strategy.'
    )
    assert dev[0].label == "1"
    # CoLA: no header, so the first row is an example; dev.tsv has no final newline.
    cola = read_task(str(glue / "CoLA"), "cola", "dev")
    assert cola[0] == Example("dev-0", "The sailors rode the breeze clear of the rocks.", None, "1")
    # STS-B: ten columns, the score last, parsed as float.
    sts = read_task(str(glue / "STS-B"), "sts-b", "dev")
    assert sts[0] == Example(
        "dev-0", "A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.", 5.0
    )
    # Chinese text survives unchanged.
    afqmc = read_task(str(shared_data / "chinese" / "AFQMC"), "afqmc", "dev")
    assert afqmc[0] == Example("dev-0", "双十一花呗提额在哪", "里可以提花呗额度", "0")


def test_race_real_file(shared_data):
    examples = read_race(str(shared_data / "race" / "expmrc-race-dev.json"))
    assert len(examples) == 561
    first = examples[0]
    assert first.guid == "00052cc8-0" and first.label == 2  # answer "C"
    assert first.question.startswith("The first two paragraphs tell us")
    assert len(first.options) == 4 and first.context
    # ExpMRC ids are hex digests: the level is not derivable.
    assert {e.level for e in examples} == {None}
    # Some questions have fewer than 4 options; every label points into its options.
    assert sorted({len(e.options) for e in examples}) == [2, 3, 4]
    assert all(0 <= e.label < len(e.options) for e in examples)
    counts = [sum(e.label == k for e in examples) for k in range(4)]
    assert counts == [124, 149, 160, 128]


def test_label_names_and_regression():
    assert label_names("mnli") == ["contradiction", "entailment", "neutral"]
    assert label_names("RTE") == label_names("qnli") == ["entailment", "not_entailment"]
    for task in ("cola", "sst-2", "mrpc", "qqp", "wnli", "afqmc"):
        assert label_names(task) == ["0", "1"]
    assert label_names("sts-b") is None and is_regression("sts-b")
    with pytest.raises(ValueError, match="'squad' is not one of"):
        label_names("squad")
    assert splits("mnli") == [
        "train",
        "dev_matched",
        "dev_mismatched",
        "test_matched",
        "test_mismatched",
    ]


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return str(path)


def test_glue_layouts_from_synthetic_files(tmp_path):
    # MNLI: 12-column train, 16-column dev_matched/dev_mismatched, gold label last.
    parse = ["(x)"] * 4
    train_header = [
        "index",
        "promptID",
        "pairID",
        "genre",
        "s1b",
        "s2b",
        "s1p",
        "s2p",
        "sentence1",
        "sentence2",
        "label1",
        "gold_label",
    ]
    train_row = ["0", "1", "1e", "gov", *parse, "A man.", 'He "said', "neutral", "neutral"]
    d = tmp_path / "mnli"
    d.mkdir()
    _write(d / "train.tsv", "\t".join(train_header) + "\n" + "\t".join(train_row) + "\n")
    dev_row = ["7", "1", "1e", "gov", *parse, "A.", "B.", *["entailment"] * 5, "contradiction"]
    for split in ("dev_matched", "dev_mismatched"):
        _write(
            d / f"{split}.tsv", "\t".join(["index"] + ["c"] * 15) + "\n" + "\t".join(dev_row) + "\n"
        )
    assert read_task(str(d), "mnli", "train") == [
        Example("train-0", "A man.", 'He "said', "neutral")
    ]
    assert read_task(str(d), "mnli", "dev") == [
        Example("dev_matched-7", "A.", "B.", "contradiction")
    ]
    assert read_task(str(d), "mnli", "dev_mismatched")[0].label == "contradiction"
    # QQP, QNLI, WNLI headers and columns.
    q = tmp_path / "qqp.tsv"
    _write(q, "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n5\t1\t2\tWhy?\tHow?\t1\n")
    assert read_task_file(str(q), "qqp", "dev") == [Example("dev-5", "Why?", "How?", "1")]
    q = tmp_path / "qnli.tsv"
    _write(q, "index\tquestion\tsentence\tlabel\n3\tWho?\tHim.\tnot_entailment\n")
    assert read_task_file(str(q), "qnli", "train")[0].label == "not_entailment"
    q = tmp_path / "wnli.tsv"
    _write(q, "index\tsentence1\tsentence2\n0\tA\tB\n")
    assert read_task_file(str(q), "wnli", "test") == [Example("test-0", "A", "B", None)]
    # CRLF line ends are tolerated.
    q = tmp_path / "sst.tsv"
    _write(q, "sentence\tlabel\r\ngood .\t1\r\n")
    assert read_task_file(str(q), "sst-2", "train") == [Example("train-0", "good .", None, "1")]


@pytest.mark.parametrize(
    "task,split,text,line,message",
    [
        ("cola", "train", "gj04\t1\t\tFine.\ngj04\t1\tOops.\n", 2, "3 tab-separated fields"),
        ("cola", "train", "gj04\t1\t\tFine.\ngj04\tyes\t\tBad label.\n", 2, "label 'yes'"),
        (
            "rte",
            "dev",
            "index\tsentence1\tsentence2\tlabel\n0\tA\tB\tneutral\n",
            2,
            "label 'neutral'",
        ),
        (
            "sts-b",
            "train",
            "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
            "sentence1\tsentence2\tscore\n0\tg\tf\ty\to\ts\ts\tA\tB\tfive\n",
            2,
            "'five'",
        ),
        (
            "sts-b",
            "train",
            "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
            "sentence1\tsentence2\tscore\n0\tg\tf\ty\to\ts\ts\tA\tB\t7.5\n",
            2,
            "outside",
        ),
        ("sst-2", "dev", "text\tlabel\ngood\t1\n", 1, "header"),
        ("afqmc", "train", "a\tb\t0\na\tb\n", 2, "2 tab-separated fields"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, task, split, text, line, message):
    path = _write(tmp_path / "bad.tsv", text)
    with pytest.raises(ValueError, match=rf"bad\.tsv:{line}: .*{message}"):
        read_task_file(path, task, split)


def test_bad_utf8_empty_file_and_missing_file(tmp_path):
    path = _write(tmp_path / "bad.tsv", b"sentence\tlabel\ngood\t1\nbad \xff\t0\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:3: invalid UTF-8"):
        read_task_file(path, "sst-2", "train")
    for text in ("", "sentence\tlabel\n"):
        path = _write(tmp_path / "empty.tsv", text)
        with pytest.raises(ValueError, match="no examples"):
            read_task_file(path, "sst-2", "train")
    with pytest.raises(FileNotFoundError):
        read_task(str(tmp_path), "rte", "train")
    with pytest.raises(ValueError, match="split 'validation' is not one of"):
        read_task(str(tmp_path), "rte", "validation")


def test_generic_csv_uses_csv_quoting(tmp_path):
    text = 'id,review,label\n1,"Good, really ""good"".",pos\n2,"two\nlines",neg\n3,plain,pos\n'
    path = _write(tmp_path / "data.csv", text)
    examples = read_delimited(path, "review", label_column="label")
    assert [(e.text_a, e.label) for e in examples] == [
        ('Good, really "good".', "pos"),
        ("two\nlines", "neg"),
        ("plain", "pos"),
    ]
    assert discover_labels(examples) == ["neg", "pos"]
    # Line numbers count physical lines, past the multi-line field.
    bad = _write(tmp_path / "bad.csv", text + "4,too,many,fields\n")
    with pytest.raises(ValueError, match=r"bad\.csv:6: 4 fields, expected 3"):
        read_delimited(bad, "review", label_column="label")
    with pytest.raises(
        ValueError,
        match=r"data\.csv:1: label_column='gold' is not a "
        r"column; the header has \['id', 'review'",
    ):
        read_delimited(path, "review", label_column="gold")
    with pytest.raises(ValueError, match="empty file"):
        read_delimited(_write(tmp_path / "empty.csv", ""), "review")
    # A BOM (Excel's csv) does not become part of the first column's name.
    bom = _write(tmp_path / "bom.csv", "\ufeffa,b,y\nx,z,1.5\n")
    assert read_delimited(bom, "a", "b", "y", regression=True) == [Example("row-0", "x", "z", 1.5)]


def test_generic_tsv_keeps_quotes_as_text(tmp_path):
    path = _write(
        tmp_path / "data.tsv", 'a\tb\tlabel\n"open quote\tsecond\t1\nnext\trow\t10\nthird\tx\t2\n'
    )
    examples = read_delimited(path, "a", "b", "label", delimiter="\t")
    assert [e.text_a for e in examples] == ['"open quote', "next", "third"]
    assert discover_labels(examples) == ["1", "2", "10"]  # numeric order
    bad = _write(tmp_path / "bad.tsv", "a\tlabel\nx\t1.5\ny\thigh\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:3: label 'high' is not a number"):
        read_delimited(bad, "a", label_column="label", delimiter="\t", regression=True)


def test_generic_jsonl(tmp_path):
    lines = [{"q": "Is it?", "p": "Yes.", "y": 1}, {"q": "No?", "p": "No.", "y": 0}]
    path = _write(tmp_path / "d.jsonl", "\n".join(json.dumps(o) for o in lines) + "\n\n")
    examples = read_jsonl(path, "q", "p", "y")
    assert examples == [
        Example("row-0", "Is it?", "Yes.", "1"),
        Example("row-1", "No?", "No.", "0"),
    ]
    bad = _write(tmp_path / "bad.jsonl", json.dumps(lines[0]) + '\n{"q": "x"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: label_column='y' is not a key"):
        read_jsonl(bad, "q", label_column="y")
    bad = _write(tmp_path / "bad2.jsonl", '{"q": "x", "y": 1}\n{"q": \n')
    with pytest.raises(ValueError, match=r"bad2\.jsonl:2: invalid JSON"):
        read_jsonl(bad, "q", label_column="y")
    with pytest.raises(ValueError, match=r"bad2\.jsonl:1: label 'x' is not a number"):
        read_jsonl(
            _write(tmp_path / "bad2.jsonl", '{"q": "a", "y": "x"}\n'),
            "q",
            label_column="y",
            regression=True,
        )


def test_race_layouts_and_errors(tmp_path):
    article = {
        "id": "high123.txt",
        "article": "Text.",
        "questions": ["Q1?", "Q2?"],
        "options": [["a", "b", "c", "d"], ["e", "f", "g", "h"]],
        "answers": ["D", "A"],
    }
    path = _write(tmp_path / "high123.json", json.dumps(article))
    examples = read_race(path)
    assert [(e.guid, e.label, e.level) for e in examples] == [
        ("high123.txt-0", 3, "high"),
        ("high123.txt-1", 0, "high"),
    ]
    (tmp_path / "middle").mkdir()
    article["id"] = "abc"
    path = _write(tmp_path / "middle" / "x.json", json.dumps({"data": [article]}))
    assert {e.level for e in read_race(path)} == {"middle"}
    article["answers"] = ["E", "A"]
    path = _write(tmp_path / "bad.json", json.dumps({"data": [article]}))
    with pytest.raises(ValueError, match="article 0 question 0: answer 'E' but only 4"):
        read_race(path)
    mc = _write(
        tmp_path / "mc.jsonl",
        json.dumps({"context": "C", "question": "Q", "options": ["x", "y"], "label": 1})
        + "\n"
        + json.dumps({"context": "C", "question": "Q", "options": ["x"]})
        + "\n",
    )
    with pytest.raises(ValueError, match=r"mc\.jsonl:2: options must be a list of at least 2"):
        read_multiple_choice_jsonl(mc)


def test_race_and_jsonl_values_of_the_wrong_shape_are_one_line(tmp_path):
    """A JSON file whose parts have the wrong type is refused by name, not read as text
    (a string of options is not a list of options) or stopped by a traceback."""
    article = {"article": "T.", "questions": ["Q?"], "options": ["ab"], "answers": ["A"]}
    cases = [
        ({"data": "text"}, r'"data" is a str; expected a list'),
        ({"data": ["text"]}, r"article 0: a str; expected an object"),
        ({"data": [article]}, r"article 0 question 0: options 'ab'; expected a list of at"),
        (
            {"data": [dict(article, options=[["a"]])]},
            r"article 0 question 0: options \['a'\]; expected a list",
        ),
    ]
    for obj, message in cases:
        path = _write(tmp_path / "race.json", json.dumps(obj))
        with pytest.raises(ValueError, match=rf"^{path}: {message}"):
            read_race(path)
    path = _write(tmp_path / "l.jsonl", '{"q": "a", "y": "x"}\n{"q": "b", "y": ["x", "z"]}\n')
    with pytest.raises(ValueError, match=rf"^{path}:2: label \['x', 'z'\] is not a single label$"):
        read_jsonl(path, "q", label_column="y")


def test_the_files_own_id_column_is_kept_in_the_prediction_files(tmp_path):
    """A column (or key) named `id` is the examples' guid, and so the prediction files'
    "guid" and TSV index; without one the rows are numbered row-N."""
    import numpy as np

    from data_pipeline.classification.submission import write_submission

    csv_path = _write(tmp_path / "t.csv", "id,review\nq-17,good\nq-3,bad\n")
    tsv_path = _write(tmp_path / "t.tsv", "review\tid\ngood\t9\n")
    jsonl = _write(tmp_path / "t.jsonl", '{"review": "good", "id": 41}\n{"review": "ok"}\n')
    assert [e.guid for e in read_delimited(csv_path, "review")] == ["q-17", "q-3"]
    assert [e.guid for e in read_delimited(tsv_path, "review", delimiter="\t")] == ["9"]
    assert [e.guid for e in read_jsonl(jsonl, "review")] == ["41", "row-1"]
    plain = _write(tmp_path / "p.csv", "review\ngood\n")
    assert [e.guid for e in read_delimited(plain, "review")] == ["row-0"]
    examples = read_delimited(csv_path, "review")
    tsv, lines = write_submission(
        str(tmp_path), "csv", examples, np.array([[2.0, 0.0], [0.0, 2.0]]), ["neg", "pos"]
    )
    assert open(tsv).read().splitlines()[1:] == ["q-17\tneg", "q-3\tpos"]
    assert [json.loads(x)["guid"] for x in open(lines)] == ["q-17", "q-3"]
