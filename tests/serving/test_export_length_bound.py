"""P04 / P09: a serving length over the model's position table is refused in one line
naming where it comes from (task.json or --max_seq_length), before anything is built:
before, task.json's max_seq_length 128 on a 64-position model exported and every long
request failed, and 10**12 was a TypeError traceback."""

import pytest

from tests.serving.test_export import _finetuned, spm  # noqa: F401  (spm: a fixture)


@pytest.mark.parametrize("recorded", [128, 10**12])
def test_a_task_json_length_over_the_positions_is_refused(tmp_path, spm, recorded):  # noqa: F811
    from albert_tf.serving.export import export

    _, directory = _finetuned(tmp_path, spm, max_seq_length=recorded)  # 64 positions
    with pytest.raises(ValueError) as excinfo:
        export("classifier", directory, str(tmp_path / "export"))
    message = str(excinfo.value)
    assert "\n" not in message
    assert message.startswith(f"{directory}/task.json max_seq_length={recorded} is more than")
    assert "max_position_embeddings=64" in message
    assert not (tmp_path / "export" / "1").exists()
    with pytest.raises(ValueError, match=r"^--max_seq_length=65 is more than the model's"):
        export("classifier", directory, str(tmp_path / "export"), max_seq_length=65)
    # A length within the positions, given for the export, still serves.
    assert export("classifier", directory, str(tmp_path / "export"), max_seq_length=64)
