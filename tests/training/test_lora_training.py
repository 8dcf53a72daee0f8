"""LoRA runs on the trainer (albert_tf.training.lora_task), tiny classifier with dropout:
stopped after its first loop and resumed by a new trainer (the base reloaded from
--init_checkpoint, then the adapter checkpoint), a run ends bit for bit where the
uninterrupted one does; its checkpoints hold only the adapters and the head; the encoder
never moves; the merged model gives the adapted logits."""

import numpy as np
import pytest

from tests.support.harness import tiny_config

SEQ = 12


def _data(n=48):
    rng = np.random.default_rng(0)
    return {
        "input_ids": rng.integers(5, 99, (n, SEQ)).astype(np.int32),
        "input_mask": np.ones((n, SEQ), np.int32),
        "segment_ids": np.zeros((n, SEQ), np.int32),
        "label_ids": rng.integers(0, 2, n).astype(np.int32),
    }


def _albert():
    return tiny_config(
        max_position_embeddings=SEQ, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A saved encoder (the frozen base of every run here)."""
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.encoder import AlbertEncoder

    keras.utils.set_random_seed(11)
    encoder = AlbertEncoder(_albert())
    encoder.build()
    return save_checkpoint(encoder, str(tmp_path_factory.mktemp("base")))


def _trainer(tmp_path, name, base, steps=4):
    import tensorflow as tf

    from albert_tf.modeling.lora import LoraSettings
    from albert_tf.training import ClassificationTask, Trainer, TrainerConfig
    from albert_tf.training.lora_task import LoraTask

    data = _data()

    def fn(ctx):
        ds = tf.data.Dataset.from_tensor_slices(data).shuffle(48, seed=3).repeat()
        return ds.batch(ctx.get_per_replica_batch_size(8), drop_remainder=True)

    config = TrainerConfig(
        output_dir=str(tmp_path / name),
        num_train_steps=steps,
        learning_rate=1e-2,
        optimizer="adamw",
        steps_per_loop=2,
        save_checkpoints_steps=2,
    )
    settings = LoraSettings(lora_rank=2, lora_alpha=4.0, lora_targets=("query", "value", "ffn"))
    task = LoraTask(ClassificationTask(_albert(), num_labels=2, dropout=0.1), settings, seed=5)
    return Trainer(
        task, config, tf.distribute.get_strategy(), fn, init_checkpoint=base, log=lambda *_: None
    )


@pytest.mark.slow  # four tiny trainers (~15 s on an idle machine)
def test_lora_run_resumed_after_a_stop_ends_with_the_uninterrupted_weights(tmp_path, base):
    from albert_tf.checkpoints import load_checkpoint
    from albert_tf.checkpoints.loading import _model_children
    from albert_tf.modeling.encoder import AlbertEncoder
    from albert_tf.training import Preempted

    whole = _trainer(tmp_path, "whole", base)
    whole.train()
    first = _trainer(tmp_path, "parts", base)
    first._preempted = True  # what the SIGTERM handler sets
    with pytest.raises(Preempted):
        first.train()
    assert first.step == 2
    second = _trainer(tmp_path, "parts", base)
    assert second.step == 2
    second.train()
    assert second.step == 4
    for a, b in zip(whole.model.weights, second.model.weights):
        assert np.array_equal(a.numpy(), b.numpy()), a.path
    # The adapters trained (B moved off zero); the encoder is the base, untouched.
    adapters = [v for v in second.model.trainable_variables if "lora_b" in v.path]
    assert adapters and all(np.abs(v.numpy()).max() > 0 for v in adapters)
    saved = AlbertEncoder(_albert())
    load_checkpoint(saved, base)
    for a, b in zip(saved.weights, second.model.encoder.weights):
        assert np.array_equal(a.numpy(), b.numpy()), b.path
    # The run's checkpoints hold the adapters and the head, not the encoder.
    latest = second.manager.latest_checkpoint
    assert _model_children(latest) == {"lora", "classifier_head"}
    import tensorflow as tf

    keys = [k for k, _ in tf.train.list_variables(latest)]
    assert not any("embeddings" in k or "word_embeddings" in k for k in keys), keys
    # The merged plain model (what is exported) gives the adapted logits.
    data = _data(6)
    x = {k: data[k] for k in ("input_ids", "input_mask", "segment_ids")}
    merged = second.task.merged_model(second.model)
    assert not any("lora" in v.path for v in merged.weights)
    np.testing.assert_allclose(
        merged(x)["logits"].numpy(), second.model(x)["logits"].numpy(), rtol=1e-5, atol=1e-6
    )
