"""Fine-tuning models and the classification task on the shared trainer."""

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config


def test_classifier_shapes_parameters_and_checkpoint_round_trip(tmp_path):
    from albert_tf import load_checkpoint, save_checkpoint
    from albert_tf.modeling.encoder import count_parameters
    from albert_tf.modeling.models import AlbertClassifier

    config = tiny_config()
    model = AlbertClassifier(config, num_labels=3)
    model.build()
    batch = random_batch()
    batch.pop("masked_lm_positions")
    out = model(batch)
    assert out["logits"].shape == (3, 3) and out["logits"].dtype.name == "float32"
    h = config.hidden_size
    assert model.count_params() == count_parameters(config) + h * 3 + 3
    save_checkpoint(model, str(tmp_path / "c"))
    again = AlbertClassifier(config, num_labels=3)
    report = load_checkpoint(again, str(tmp_path / "c"))
    assert "classifier_head" in report.restored
    np.testing.assert_allclose(again(batch)["logits"], out["logits"], atol=1e-6)


def test_multiple_choice_scores_each_choice_alone_and_ignores_padding_choices():
    import tensorflow as tf

    from albert_tf.modeling.models import AlbertMultipleChoice

    model = AlbertMultipleChoice(tiny_config())
    model.build()
    batch = random_batch(batch=3)
    batch.pop("masked_lm_positions")
    stacked = {k: np.stack([v, v[::-1]], axis=0) for k, v in batch.items()}  # [2, 3, S]
    stacked["input_mask"][1, 2] = 0  # padding choice
    logits = model(stacked)["logits"].numpy()
    assert logits.shape == (2, 3)
    # The score of a choice does not depend on the other choices of its question.
    alone = model({k: v[:1, :1] for k, v in stacked.items()})["logits"].numpy()
    assert alone[0, 0] == pytest.approx(logits[0, 0], abs=1e-5)
    assert logits[1, 2] < -1e8
    probs = tf.nn.softmax(logits[1]).numpy()
    assert probs[2] == pytest.approx(0.0) and probs[:2].sum() == pytest.approx(1.0)


@pytest.mark.parametrize("regression", [False, True])
def test_classification_task_learns_with_the_trainer(tmp_path, regression):
    import tensorflow as tf

    from albert_tf.training import ClassificationTask, Trainer, TrainerConfig

    rng = np.random.default_rng(0)
    n, seq = 64, 12
    ids = rng.integers(5, 99, (n, seq)).astype(np.int32)
    ids[:, 0] = 2
    labels = (ids[:, 1] % 2).astype(np.float32 if regression else np.int32)
    data = {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
        "label_ids": labels,
    }

    def fn(ctx):
        return tf.data.Dataset.from_tensor_slices(data).repeat().batch(16, drop_remainder=True)

    task = ClassificationTask(
        tiny_config(max_position_embeddings=seq), num_labels=1 if regression else 2, dropout=0.0
    )
    # lr 1e-3: the official AdamW's first steps are ~3.2× Keras' (no bias correction).
    trainer = Trainer(
        task,
        TrainerConfig(
            output_dir=str(tmp_path),
            num_train_steps=60,
            learning_rate=1e-3,
            optimizer="adamw",
            steps_per_loop=20,
        ),
        tf.distribute.get_strategy(),
        fn,
        log=lambda *_: None,
    )
    result = trainer.train()["train"]
    if regression:
        assert result["loss"] < 0.2  # MSE of a 0/1 target; predicting 0.5 gives 0.25
    else:
        assert result["accuracy"] > 0.6


def test_classifier_computes_the_last_block_at_cls_only_exactly():
    """AlbertClassifier runs its last block at [CLS] only; logits and gradients equal
    those of the head on the full encoder's pooled output."""
    import tensorflow as tf

    from albert_tf.modeling.models import AlbertClassifier

    model = AlbertClassifier(tiny_config(num_hidden_groups=2, inner_group_num=2), 3, dropout=0.0)
    model.build()
    batch = {
        k: v for k, v in random_batch().items() if k in ("input_ids", "input_mask", "segment_ids")
    }
    with tf.GradientTape(persistent=True) as tape:
        got = model(batch, training=True)["logits"]
        full = model.encoder(batch, training=True)
        want = model.classifier_head(full["pooled_output"], training=True)
        loss_got, loss_want = tf.reduce_sum(got**2), tf.reduce_sum(want**2)
    np.testing.assert_allclose(got, want, atol=1e-5)
    for a, b in zip(
        tape.gradient(loss_got, model.trainable_variables),
        tape.gradient(loss_want, model.trainable_variables),
    ):
        np.testing.assert_allclose(
            tf.convert_to_tensor(a), tf.convert_to_tensor(b), atol=1e-5, rtol=1e-4
        )
