"""The fine-tuning controls through run_classifier.py on real MRPC files (tiny model):
early stopping killed with SIGKILL and resumed with the same command stops at the step, and
with the weights, of the uninterrupted run; --class_weights auto is scikit-learn's balanced
weights of the training labels, recorded in run_config.json; bad values are one error line
with nothing written."""

import csv
import json

import numpy as np
import pytest

from tests.support.tiny import WORKFLOW as TINY
from tests.workflows.test_run_pretraining import (
    checkpoint_steps,
    checkpoint_values,
    error_line,
    ok,
    run,
    sigkill_after_first_checkpoint,
)

EVERY = 5


def _args(tmp_path, shared_data, out, *extra):
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))
    return [
        "--task_name=mrpc",
        f"--data_dir={shared_data / 'glue' / 'MRPC'}",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--train_batch_size=16",
        "--train_step=40",
        f"--steps_per_loop={EVERY}",
        f"--save_checkpoints_steps={EVERY}",
        f"--eval_every={EVERY}",
        "--eval_batch_size=128",
        "--learning_rate=1e-3",
        "--do_train",
        *extra,
    ]


# acc_and_f1 never rises by 1: evaluations at 5, 10, 15, the run stops at 15 of 40. A
# resumed run counting afresh from its checkpoint at 5 would stop at 20.
CONTROLS = ("--early_stopping_patience=2", "--early_stopping_min_delta=1.0", "--class_weights=auto")


@pytest.mark.slow
def test_early_stopping_resumed_after_sigkill_stops_where_the_uninterrupted_run_does(
    tmp_path, shared_data
):
    whole = tmp_path / "whole"
    ok(
        run(
            _args(tmp_path, shared_data, whole, *CONTROLS),
            tmp_path / "whole",
            script="run_classifier.py",
        )
    )
    assert checkpoint_steps(whole)[-1] == 3 * EVERY
    parts = tmp_path / "parts"
    args = _args(tmp_path, shared_data, parts, *CONTROLS)
    at = sigkill_after_first_checkpoint(
        args, parts, tmp_path / "killed", script="run_classifier.py"
    )
    assert at < 2 * EVERY, f"killed too late to test the resume: {at}"
    resumed = ok(run(args, tmp_path / "resumed", script="run_classifier.py"))
    assert f"early stopping at step {3 * EVERY}" in resumed.stdout + resumed.stderr
    assert checkpoint_steps(parts)[-1] == 3 * EVERY
    last = f"checkpoints/ckpt-{3 * EVERY}"
    a, b = checkpoint_values(str(whole / last)), checkpoint_values(str(parts / last))
    assert sorted(a) == sorted(b) and any("early_stopping" in k for k in a)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    # --class_weights auto: sklearn's balanced weights of train.tsv's labels, recorded.
    from sklearn.utils.class_weight import compute_class_weight

    with open(shared_data / "glue" / "MRPC" / "train.tsv", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    y = np.array([int(r[0]) for r in rows])
    expected = compute_class_weight("balanced", classes=np.array([0, 1]), y=y)
    record = json.loads((parts / "run_config.json").read_text())
    np.testing.assert_allclose(record["class_weights"], expected, rtol=1e-12)
    assert record["segments"][-1]["settings"]["early_stopping_patience"] == 2


def test_bad_values_are_one_line_and_write_nothing(tmp_path, shared_data):
    """(The processes start together: each is mostly TensorFlow's start-up.)"""
    cases = [
        (["--class_weights=1,2,3"], "--class_weights=1,2,3: 3 weight(s) for 2 labels"),
        (
            ["--early_stopping_patience=2", "--eval_every=0"],
            "--early_stopping_patience=2 needs --eval_every > 0",
        ),
        (["--layer_lr_decay=0.8", "--optimizer=adamw_keras"], "--layer_lr_decay=0.8 needs"),
    ]
    outs = [tmp_path / f"out{i}" for i in range(len(cases))]
    started = [
        run(_args(tmp_path, shared_data, out, *extra), script="run_classifier.py")
        for i, (out, (extra, _)) in enumerate(zip(outs, cases))
    ]
    for proc, out, (_, message) in zip(started, outs, cases):
        r = proc
        assert message in error_line(r), r.report()
        assert not out.exists()
