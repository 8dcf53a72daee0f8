"""The new-pieces file of albert-extend-vocab (`read_new_pieces`): one word a line, blank
lines skipped with the file's own line numbers kept, and each refusal one line naming the
flag, the file and the line."""

import pytest

from data_pipeline.tokenization.extension import MAX_NEW_PIECES, read_new_pieces


def test_words_keep_their_line_numbers(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("\n  covid \n\nBundestag\r\n##ization\n", encoding="utf-8")
    assert read_new_pieces(str(path)) == [(2, "covid"), (4, "Bundestag"), (5, "##ization")]


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"", ": no pieces (the file has no non-blank line)"),
        (b" \n\t\n", ": no pieces (the file has no non-blank line)"),
        (b"a\nb c\n", ":2: 'b c' holds a space (one word a line)"),
        (b"a\nb\na\n", ":3: 'a' is given twice (first on line 1)"),
        (b"a\n\xff\n", ": not UTF-8 text"),
    ],
    ids=["empty", "blank", "space", "twice", "binary"],
)
def test_bad_files_are_one_line_naming_flag_file_and_line(tmp_path, content, expected):
    path = tmp_path / "w.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError) as raised:
        read_new_pieces(str(path))
    message = str(raised.value)
    assert message.startswith(f"--new_pieces={path}{expected}") and "\n" not in message


def test_the_limit_is_exact(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("".join(f"w{i}\n" for i in range(MAX_NEW_PIECES)), encoding="utf-8")
    assert len(read_new_pieces(str(path))) == MAX_NEW_PIECES == 10_000
    path.write_text("".join(f"w{i}\n" for i in range(MAX_NEW_PIECES + 1)), encoding="utf-8")
    with pytest.raises(ValueError, match=r":10001: more than 10,000 new pieces \(the limit"):
        read_new_pieces(str(path))


def test_a_missing_file_names_the_flag(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^--new_pieces=.*nope\.txt: no such file$"):
        read_new_pieces(str(tmp_path / "nope.txt"))
