"""Early stopping (albert_tf.training.early_stopping): the rule is Keras' EarlyStopping
(mode max, min_delta, patience), checked against it; a run interrupted and resumed stops at
the step, and with the weights, of an uninterrupted one (the patience state is in the
checkpoint); a stopped run re-run trains no further; bad values are one line. (The SIGKILL
case through run_classifier.py is in tests/workflows/test_finetuning_controls.py.)"""

import math

import numpy as np
import pytest

from tests.support.harness import tiny_config

SEQ = 16


def _keras_stop(values, patience, min_delta):
    """The epoch Keras' EarlyStopping stops at on `values` (mode max), or None."""
    import keras

    callback = keras.callbacks.EarlyStopping(
        monitor="m", mode="max", patience=patience, min_delta=min_delta
    )
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.stop_training = False
    callback.set_model(model)
    callback.on_train_begin()
    for epoch, value in enumerate(values):
        callback.on_epoch_end(epoch, {"m": value})
        if callback.model.stop_training:
            return epoch
    return None


SEQUENCES = [
    [0.5, 0.6, 0.6, 0.59, 0.7, 0.7, 0.69, 0.68],
    [0.1, 0.2, 0.3, 0.4, 0.5],
    [0.9, 0.1, 0.95, 0.2, 0.3, 0.96, 0.5],
    [0.5, 0.52, 0.53, 0.56, 0.561, 0.562, 0.563],
]


@pytest.mark.parametrize("patience", [1, 2, 3])
@pytest.mark.parametrize("min_delta", [0.0, 0.015])
def test_the_rule_stops_where_keras_early_stopping_does(patience, min_delta):
    from albert_tf.training.early_stopping import EarlyStopping

    for values in SEQUENCES:
        ours = EarlyStopping(patience, min_delta, "m")
        stopped = None
        for i, value in enumerate(values):
            if ours.update({"m": value}, step=i + 1):
                stopped = i
                break
        assert stopped == _keras_stop(values, patience, min_delta), values
        if stopped is not None:
            assert ours.stopped_at == stopped + 1
            finite = [v for v in values[: stopped + 1] if math.isfinite(v)]
            assert ours.best in finite


def test_a_nonfinite_metric_never_improves():
    """(Keras would take a first NaN as its best for good; here the next finite value
    improves.)"""
    from albert_tf.training.early_stopping import EarlyStopping

    rule = EarlyStopping(2, 0.0, "m")
    assert not rule.update({"m": float("nan")}, 1) and rule.bad_evaluations == 1
    assert not rule.update({"m": 0.3}, 2) and (rule.best, rule.bad_evaluations) == (0.3, 0)
    assert not rule.update({"m": float("inf")}, 3) and rule.bad_evaluations == 1
    assert rule.update({"m": float("nan")}, 4) and rule.stopped_at == 4 and rule.best == 0.3
    with pytest.raises(ValueError, match="the evaluation at step 5 has no 'm'"):
        rule.update({"accuracy": 0.5}, 5)


