"""Q01 / Q02: a file that is not a LiteRT model given as --model (or to LiteModel) is one
line naming it, not the flatbuffer reader's struct.error traceback."""

import random

import pytest

pytest.importorskip("ai_edge_litert")


@pytest.mark.parametrize(
    "stamp, named",
    [(False, "not a LiteRT (.tflite) file (no TFL3 identifier)"), (True, "a damaged LiteRT file")],
    ids=["random-bytes", "random-bytes-with-the-identifier"],
)
def test_a_file_that_is_not_litert_is_one_line_naming_it(tmp_path, capsys, stamp, named):
    from albert_tf.serving.tflite_predict import LiteModel, main

    data = bytearray(random.Random(0).randbytes(5000))
    if stamp:
        data[4:8] = b"TFL3"
    path = tmp_path / "model.tflite"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError) as excinfo:
        LiteModel(str(path))
    assert str(excinfo.value).startswith(f"{path}: {named}")
    (tmp_path / "in.txt").write_text("a line\n")
    assert main(["tflite_predict", f"--model={path}", f"--input={tmp_path / 'in.txt'}"]) == 1
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith(f"error: {path}: {named}")
