"""The trainer never loses or corrupts what a run wrote (in process, tiny models):

- a NaN/inf loss stops the run naming the step, before anything from it is written
  (`on_nonfinite="stop"`), or the step is skipped (`"skip_step"`);
- resume picks the newest checkpoint that reads, whatever happened to the state file or the
  latest checkpoint's files, and never starts again from step 0 over checkpoints;
- a failed checkpoint write leaves no half-written checkpoint;
- with dropout, an interrupted and resumed run ends with the weights of an uninterrupted
  one, bit for bit (dropout masks are a function of seed, step and replica).
"""

import glob
import os

import numpy as np
import pytest

from tests.support.harness import tiny_config
from tests.training.test_training_numerics import SEQ, _examples, _trainer


def _values(prefix):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    return {
        k: reader.get_tensor(k)
        for k, dtype in reader.get_variable_to_dtype_map().items()
        if dtype != tf.variant and k != "_CHECKPOINTABLE_OBJECT_GRAPH"
    }


def _ckpts(output_dir):
    return sorted(
        int(p.rsplit("-", 1)[1][: -len(".index")])
        for p in glob.glob(os.path.join(output_dir, "checkpoints", "ckpt-*.index"))
    )


def _nan_at_step(step, batch=8):
    """The synthetic set with NaN masked-LM weights in the batch of optimizer step `step`
    (1-based), so that step's loss is NaN."""
    data = _examples()
    data["masked_lm_weights"][(step - 1) * batch : step * batch] = np.nan
    return data


# --- non-finite losses ----------------------------------------------------------------------


@pytest.mark.integration  # a training loop: over the unit tier's 5 s
def test_nonfinite_loss_stops_naming_the_step_and_writes_nothing_from_it(tmp_path):
    from albert_tf.training.trainer import NonFiniteLoss

    t = _trainer(
        tmp_path,
        "nan",
        8,
        steps=8,
        data=_nan_at_step(5),
        steps_per_loop=2,
        save_checkpoints_steps=2,
    )
    with pytest.raises(NonFiniteLoss, match=r"NaN/inf at step 5: stopped") as e:
        t.train()
    assert "\n" not in str(e.value) and "ckpt-4" in str(e.value)
    out = tmp_path / "nan"
    assert _ckpts(out) == [2, 4]  # the loop holding step 5 (steps 5-6) wrote nothing
    for step in (2, 4):
        for key, value in _values(str(out / "checkpoints" / f"ckpt-{step}")).items():
            if value.dtype.kind == "f":
                assert np.isfinite(value).all(), key
    assert not (out / "best").exists()


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
def test_skip_step_skips_the_nonfinite_step_and_counts_it(tmp_path):
    logs = []
    t = _trainer(
        tmp_path,
        "skip",
        8,
        steps=6,
        data=_nan_at_step(3),
        steps_per_loop=3,
        on_nonfinite="skip_step",
        log=logs.append,
    )
    result = t.train()
    assert t.step == 6 and result["step"] == 6  # the skipped step still counts
    assert any("skipped 1 step(s)" in line for line in logs), logs
    assert np.isfinite(result["train"]["loss"])
    for v in t.model.trainable_variables + t.inner_optimizer.variables:
        assert np.isfinite(v.numpy()).all(), v.path
    # A finite run takes the same path with nothing skipped: the same weights as stop mode.
    a = _trainer(tmp_path, "finite_skip", 8, steps=4, on_nonfinite="skip_step")
    b = _trainer(tmp_path, "finite_stop", 8, steps=4)
    a.train()
    b.train()
    for x, y in zip(a.model.trainable_variables, b.model.trainable_variables):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-6, atol=1e-7)


# --- safe resume --------------------------------------------------------------------------------


@pytest.fixture
def three_checkpoints(tmp_path):
    """A run of 6 steps with checkpoints at 2, 4, 6; returns (output dir, a factory of
    trainers on that directory, the logs of the last one)."""
    logs = []

    def make(**kw):
        return _trainer(
            tmp_path,
            "run",
            8,
            steps=kw.pop("steps", 6),
            steps_per_loop=2,
            save_checkpoints_steps=2,
            log=logs.append,
            **kw,
        )

    make().train()
    out = tmp_path / "run"
    assert _ckpts(out) == [2, 4, 6]
    return out, make, logs


def test_resume_skips_a_latest_checkpoint_whose_files_are_gone(three_checkpoints):
    out, make, logs = three_checkpoints
    ckpt = out / "checkpoints"
    for path in glob.glob(str(ckpt / "ckpt-6.data-*")):
        os.remove(path)
    t = make(steps=8)
    assert t.restored_from.endswith("ckpt-4") and t.step == 4
    assert any("cannot resume from" in line and "ckpt-6" in line for line in logs), logs
    assert (ckpt / "unreadable" / "ckpt-6.index").exists()  # kept aside, not deleted
    t.train()
    assert _ckpts(out) == [2, 4, 6, 8]


