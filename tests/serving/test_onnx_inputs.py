"""The ONNX runner's Python text front end (albert_tf.serving.onnx_inputs) packs exactly as
training packs (data_pipeline.classification.features), cut to the request's longest row;
choices pair one text with each option, a missing option all zeros."""

import numpy as np

from albert_tf.serving.onnx_inputs import INPUT_NAMES, packed_inputs

S = 24


def _training(tok, a, b=None, max_seq_length=S):
    from data_pipeline.classification.examples import Example
    from data_pipeline.classification.features import convert_examples

    examples = [Example(str(i), x, b[i] if b else None, None) for i, x in enumerate(a)]
    f = convert_examples(examples, tok, max_seq_length, ["0", "1"])
    return {k: f[k].astype(np.int32) for k in INPUT_NAMES}


def test_single_texts_and_pairs_are_packed_as_training_packs_them(tok):
    a = ["Ein kurzer Satz.", "", "sehr " * 40, "Ärger über „Zitate“ und ``quoted'' text"]
    b = ["ja", "nein, das ist ein längerer zweiter Satz " * 3, "", "x"]
    for second in (None, b):
        got = packed_inputs(tok, S, a, second)
        want = _training(tok, a, second)
        width = got["input_ids"].shape[1]
        assert width == want["input_mask"].sum(1).max()  # the longest row, no more
        for k in INPUT_NAMES:
            np.testing.assert_array_equal(got[k], want[k][:, :width])


def test_choices_pair_the_first_text_with_each_and_zero_the_missing(tok):
    got = packed_inputs(tok, S, ["Passage eins", "zwei"], [["a b", "", "c"], ["", "", "d e f"]])
    assert got["input_ids"].shape[:2] == (2, 3)
    want = packed_inputs(tok, S, ["Passage eins", "Passage eins", "zwei"], ["a b", "c", "d e f"])
    width = want["input_ids"].shape[1]
    for k in INPUT_NAMES:
        np.testing.assert_array_equal(got[k][0, 0, :width], want[k][0])
        np.testing.assert_array_equal(got[k][1, 2, :width], want[k][2])
        assert not got[k][0, 1].any() and not got[k][1, 0].any()  # (no such option)


def test_an_empty_request_has_no_rows(tok):
    got = packed_inputs(tok, S, [], [])
    assert all(v.shape == (0, 2) for v in got.values())
