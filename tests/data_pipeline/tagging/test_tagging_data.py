"""Tagging readers on the real CoNLL-2003 and resume_zh files, JSON lines, and the bad
inputs: each a one-line TaggingDataError naming file and line."""

import json

import pytest

from data_pipeline.tagging.data import (
    TaggedSentence,
    TaggingDataError,
    check_labels,
    discover_labels,
    read_conll,
    read_jsonl,
    read_tagged,
)

CONLL_TYPES = ["LOC", "MISC", "ORG", "PER"]
RESUME_TYPES = ["CONT", "EDU", "LOC", "NAME", "ORG", "PRO", "RACE", "TITLE"]


def _one_line_error(path, line, *needles):
    def check(excinfo):
        message = str(excinfo.value)
        assert "\n" not in message
        assert message.startswith(f"{path}:{line}:"), message
        for needle in needles:
            assert needle in message, message

    return check


def test_conll2003_counts_and_labels(shared_data):
    folder = shared_data / "ner" / "conll2003"
    counts = {s: len(read_conll(str(folder / f"{s}.txt"))) for s in ("train", "dev", "test")}
    assert counts == {"train": 14041, "dev": 3250, "test": 3453}
    train = read_conll(str(folder / "train.txt"))
    labels = discover_labels(train)
    assert labels == ["O"] + [f"{p}-{t}" for p in "BI" for t in CONLL_TYPES]
    assert sum(len(s.tokens) for s in train) == sum(
        1 for line in open(folder / "train.txt") if line.strip()
    )
    dev = read_conll(str(folder / "dev.txt"))
    check_labels(dev, labels, str(folder / "dev.txt"))
    assert dev[0].tokens[:3] == ("CRICKET", "-", "LEICESTERSHIRE")
    assert dev[0].tags[:3] == ("O", "O", "B-ORG")
    assert dev[0].line == 1 and dev[1].line == len(dev[0].tokens) + 2


def test_resume_zh_counts_and_labels(shared_data):
    folder = shared_data / "ner" / "resume_zh"
    train = read_tagged(str(folder / "train.txt"))
    assert [len(train), len(read_tagged(str(folder / "dev.txt")))] == [3821, 463]
    assert all(len(t) == 1 for s in train for t in s.tokens)  # one character a line
    labels = discover_labels(train)
    assert labels[0] == "O" and labels == ["O"] + sorted(labels[1:])
    assert {t.split("-", 1)[1] for t in labels[1:]} == set(RESUME_TYPES)
    assert {t[0] for t in labels[1:]} == set("BMES")


def test_docstart_columns_and_jsonl(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(
        "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
        "-DOCSTART- -X- -X- O\n\n\t\u3000\tO\nx\tB-PER\r\n",
        encoding="utf-8",
    )
    sentences = read_conll(str(path))
    assert sentences == [
        TaggedSentence(("EU", "rejects"), ("B-ORG", "O")),
        TaggedSentence(("\u3000", "x"), ("O", "B-PER")),
    ]
    assert [s.line for s in sentences] == [3, 8]
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text(
        json.dumps({"tokens": ["Peter", "lebt"], "tags": ["B-PER", "O"], "id": 3})
        + "\n\n"
        + json.dumps({"tokens": [], "tags": []})
        + "\n",
        encoding="utf-8",
    )
    assert read_tagged(str(jsonl)) == [TaggedSentence(("Peter", "lebt"), ("B-PER", "O"))]


def test_a_file_of_docstart_only_has_no_sentences_and_no_labels(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("-DOCSTART- -X- O O\n\n-DOCSTART- -X- O O\n", encoding="utf-8")
    assert read_conll(str(path)) == []
    with pytest.raises(TaggingDataError, match="no tagged tokens") as e:
        discover_labels(read_conll(str(path)), str(path))
    assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)


def test_one_column_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("EU B-ORG\nrejects O\nB-PER\n", encoding="utf-8")
    with pytest.raises(TaggingDataError) as e:
        read_conll(str(path))
    _one_line_error(path, 3, "one column", "'B-PER'")(e)


def test_unknown_tag_at_dev_time(tmp_path):
    train, dev = tmp_path / "train.txt", tmp_path / "dev.txt"
    train.write_text("EU B-ORG\nrejects O\n\nPeter B-PER\n", encoding="utf-8")
    dev.write_text("Peter B-PER\n\nin O\nBerlin B-LOC\n", encoding="utf-8")
    labels = discover_labels(read_conll(str(train)))
    assert labels == ["O", "B-ORG", "B-PER"]
    with pytest.raises(TaggingDataError) as e:
        check_labels(read_conll(str(dev)), labels, str(dev))
    _one_line_error(dev, 4, "'B-LOC'", "3 labels")(e)


def test_jsonl_length_mismatch_and_bad_lines(tmp_path):
    path = tmp_path / "dev.jsonl"
    good = json.dumps({"tokens": ["a"], "tags": ["O"]})
    path.write_text(good + "\n" + json.dumps({"tokens": ["a", "b"], "tags": ["O"]}) + "\n")
    with pytest.raises(TaggingDataError) as e:
        read_jsonl(str(path))
    _one_line_error(path, 2, "2 tokens but 1 tags")(e)
    path.write_text(good + "\n" + json.dumps({"tokens": ["a"]}) + "\n")
    with pytest.raises(TaggingDataError) as e:
        read_jsonl(str(path))
    _one_line_error(path, 2, "'tags'")(e)
    path.write_text("{not json\n")
    with pytest.raises(TaggingDataError) as e:
        read_jsonl(str(path))
    _one_line_error(path, 1, "invalid JSON")(e)
    path.write_text(good + "\n" + json.dumps({"tokens": ["a"], "tags": ["B-X"]}) + "\n")
    with pytest.raises(TaggingDataError) as e:
        check_labels(read_jsonl(str(path)), ["O"], str(path))
    _one_line_error(path, 2, "'B-X'")(e)


def test_invalid_utf8_and_missing_file(tmp_path):
    path = tmp_path / "dev.txt"
    path.write_bytes(b"a O\n\xff B-X\n")
    with pytest.raises(TaggingDataError) as e:
        read_conll(str(path))
    _one_line_error(path, 2, "invalid UTF-8")(e)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_conll(str(tmp_path / "nope.txt"))


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_cr_and_crlf_line_ends_read_as_lf(tmp_path, end):
    """N09: a CR-only file was one sentence of one token (lines split at LF only)."""
    text = "EU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\nBlackburn I-PER\n"
    lf = tmp_path / "lf.txt"
    lf.write_bytes(text.encode())
    other = tmp_path / "other.txt"
    other.write_bytes(text.replace("\n", end).encode())
    want, got = read_conll(str(lf)), read_conll(str(other))
    assert [len(s.tokens) for s in got] == [3, 2]
    assert got == want and [s.line for s in got] == [s.line for s in want] == [1, 5]
    bad = tmp_path / "bad.txt"
    bad.write_bytes(text.replace("\n", end).replace("rejects O", "rejects").encode())
    with pytest.raises(TaggingDataError) as excinfo:
        read_conll(str(bad))
    _one_line_error(str(bad), 2, "one column")(excinfo)
