"""The trainer's arithmetic, in process: exact global losses, gradient accumulation equal to
the large batch, global-norm clipping, mixed precision that learns like float32."""

import numpy as np
import pytest

from tests.support.harness import tiny_config

SEQ, PREDS, VOCAB = 16, 4, 99


def _examples(n=64, seed=0):
    """A learnable synthetic pretraining set: the label at a masked position is a function
    of the position (5 + position); SOP label = whether the second token is even. Some
    masked slots are padding (weight 0), so denominators differ between batches."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, (n, SEQ)).astype(np.int32)
    ids[:, 0] = 2
    positions = np.sort(
        np.stack([rng.choice(np.arange(2, SEQ), PREDS, replace=False) for _ in range(n)]), axis=1
    ).astype(np.int32)
    weights = (rng.random((n, PREDS)) < 0.8).astype(np.float32)
    weights[:, 0] = 1.0
    labels = positions + 5
    masked = ids.copy()
    np.put_along_axis(masked, positions, 4, axis=1)
    segments = np.zeros_like(ids)
    segments[:, SEQ // 2 :] = 1
    return {
        "input_ids": masked,
        "input_mask": np.ones_like(ids),
        "segment_ids": segments,
        "masked_lm_positions": positions,
        "masked_lm_ids": labels * (weights > 0),
        "masked_lm_weights": weights,
        "next_sentence_labels": (ids[:, 1:2] % 2).astype(np.int32),
    }


def _trainer(
    tmp_path, name, batch, accum=1, steps=3, dtype="float32", lr=1e-3, data=None, log=None, **kw
):
    """A Trainer on `data` (default `_examples()`); `batch` is the micro-batch (global
    batch / accum)."""
    import tensorflow as tf

    from albert_tf.training import PretrainingTask, Trainer, TrainerConfig

    data = _examples() if data is None else data
    log = log or (lambda *_: None)

    def fn(ctx):
        return (
            tf.data.Dataset.from_tensor_slices(data)
            .repeat()
            .batch(ctx.get_per_replica_batch_size(batch), drop_remainder=True)
        )

    config = TrainerConfig(
        output_dir=str(tmp_path / name),
        num_train_steps=steps,
        learning_rate=lr,
        optimizer=kw.pop("optimizer", "adamw"),
        grad_accum_steps=accum,
        steps_per_loop=kw.pop("steps_per_loop", steps),
        dtype=dtype,
        **kw,
    )
    task = PretrainingTask(tiny_config(max_position_embeddings=SEQ), SEQ, PREDS)
    return Trainer(task, config, tf.distribute.get_strategy(), fn, log=log)


def _weights(trainer):
    return [v.numpy().astype(np.float64) for v in trainer.model.trainable_variables]


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
def test_gradient_accumulation_equals_the_large_batch(tmp_path):
    big = _trainer(tmp_path, "big", batch=8)
    big.train()
    accumulated = _trainer(tmp_path, "acc", batch=4, accum=2)  # 2 micro-batches of 4
    accumulated.train()
    for a, b in zip(_weights(big), _weights(accumulated)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    # A genuinely different update (a batch of 4) would not match.
    small = _trainer(tmp_path, "small", batch=4)
    small.train()
    assert max(np.max(np.abs(a - b)) for a, b in zip(_weights(big), _weights(small))) > 1e-4


@pytest.mark.integration  # training steps of a model: over the unit tier's 5 s
def test_reported_loss_is_the_global_mean_and_grad_norm_is_before_clipping(tmp_path):
    import tensorflow as tf

    trainer = _trainer(tmp_path, "one", batch=8, steps=1, lr=0.0, clip_norm=1e-3)
    data = {k: v[:8] for k, v in _examples().items()}
    with tf.GradientTape() as tape:
        out = trainer.model(data, training=True)
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=data["masked_lm_ids"], logits=out["mlm_logits"]
        ).numpy()
        mlm = (nll * data["masked_lm_weights"]).sum() / data["masked_lm_weights"].sum()
        sop_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=data["next_sentence_labels"][:, 0], logits=out["sop_logits"]
        )
        loss = tf.reduce_sum(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=data["masked_lm_ids"], logits=out["mlm_logits"]
            )
            * data["masked_lm_weights"]
        ) / data["masked_lm_weights"].sum() + tf.reduce_mean(sop_nll)
    grads = tape.gradient(loss, trainer.model.trainable_variables)
    norm = float(tf.linalg.global_norm([tf.convert_to_tensor(g) for g in grads]))
    result = trainer.train()["train"]
    assert result["mlm_loss"] == pytest.approx(mlm, rel=1e-5)
    assert result["sop_loss"] == pytest.approx(float(tf.reduce_mean(sop_nll)), rel=1e-5)
    assert result["grad_norm"] == pytest.approx(norm, rel=1e-4)
    assert norm > 1e-3  # so clipping to 1e-3 happened, and the norm is pre-clip


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mixed_precision_learns_like_float32(tmp_path, dtype):
    steps = 60
    ref = _trainer(tmp_path, "fp32", batch=16, steps=steps, lr=3e-3)
    ref_result = ref.train()["train"]
    mixed = _trainer(tmp_path, dtype, batch=16, steps=steps, lr=3e-3, dtype=dtype)
    mixed_result = mixed.train()["train"]
    # Both learn: well below the initial loss (ln 99 + ln 2 ≈ 5.3) ...
    assert ref_result["loss"] < 4.3
    assert mixed_result["loss"] < 4.3
    # ... and end close to each other.
    assert mixed_result["loss"] == pytest.approx(ref_result["loss"], rel=0.15)
    assert all(str(v.dtype) == "float32" for v in mixed.model.trainable_variables)


@pytest.mark.parametrize("masked", [1, 2, 14])
def test_mlm_loss_is_the_official_formula(tmp_path, masked):
    """Official run_pretraining.py: Σ w·nll / (Σ w + 1e-5), in the step and in the report;
    with one masked token the (Σ w)-only mean would be 1e-5 off, relatively."""
    import tensorflow as tf

    from albert_tf.training import divisors

    data = {k: v[:8].copy() for k, v in _examples().items()}
    weights = np.zeros((8, PREDS), np.float32)
    weights.flat[:masked] = 1.0  # `masked` tokens in the batch
    data["masked_lm_weights"] = weights
    data["masked_lm_ids"] = data["masked_lm_ids"] * (weights > 0)
    trainer = _trainer(tmp_path, f"m{masked}", batch=8, steps=1, lr=0.0, data=data)
    logits = trainer.model(data, training=False)["mlm_logits"].numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_probs, data["masked_lm_ids"][..., None], -1)[..., 0]
    official = (weights * nll).sum() / (weights.sum() + 1e-5)
    plain = (weights * nll).sum() / weights.sum()
    assert abs(official - plain) > 5e-7 * official  # the formulas are distinguishable
    # The loss the step differentiates ...
    task = trainer.task
    dens = {k: tf.constant(v) for k, v in task.denominators(data).items()}
    loss, _ = trainer.train_step.loss(
        data, divisors(task.losses, dens, task.denominator_offsets), training=False
    )
    sop = float(divisors(task.losses, dens, {})["sop_loss"])
    step_mlm = float(loss) - float(task.terms(data, trainer.model(data))["sop_loss"]) / sop
    assert step_mlm == pytest.approx(official, rel=2e-7)
    assert abs(step_mlm - official) < abs(step_mlm - plain)
    # ... and the reported one; the accuracy keeps the exact Σ w.
    result = trainer.train()["train"]
    assert result["mlm_loss"] == pytest.approx(official, rel=2e-7)
    assert abs(result["mlm_loss"] - official) < abs(result["mlm_loss"] - plain)
    correct = (logits.argmax(-1) == data["masked_lm_ids"]) * weights
    assert result["mlm_accuracy"] == pytest.approx(correct.sum() / masked, abs=1e-7)
