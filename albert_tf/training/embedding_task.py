"""Sentence-embedding fine-tuning on the shared trainer: `EmbeddingTask` trains an
`AlbertEmbedder` from sentence pairs with one of `embedding_losses`' objectives, and
`pair_dataset` feeds it; the best checkpoint follows the Spearman correlation of the pairs'
cosine on STS-B dev (`sentence_similarity.cosine_spearman`, through the trainer's
`evaluate_fn`).

Objectives:
  cosine       regression of cos(u, v) on the pair's score / 5 (STS-B train pairs);
  contrastive  in-batch negatives over positive pairs only (MRPC or AFQMC paraphrases):
               each first sentence's positive is its second, every other second sentence
               of the replica's micro-batch is a negative (negatives are per micro-batch:
               gradient accumulation does not enlarge them).

Batches: `first_input_ids`, `first_input_mask`, `first_segment_ids`, the same `second_*`,
int32 [B, S]; `score` float32 [B] (cosine only). Each side is encoded alone,
`[CLS] sentence [SEP]`.
"""

from __future__ import annotations

from albert_tf.training.embedding_settings import OBJECTIVES
from albert_tf.training.tasks import Task

SIDES = ("first", "second")
INPUTS = ("input_ids", "input_mask", "segment_ids")


class EmbeddingTask(Task):
    """`objective` (one of OBJECTIVES) on an `AlbertEmbedder(pooling)` (not normalized in
    training: both losses normalize). Loss: `embedding_loss`, a mean over the pairs."""

    losses = {"embedding_loss": "pairs"}
    best_metric = "spearman"

    def __init__(self, albert_config, objective: str = "cosine", pooling: str = "mean"):
        from albert_tf.modeling.pooling import check_pooling

        if objective not in OBJECTIVES:
            raise ValueError(f"objective {objective!r}: expected one of {', '.join(OBJECTIVES)}")
        self.albert_config = albert_config
        self.objective = objective
        self.pooling = check_pooling(pooling)

    def build_model(self):
        from albert_tf.modeling.pooling import AlbertEmbedder

        model = AlbertEmbedder(self.albert_config, pooling=self.pooling)
        model.build()
        return model

    def call_model(self, model, batch, training: bool):
        """Both sides in one encoder call ([2B, S]): the first B rows' embeddings are the
        first sentences'."""
        import tensorflow as tf

        joined = {k: tf.concat([batch[f"first_{k}"], batch[f"second_{k}"]], 0) for k in INPUTS}
        return model(joined, training=training)

    def denominators(self, batch):
        import tensorflow as tf

        pairs = tf.cast(tf.shape(batch["first_input_ids"])[0], tf.float32)
        return {"pairs": pairs, "examples": pairs}  # (examples: the progress line's ex/s)

    def terms(self, batch, outputs):
        import tensorflow as tf

        from albert_tf.training.embedding_losses import (
            cosine_similarity_loss,
            multiple_negatives_ranking_loss,
            sts_labels,
        )

        pairs = tf.shape(batch["first_input_ids"])[0]
        embeddings = outputs["embeddings"]
        u, v = embeddings[:pairs], embeddings[pairs:]
        if self.objective == "cosine":
            loss = cosine_similarity_loss(u, v, sts_labels(batch["score"]))
        else:
            loss = multiple_negatives_ranking_loss(u, v)
        return {"embedding_loss": loss * tf.cast(pairs, tf.float32)}  # a per-replica sum


def pair_dataset(pairs, batch_size: int, seed: int, input_context=None):
    """`sentence_similarity.SentencePairs` → a repeated, shuffled tf.data.Dataset of
    batches (the module docstring's keys); whole batches only (in-batch negatives need
    full ones), sharded by `input_context` across input pipelines."""
    import tensorflow as tf

    data = {f"{side}_{k}": getattr(pairs, side)[k] for side in SIDES for k in INPUTS}
    data["score"] = pairs.scores
    ds = tf.data.Dataset.from_tensor_slices(data)
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = ds.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True).repeat()
    return ds.batch(batch_size, drop_remainder=True)


def positive_pairs(data_dir: str, task_name: str, tokenizer, max_seq_length: int, limit=None):
    """The positive pairs (label "1") of a paraphrase task's train split (GLUE "mrpc",
    CLUE "afqmc", read by data_pipeline.classification) as `SentencePairs` (score 5)."""
    import numpy as np

    from albert_tf.training.sentence_similarity import SentencePairs, single_sentence_features
    from data_pipeline.classification.benchmark_files import read_task

    examples = [e for e in read_task(data_dir, task_name, "train") if str(e.label) == "1"]
    examples = examples[:limit]
    if not examples:
        raise ValueError(f"{data_dir}: no positive pairs (label 1) in {task_name}'s train split")
    return SentencePairs(
        single_sentence_features([e.text_a for e in examples], tokenizer, max_seq_length),
        single_sentence_features([e.text_b for e in examples], tokenizer, max_seq_length),
        np.full([len(examples)], 5.0, np.float32),
    )