def test_resume_survives_a_garbled_state_file(three_checkpoints):
    out, make, logs = three_checkpoints
    (out / "checkpoints" / "checkpoint").write_text("\x00garbage{{{")
    t = make(steps=8)
    assert t.restored_from.endswith("ckpt-6") and t.step == 6
    assert any("is unreadable" in line for line in logs), logs
    t.train()
    assert _ckpts(out) == [2, 4, 6, 8]


def test_resume_stops_when_no_checkpoint_reads_and_changes_nothing(three_checkpoints):
    out, make, _ = three_checkpoints
    for path in glob.glob(str(out / "checkpoints" / "ckpt-*.index")):
        with open(path, "r+b") as f:
            f.truncate(10)
    before = {p: os.path.getsize(p) for p in glob.glob(str(out / "checkpoints" / "*"))}
    with pytest.raises(ValueError, match="no checkpoint in .* is readable") as e:
        make(steps=8)
    assert "\n" not in str(e.value) and "ckpt-6: its .index file is unreadable" in str(e.value)
    assert {p: os.path.getsize(p) for p in glob.glob(str(out / "checkpoints" / "*"))} == before


def test_leftover_temp_directories_are_removed_and_a_failed_save_leaves_nothing(
    three_checkpoints, monkeypatch
):
    import tensorflow as tf

    out, make, logs = three_checkpoints
    leftover = out / "checkpoints" / "ckpt-8_temp"
    leftover.mkdir()
    (leftover / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"x" * 10)
    t = make(steps=8)
    assert not leftover.exists()
    assert any("interrupted checkpoint save" in line for line in logs), logs

    def full(*args, **kwargs):  # what a full disk gives: a temporary directory, then an error
        leftover.mkdir()
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    monkeypatch.setattr(t.manager, "save", full)
    with pytest.raises(OSError, match="cannot write checkpoint ckpt-8 .* No space left") as e:
        t.train()
    assert "earlier checkpoints are intact" in str(e.value)
    assert not leftover.exists() and _ckpts(out) == [2, 4, 6]


# --- exact resume with dropout ------------------------------------------------------------------


