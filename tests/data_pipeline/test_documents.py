"""data_pipeline.documents: input file lists, formats, blocks, bad input, sentence splitting."""

import gzip
import json
import random

import pytest

from data_pipeline import documents as D

BLOCK_SIZES = (200, 4096, 1 << 20)


# --- expand_input_files -------------------------------------------------------------------


def _touch(path, text="x\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_expand_input_files_comma_lists_globs_sorted_dedup(tmp_path):
    for name in ("b.txt", "a.txt", "c.txt", "sub/d.txt", "z.jsonl"):
        _touch(tmp_path / name)
    (tmp_path / "dir.txt").mkdir()  # a directory matching a glob is not an input file
    t = str(tmp_path)
    files = D.expand_input_files(f"{t}/*.txt")
    assert files == [f"{t}/a.txt", f"{t}/b.txt", f"{t}/c.txt"]  # sorted, files only
    # Comma list: each pattern's matches sorted, pattern order kept, duplicates dropped,
    # blanks and spaces around commas ignored.
    files = D.expand_input_files(f"{t}/z.jsonl, {t}/c.txt,{t}/*.txt,,{t}/sub/*.txt")
    assert files == [f"{t}/z.jsonl", f"{t}/c.txt", f"{t}/a.txt", f"{t}/b.txt", f"{t}/sub/d.txt"]
    # A list of patterns works like a comma list.
    assert D.expand_input_files([f"{t}/c.txt", f"{t}/[ab].txt"]) == [
        f"{t}/c.txt",
        f"{t}/a.txt",
        f"{t}/b.txt",
    ]


def test_expand_input_files_pattern_matching_nothing_is_an_error(tmp_path):
    _touch(tmp_path / "a.txt")
    bad = f"{tmp_path}/typo*.txt"
    with pytest.raises(FileNotFoundError) as e:
        D.expand_input_files(f"{tmp_path}/a.txt,{bad}")
    assert bad in str(e.value) and "matches no file" in str(e.value)
    with pytest.raises(FileNotFoundError, match="matches no file"):
        D.expand_input_files(f"{tmp_path}/a.txt,{tmp_path}/dir_only")


def test_a_directory_as_input_pattern_says_so_with_the_glob(tmp_path):
    """P21: a directory as --input_file was "matches no file", as for a typo."""
    _touch(tmp_path / "corpus" / "a.txt")
    with pytest.raises(FileNotFoundError) as e:
        D.expand_input_files(str(tmp_path / "corpus"))
    message = str(e.value)
    assert "\n" not in message and "is a directory, not a file" in message
    assert repr(str(tmp_path / "corpus" / "*.txt")) in message
    assert D.expand_input_files(str(tmp_path / "corpus" / "*.txt")) == [
        str(tmp_path / "corpus" / "a.txt")
    ]


def test_file_format():
    assert D.file_format("x.txt") == "text"
    assert D.file_format("x.txt.gz") == "text"
    assert D.file_format("x.jsonl") == "jsonl"
    assert D.file_format("x.json.gz") == "jsonl"
    assert D.file_format("x.jsonl", "text") == "text"
    with pytest.raises(ValueError, match="not one of"):
        D.file_format("x.txt", "csv")


# --- blocks ---------------------------------------------------------------------------------


def _read_all(files, block_size, split=False, fmt="auto"):
    stats = D.ReadStats()
    docs = []
    blocks = D.plan_blocks(files, block_size, fmt)
    for block in blocks:
        for _, part in D.read_block(block, block_size, split, stats):
            docs.extend(part)
    return docs, stats, blocks


def _synthetic_docs(seed, count=60):
    r = random.Random(seed)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    return [
        [
            " ".join(r.choice(words) for _ in range(r.randint(1, 25))).capitalize() + "."
            for _ in range(r.randint(1, 8))
        ]
        for _ in range(count)
    ]


def _text_file_bytes(docs, seed):
    """The official format with messy separators: 1-3 blank lines (some whitespace-only),
    CRLF on some lines, leading blank lines and no final newline."""
    r = random.Random(seed)
    out = ["\n", "   \n"]
    for doc in docs:
        for s in doc:
            out.append(s + ("\r\n" if r.random() < 0.3 else "\n"))
        for _ in range(r.randint(1, 3)):
            out.append(r.choice(["\n", "\r\n", "  \t \n", " \r\n"]))
    text = "".join(out).rstrip("\n")
    return text.encode()


def test_block_planning_invariance_text(tmp_path):
    docs = _synthetic_docs(0)
    path = tmp_path / "corpus.txt"
    path.write_bytes(_text_file_bytes(docs, 1))
    lines = path.read_bytes().count(b"\n") + 1  # no final newline
    results = {}
    for size in BLOCK_SIZES:
        got, stats, blocks = _read_all([str(path)], size)
        results[size] = got
        assert got == docs, size
        assert (stats.documents, stats.sentences) == (len(docs), sum(map(len, docs)))
        assert stats.bytes == path.stat().st_size
        assert stats.lines == lines, size
        assert stats.empty_files == stats.invalid_utf8_lines == 0
    assert len(D.plan_blocks([str(path)], 200)) > 20  # the small size really cuts


def test_block_planning_invariance_jsonl_and_gzip(tmp_path):
    docs = _synthetic_docs(2)
    r = random.Random(3)
    lines = []
    for doc in docs:
        # A document's text: sentences on lines (some joined in one paragraph), CRLF too.
        text, i = [], 0
        while i < len(doc):
            k = r.randint(1, 3)
            text.append(" ".join(doc[i : i + k]))
            i += k
        lines.append(json.dumps({"text": r.choice(["\n", "\r\n"]).join(text), "id": i}))
        if r.random() < 0.2:
            lines.append("   ")  # blank lines between records are skipped
    jsonl = ("\n".join(lines) + "\n").encode()
    (tmp_path / "c.jsonl").write_bytes(jsonl)
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(jsonl))
    text = _text_file_bytes(docs, 4)
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(text))
    for name, expect_lines in (
        ("c.jsonl", jsonl.count(b"\n")),
        ("c.jsonl.gz", jsonl.count(b"\n")),
        ("t.txt.gz", text.count(b"\n") + 1),
    ):
        path = str(tmp_path / name)
        for size in BLOCK_SIZES:
            got, stats, blocks = _read_all([path], size)
            assert got == docs, (name, size)
            assert stats.lines == expect_lines, (name, size)
            assert stats.documents == len(docs)
        if name.endswith(".gz"):
            assert len(D.plan_blocks([path], 200)) == 1  # one stream ...
            parts = [p for p, _ in D.read_block(D.plan_blocks([path], 200)[0], 200)]
            assert parts == list(range(len(parts))) and len(parts) > 10  # ... in parts