def _trainer(tmp_path, name, steps=12, **kw):
    """A tiny classifier (dropout on) whose evaluation is its real accuracy on 32 fixed
    examples; early stopping with min_delta 1 (no evaluation after the first improves)."""
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

    def evaluate(model):
        batch = {k: v[:32] for k, v in data.items() if k != "label_ids"}
        logits = model(batch, training=False)["logits"].numpy()
        return {"accuracy": float(np.mean(logits.argmax(-1) == data["label_ids"][:32]))}

    settings = dict(early_stopping_patience=2, early_stopping_min_delta=1.0, eval_every=2)
    settings.update(kw)
    config = TrainerConfig(
        output_dir=str(tmp_path / name),
        num_train_steps=steps,
        learning_rate=1e-3,
        optimizer="adamw",
        steps_per_loop=2,
        save_checkpoints_steps=2,
        **settings,
    )
    albert = tiny_config(max_position_embeddings=SEQ)
    task = ClassificationTask(albert, num_labels=2, dropout=0.1)
    return Trainer(
        task, config, tf.distribute.get_strategy(), fn, evaluate_fn=evaluate, log=lambda *_: None
    )


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
def test_interrupted_and_resumed_run_stops_at_the_uninterrupted_step(tmp_path):
    """Evaluations at 2, 4, 6 (none after the first improves by 1): the run stops at 6 of
    12. Interrupted after step 2 and resumed by a new trainer, it still stops at 6 — a
    resumed count starting from zero would stop at 8 — with the same weights."""
    from albert_tf.training import Preempted

    whole = _trainer(tmp_path, "whole")
    result = whole.train()
    assert whole.step == 6 and result["stopped_early_at"] == 6
    assert whole.early_stopping.bad_evaluations == 2
    first = _trainer(tmp_path, "parts")
    first._preempted = True  # what the SIGTERM handler sets
    with pytest.raises(Preempted):
        first.train()
    assert first.step == 2
    second = _trainer(tmp_path, "parts")
    assert second.step == 2 and second.early_stopping.bad_evaluations == 0
    assert second.early_stopping.best == whole.early_stopping.best  # the first evaluation's
    assert second.train()["stopped_early_at"] == 6
    for a, b in zip(whole.model.trainable_variables, second.model.trainable_variables):
        assert np.array_equal(a.numpy(), b.numpy()), a.path
    # The same command once more: the stopped run trains no further.
    again = _trainer(tmp_path, "parts")
    assert again.early_stopping.stopped_at == 6
    assert again.train()["step"] == 6 and again.step == 6


def test_bad_values_are_one_line(tmp_path):
    import tensorflow as tf

    from albert_tf.training import ClassificationTask, Trainer, TrainerConfig

    base = dict(output_dir=str(tmp_path / "x"), num_train_steps=4, learning_rate=1e-3)
    cases = [
        (dict(early_stopping_patience=3), "--early_stopping_patience=3 needs --eval_every > 0"),
        (dict(early_stopping_patience=-1, eval_every=2), "early_stopping_patience=-1"),
        (
            dict(early_stopping_patience=1, eval_every=2, early_stopping_min_delta=-0.1),
            "early_stopping_min_delta=-0.1",
        ),
    ]
    for settings, message in cases:
        with pytest.raises(ValueError, match=message) as e:
            TrainerConfig(**base, **settings)
        assert "\n" not in str(e.value)
    config = TrainerConfig(**base, early_stopping_patience=2, eval_every=2)
    data = tf.data.Dataset.from_tensors(
        {"input_ids": tf.ones([2, 8], tf.int32), "label_ids": tf.zeros([2], tf.float32)}
    ).repeat()
    strategy = tf.distribute.get_strategy()
    classify = ClassificationTask(tiny_config(), num_labels=2)
    with pytest.raises(ValueError, match="has no evaluation set to follow"):
        Trainer(classify, config, strategy, lambda ctx: data, log=lambda *_: None)
    regression = ClassificationTask(tiny_config(), num_labels=1)
    with pytest.raises(ValueError, match="this task has no metric to follow"):
        Trainer(
            regression,
            config,
            strategy,
            lambda ctx: data,
            evaluate_fn=lambda m: {},
            log=lambda *_: None,
        )


def test_a_resumed_run_keeps_its_patience_unless_allowed_and_never_turns_it_on_or_off():
    from albert_tf.checkpoints.run_record import RunIdentity, RunRecord, Segment
    from albert_tf.training.resume_checks import resume_rules

    RULES = resume_rules()
    record = RunRecord(
        RunIdentity("run_classifier"),
        (
            Segment(
                0,
                None,
                {
                    "early_stopping_patience": 2,
                    "early_stopping_min_delta": 0.0,
                    "layer_lr_decay": 0.8,
                },
            ),
        ),
    )
    same = dict(record.settings)
    assert record.check_settings(same, (), RULES) == []
    for name, value in (
        ("early_stopping_patience", 3),
        ("early_stopping_min_delta", 0.01),
        ("layer_lr_decay", 0.9),
    ):
        changed = dict(same, **{name: value})
        with pytest.raises(ValueError, match=f"--allow_changed={name}"):
            record.check_settings(changed, (), RULES)
        assert record.check_settings(changed, (name,), RULES)[0].startswith(name)
    with pytest.raises(ValueError, match="early stopping turned off") as e:
        record.check_settings(
            dict(same, early_stopping_patience=0), ("early_stopping_patience",), RULES
        )
    assert "\n" not in str(e.value)