def _classifier_trainer(tmp_path, name, steps=6, dropout=0.1, evaluate_fn=None, **kw):
    import tensorflow as tf

    from albert_tf.training import ClassificationTask, Trainer, TrainerConfig

    rng = np.random.default_rng(0)
    n = 48
    data = {
        "input_ids": rng.integers(5, 99, (n, SEQ)).astype(np.int32),
        "input_mask": np.ones((n, SEQ), np.int32),
        "segment_ids": np.zeros((n, SEQ), np.int32),
        "label_ids": rng.integers(0, 2, n).astype(np.int32),
    }

    def fn(ctx):
        ds = tf.data.Dataset.from_tensor_slices(data).shuffle(n, seed=3).repeat()
        return ds.batch(ctx.get_per_replica_batch_size(8), drop_remainder=True)

    config = TrainerConfig(
        output_dir=str(tmp_path / name),
        num_train_steps=steps,
        learning_rate=1e-3,
        optimizer="adamw",
        steps_per_loop=2,
        save_checkpoints_steps=2,
        **kw,
    )
    albert = tiny_config(
        max_position_embeddings=SEQ,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    task = ClassificationTask(albert, num_labels=2, dropout=dropout)
    strategy = tf.distribute.get_strategy()
    return Trainer(task, config, strategy, fn, log=lambda *_: None, evaluate_fn=evaluate_fn)


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
@pytest.mark.parametrize("accum", [1, 2])
def test_interrupted_run_with_dropout_ends_with_the_uninterrupted_weights(tmp_path, accum):
    """Dropout 0.1 in the encoder and on the classifier head: stopped after its first loop
    (as SIGTERM does) and resumed by a new trainer (new model, new process state), the run
    ends bit for bit where the uninterrupted one does; without the stateless masks the
    resumed Keras seed generators would start again from zero."""
    from albert_tf.training import Preempted

    whole = _classifier_trainer(tmp_path, "whole", grad_accum_steps=accum)
    whole.train()
    first = _classifier_trainer(tmp_path, "parts", grad_accum_steps=accum)
    first._preempted = True  # what the SIGTERM handler sets
    with pytest.raises(Preempted):
        first.train()
    assert first.step == 2
    second = _classifier_trainer(tmp_path, "parts", grad_accum_steps=accum)
    assert second.step == 2
    second.train()
    for a, b in zip(whole.model.trainable_variables, second.model.trainable_variables):
        assert np.array_equal(a.numpy(), b.numpy()), a.path
    # Dropout is really on: without it the same run ends elsewhere.
    plain = _classifier_trainer(tmp_path, "plain", dropout=0.0, grad_accum_steps=accum)
    plain.train()
    assert not all(
        np.array_equal(a.numpy(), b.numpy())
        for a, b in zip(whole.model.trainable_variables, plain.model.trainable_variables)
    )


def test_dropout_masks_differ_between_steps_layers_and_calls():
    """The stateless masks are not one mask reused: two calls of one shared layer in a
    block, two blocks with other seeds, and outside a block Keras' own dropout."""
    import tensorflow as tf

    from albert_tf.modeling.dropout import Dropout, step_seed
    from albert_tf.modeling.trace_options import DropoutSeed, trace_options

    layer = Dropout(0.5)
    x = tf.ones([64, 64])
    with trace_options(dropout=DropoutSeed(step_seed(1, 0))):
        a, b = layer(x, training=True), layer(x, training=True)
    with trace_options(dropout=DropoutSeed(step_seed(1, 0))):
        a2 = layer(x, training=True)
    with trace_options(dropout=DropoutSeed(step_seed(1, 1))):
        c = layer(x, training=True)
    assert np.array_equal(a.numpy(), a2.numpy())  # the same (seed, step, call): the same mask
    assert not np.array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    for m in (a, b, c):
        kept = (m.numpy() != 0).mean()
        assert 0.4 < kept < 0.6 and set(np.unique(m.numpy())) <= {0.0, 2.0}
    assert np.array_equal(layer(x, training=False).numpy(), x.numpy())


def test_a_truncated_init_checkpoint_is_one_line(tmp_path):
    """A data file cut short (the index intact) is found when the weights are read: one
    CheckpointError line naming the checkpoint, not a DataLossError traceback."""
    from albert_tf import AlbertEncoder, load_checkpoint, save_checkpoint
    from albert_tf.checkpoints.own import CheckpointError

    config = tiny_config()
    encoder = AlbertEncoder(config)
    encoder.build()
    prefix = save_checkpoint(encoder, str(tmp_path / "enc"))
    (data,) = glob.glob(f"{prefix}.data-*")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    with pytest.raises(CheckpointError, match="is unreadable \\(truncated or corrupt\\?\\)") as e:
        load_checkpoint(AlbertEncoder(config), str(tmp_path / "enc"))
    assert "\n" not in str(e.value) and str(tmp_path / "enc") in str(e.value)


# --- a lost peer ----------------------------------------------------------------------------


@pytest.mark.integration  # a training loop: over the unit tier's 5 s
def test_a_collective_whose_peer_is_gone_stops_in_one_line_naming_it(tmp_path):
    """What a chief sees when the other worker is killed (-9): TensorFlow's UnavailableError
    out of a collective (the train loop's all-reduce, an evaluation's), its heartbeat check
    naming the lost task. Here the first evaluation, after checkpoint 2, meets that very
    error: the run stops with one line naming the task, the step and the checkpoint to
    resume from (was an UnavailableError traceback)."""
    import tensorflow as tf

    from albert_tf.training.stops import PeerLost

    def evaluate(model):
        raise tf.errors.UnavailableError(
            None,
            None,
            "Graph execution error:\n\nDetected at node CollectiveReduceV2 defined at (most "
            "recent call last):\n\nCollective ops is aborted by: Error reported from "
            "/job:worker/task:0: The following tasks are unhealthy (stopped sending "
            "heartbeats):\n/job:worker/replica:0/task:0\nThe tasks have crashed.\n"
            "\t [[{{node CollectiveReduceV2}}]] [Op:__inference_loop_4800]",
        )

    out = tmp_path / "lost"
    trainer = _classifier_trainer(tmp_path, "lost", dropout=0.0, evaluate_fn=evaluate, eval_every=2)
    with pytest.raises(PeerLost) as stopped:
        trainer.train()
    checkpoint = os.path.join(str(out), "checkpoints", "ckpt-2")
    assert str(stopped.value) == (
        "stopped at step 2: lost /job:worker/replica:0/task:0 (Collective ops is aborted by: "
        "Error reported from /job:worker/task:0: The following tasks are unhealthy (stopped "
        f"sending heartbeats)); the last checkpoint is {checkpoint}; the same command (on "
        "every worker) resumes from it"
    )
    assert _ckpts(str(out)) == [2] and isinstance(stopped.value, OSError)


def test_an_unavailable_error_naming_no_task_is_not_called_a_lost_peer():
    """Only a message naming a cluster task is a lost peer; any other UnavailableError (a
    remote file system, say) stays what it is."""
    import tensorflow as tf

    from albert_tf.training.stops import peer_lost

    error = tf.errors.UnavailableError(None, None, "gs://bucket/data: 503 Service Unavailable")
    assert peer_lost(error, 7, None) is None
    named = tf.errors.UnavailableError(None, None, "connection reset: /job:worker/replica:0/task:1")
    assert "lost /job:worker/replica:0/task:1" in str(peer_lost(named, 7, None))
