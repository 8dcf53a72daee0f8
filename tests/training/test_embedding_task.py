"""Sentence-embedding fine-tuning (`EmbeddingTask`) on the shared trainer, on real slices:
cosine regression on STS-B train and in-batch negatives on MRPC positives lower their loss
on the training pairs; STS-B dev Spearman of cosine is reported before and after, and the
best checkpoint follows it."""

import os

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, tiny_config

SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
GLUE = SHARED_DATA / "glue"
LENGTH = 32


@pytest.fixture(scope="module")
def tokenizer():
    if not SPM.exists() or not (GLUE / "STS-B").exists() or not (GLUE / "MRPC").exists():
        pytest.skip(f"{SPM} or {GLUE}/STS-B, MRPC are absent (../shared/data)")
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    return AlbertTokenizer(str(SPM))


def _train(tmp_path, task, pairs, dev, steps):
    """(loss on the first 32 training pairs before, after; Spearman before, after; the
    trainer)."""
    import tensorflow as tf

    from albert_tf.training import Trainer, TrainerConfig
    from albert_tf.training.embedding_task import pair_dataset
    from albert_tf.training.sentence_similarity import cosine_spearman

    config = TrainerConfig(
        output_dir=str(tmp_path / task.objective),
        num_train_steps=steps,
        learning_rate=2e-3,
        optimizer="adamw",
        steps_per_loop=steps,
        eval_every=steps,
        save_checkpoints_steps=steps,
    )
    trainer = Trainer(
        task,
        config,
        tf.distribute.get_strategy(),
        lambda ctx: pair_dataset(pairs, 16, seed=0, input_context=ctx),
        evaluate_fn=lambda model: {"spearman": cosine_spearman(model, dev)},
        log=lambda *_: None,
    )
    batch = next(iter(pair_dataset(pairs, 32, seed=1)))

    def loss():
        out = task.call_model(trainer.model, batch, training=False)
        return float(task.terms(batch, out)["embedding_loss"]) / 32

    before, spearman_before = loss(), trainer.evaluate()["spearman"]
    trainer.train()
    return before, loss(), spearman_before, trainer.evaluate()["spearman"], trainer


def test_cosine_regression_on_sts_b_lowers_the_loss_and_reports_spearman(tmp_path, tokenizer):
    from albert_tf.training.embedding_task import EmbeddingTask
    from albert_tf.training.sentence_similarity import sts_pairs

    train = sts_pairs(str(GLUE / "STS-B"), "train", tokenizer, LENGTH, limit=320)
    dev = sts_pairs(str(GLUE / "STS-B"), "dev", tokenizer, LENGTH, limit=120)
    config = tiny_config(vocab_size=30000, max_position_embeddings=LENGTH)
    task = EmbeddingTask(config, objective="cosine", pooling="mean")
    before, after, rho_before, rho_after, trainer = _train(tmp_path, task, train, dev, 40)
    print(f"cosine: loss {before:.4f} → {after:.4f}; Spearman {rho_before:.3f} → {rho_after:.3f}")
    assert after < 0.8 * before
    assert -1 <= rho_before <= 1 and -1 <= rho_after <= 1
    best = trainer.best_record()
    assert best["metric"] == "spearman"
    assert best["value"] == pytest.approx(max(rho_before, rho_after))
    lines = open(os.path.join(trainer.config.output_dir, "metrics.jsonl")).read().splitlines()
    assert any("spearman" in line for line in lines)
    # The trained encoder → the embedding SavedModel (mean pooling, normalized): the
    # same vectors as the trained embedder, normalized.
    import tensorflow as tf

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.serving.export import export
    from data_pipeline.tokenization.spec import TokenizerSpec

    save_checkpoint(trainer.model.encoder, str(tmp_path / "trained"))
    version = export(
        "encoder",
        str(tmp_path / "trained"),
        str(tmp_path / "serving"),
        tokenizer=TokenizerSpec.from_files(str(SPM)),
        max_seq_length=LENGTH,
        pooling="mean",
        normalize=True,
    )
    texts = [line.split("\t")[7] for line in (GLUE / "STS-B" / "dev.tsv").open()][1:5]
    got = tf.saved_model.load(version).signatures["embed"](text=tf.constant(texts))
    want = trainer.model({k: v[:4] for k, v in dev.first.items()}, training=False)
    want = want["embeddings"].numpy()
    want /= np.linalg.norm(want, axis=-1, keepdims=True)
    np.testing.assert_allclose(got["embeddings"].numpy(), want, atol=1e-5)


def test_in_batch_negatives_on_mrpc_positives_lower_the_loss(tmp_path, tokenizer):
    from albert_tf.training.embedding_task import EmbeddingTask, positive_pairs
    from albert_tf.training.sentence_similarity import sts_pairs

    train = positive_pairs(str(GLUE / "MRPC"), "mrpc", tokenizer, LENGTH, limit=160)
    assert len(train) == 160 and np.all(train.scores == 5.0)
    dev = sts_pairs(str(GLUE / "STS-B"), "dev", tokenizer, LENGTH, limit=32)
    config = tiny_config(vocab_size=30000, max_position_embeddings=LENGTH)
    task = EmbeddingTask(config, objective="contrastive", pooling="mean")
    before, after, _, _, _ = _train(tmp_path, task, train, dev, 20)
    print(f"contrastive: loss {before:.4f} → {after:.4f}")
    assert after < 0.8 * before


def test_bad_objective_is_one_line():
    from albert_tf.training.embedding_task import EmbeddingTask

    with pytest.raises(
        ValueError, match="objective 'triplet': expected one of cosine, contrastive"
    ):
        EmbeddingTask(tiny_config(), objective="triplet")
    with pytest.raises(ValueError, match="pooling 'sum'"):
        EmbeddingTask(tiny_config(), pooling="sum")