def test_split_sentences_flag_and_multiple_files(tmp_path):
    a = _touch(tmp_path / "a.txt", "First one. Second one!\nThird?\n\nOther doc.\n")
    b = _touch(tmp_path / "b.jsonl", json.dumps({"text": "Mr. Smith came. He left."}) + "\n")
    for size in BLOCK_SIZES:
        docs, stats, _ = _read_all([a, b], size, split=True)
        assert docs == [
            ["First one.", "Second one!", "Third?"],
            ["Other doc."],
            ["Mr. Smith came.", "He left."],
        ]
        docs, _, _ = _read_all([a], size, split=False)
        assert docs == [["First one. Second one!", "Third?"], ["Other doc."]]


def test_jsonl_text_field_becomes_sentences(tmp_path):
    path = _touch(
        tmp_path / "x.jsonl",
        json.dumps({"text": "Hello there. How are you?\nFine, thanks."})
        + "\n"
        + json.dumps({"text": "   ", "meta": 1})
        + "\n",
    )  # blank text: no doc
    docs, stats, _ = _read_all([path], 1 << 20)
    assert docs == [["Hello there.", "How are you?", "Fine, thanks."]]
    assert stats.documents == 1 and stats.sentences == 3


@pytest.mark.parametrize("compress", [False, True])
def test_invalid_json_names_file_and_line(tmp_path, compress):
    lines = [json.dumps({"text": f"Document number {i}. It has text."}) for i in range(300)]
    lines[236] = '{"text": "broken'  # line 237, well past the first 200-byte block
    data = ("\n".join(lines) + "\n").encode()
    name = "bad.jsonl.gz" if compress else "bad.jsonl"
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    for size in (200, 4096, 1 << 20):
        with pytest.raises(ValueError) as e:
            _read_all([str(path)], size)
        assert f"{path}:237:" in str(e.value), (size, str(e.value))
        assert "invalid JSON" in str(e.value)
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"text": "ok"}\n{"body": "no text field"}\n')
    with pytest.raises(ValueError, match=rf"{wrong}:2: expected an object"):
        _read_all([str(wrong)], 1 << 20)


