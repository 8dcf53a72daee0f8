"""The ONNX / LiteRT runners' length-sorted groups (albert_tf.serving.length_groups): a
request answered in groups equals the request answered in one call, each call holds at most
`group` rows cut to its longest, and the rows come back in the request's order. The file
is stood in for by a function whose rows depend on their real tokens only (what attention
masking guarantees of the real files; tests/serving/test_onnx.py holds the real files to
the SavedModels on requests of more than one group)."""

import numpy as np

from albert_tf.serving.length_groups import FILE_GROUP, length_groups, run_grouped


def _request(rows: int, longest: int, seed: int, choices: int | None = None):
    rng = np.random.default_rng(seed)
    shape = (rows, choices) if choices else (rows,)
    lengths = rng.integers(1, longest + 1, size=shape)
    mask = (np.arange(lengths.max()) < lengths[..., None]).astype(np.int32)  # (packed_inputs')
    ids = rng.integers(5, 30000, size=mask.shape).astype(np.int32) * mask
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


def _file(calls: list):
    """A stand-in file: per row a sum of its real ids and its real length, per token its
    ids doubled (zero beyond the row), and a scalar input echoed per row."""

    def run(input_ids, input_mask, segment_ids, threshold=0.5):
        calls.append(input_mask)
        real = input_ids * input_mask
        per_row = real.reshape(len(real), -1).sum(-1)
        return {
            "score": np.stack([per_row, input_mask.reshape(len(real), -1).sum(-1)], -1),
            "tokens": 2 * real,
            "threshold": np.full(len(real), threshold),
        }

    return run


def test_groups_answer_as_one_call_in_the_requests_order():
    inputs = _request(37, 40, seed=0)
    one = _file([])(**inputs)
    calls = []
    got = run_grouped(_file(calls), inputs)
    assert len(calls) == 5  # ceil(37 / 8)
    for mask in calls:
        assert len(mask) <= FILE_GROUP and mask[:, -1].any()  # cut to its longest row
    for k in one:
        np.testing.assert_array_equal(got[k], one[k])


def test_choices_are_grouped_by_their_longest_choice_and_scalars_pass_whole():
    inputs = _request(11, 16, seed=1, choices=3)
    inputs["threshold"] = np.float32(0.25)
    one = _file([])(**inputs)
    calls = []
    got = run_grouped(_file(calls), inputs, group=4)
    assert [len(m) for m in calls] == [4, 4, 3]
    assert all(m.sum(-1).max() == m.shape[-1] for m in calls)
    for k in one:
        np.testing.assert_array_equal(got[k], one[k])
    assert (got["threshold"] == 0.25).all()


def test_a_request_of_one_group_is_one_call_and_groups_are_sorted():
    inputs = _request(FILE_GROUP, 9, seed=2)
    calls = []
    run_grouped(_file(calls), inputs)
    assert len(calls) == 1 and calls[0].shape == inputs["input_mask"].shape
    lengths = [5, 1, 3, 3, 9, 2]
    groups = length_groups(lengths, 4)
    assert [list(g) for g in groups] == [[1, 5, 2, 3], [0, 4]]  # stable: 2 before 3