def test_json_nested_too_deep_names_file_and_line(tmp_path):
    """Q05: a JSONL line nested 100,000 deep was a RecursionError reported against the
    output shard; the data files' JSON lines reader (text_lines) names it as well."""
    from data_pipeline.io.text_lines import json_object

    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "ok."}\n{"text": ' + deep + "}\n")
    with pytest.raises(ValueError) as e:
        _read_all([str(path)], 1 << 20)
    assert str(e.value) == f"{path}:2: JSON nested too deeply to read"
    with pytest.raises(ValueError, match=rf"^{path}:2: JSON nested too deeply to read$"):
        json_object(str(path), 2, '{"text": ' + deep + "}")


def test_a_truncated_gzip_input_names_the_input(tmp_path):
    """B05: a truncated .gz input was gzip's EOFError, reported against the output shard."""
    lines = [f"Sentence number {i} of the corpus." for i in range(4000)]
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    path = tmp_path / "trunc.txt.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError) as e:
        _read_all([str(path)], 1 << 20)
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{path}: a truncated or damaged gzip")


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    data = (
        b"Good line one.\nBad \xff\xfe line.\n\nAnother good.\nAlso \xc3( bad.\n"
        b"Fine \xc3\xa9t\xc3\xa9.\n"
    )
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    (tmp_path / "bad.txt.gz").write_bytes(gzip.compress(data))
    for name in ("bad.txt", "bad.txt.gz"):
        for size in BLOCK_SIZES:
            docs, stats, _ = _read_all([str(tmp_path / name)], size)
            assert stats.invalid_utf8_lines == 2, (name, size)
            assert docs == [
                ["Good line one.", "Bad \ufffd\ufffd line."],
                ["Another good.", "Also \ufffd( bad.", "Fine été."],
            ]


def test_empty_and_blank_files_are_counted_and_yield_nothing(tmp_path):
    empty = _touch(tmp_path / "empty.txt", "")
    blank = _touch(tmp_path / "blank.txt", "\n\n   \n\t\n\r\n" * 100)
    real = _touch(tmp_path / "real.txt", "One sentence.\n")
    (tmp_path / "empty.txt.gz").write_bytes(gzip.compress(b""))
    (tmp_path / "blank.jsonl.gz").write_bytes(gzip.compress(b"\n \n\n"))
    gz = [str(tmp_path / "empty.txt.gz"), str(tmp_path / "blank.jsonl.gz")]
    for size in BLOCK_SIZES:
        docs, stats, _ = _read_all([empty, blank, real] + gz, size)
        assert docs == [["One sentence."]]
        assert stats.empty_files == 4, size
        assert stats.documents == 1


def test_one_megabyte_line_is_one_sentence(tmp_path):
    r = random.Random(0)
    line = " ".join(r.choice(["word", "other", "thing"]) for _ in range(200_000))
    assert len(line) > 1_000_000
    path = _touch(tmp_path / "long.txt", "Short one.\n\n" + line + "\n\nLast.\n")
    for size in (4096, 1 << 20):
        docs, stats, _ = _read_all([path], size)
        assert docs == [["Short one."], [line], ["Last."]]


def test_plan_blocks_rejects_bad_size(tmp_path):
    with pytest.raises(ValueError, match="must be positive"):
        D.plan_blocks([_touch(tmp_path / "a.txt")], 0)


# --- sentence splitting ---------------------------------------------------------------------


def test_split_sentences_english():
    text = (
        "Mr. Smith went to Washington. He met the U.S. President! Did J. R. Tolkien "
        'write it? yes, he did. Dr. Who arrived (late). Then "Quoted." Next one, '
        "e.g. this, ends here."
    )
    assert D.split_sentences(text) == [
        "Mr. Smith went to Washington.",
        "He met the U.S. President!",
        "Did J. R. Tolkien write it? yes, he did.",
        "Dr. Who arrived (late).",
        'Then "Quoted."',
        "Next one, e.g. this, ends here.",
    ]
    assert D.split_sentences("No end punctuation") == ["No end punctuation"]
    assert D.split_sentences("   ") == []
    assert D.split_sentences("Version 3.5 is out. It works.") == [
        "Version 3.5 is out.",
        "It works.",
    ]


def test_split_sentences_chinese():
    text = "今天天气很好。我们去公园吧！你去吗？“好的。”他说。「走吧！」她笑了"
    assert D.split_sentences(text) == [
        "今天天气很好。",
        "我们去公园吧！",
        "你去吗？",
        "“好的。”",
        "他说。",
        "「走吧！」",
        "她笑了",
    ]
    assert D.split_sentences("真的吗？！是的。") == ["真的吗？！", "是的。"]
