"""Sentence-pair similarity data and its evaluation for embedding models: STS-B pairs as
features for each side, embeddings in batches, and Spearman's rank correlation of the
pairs' cosine similarity with the gold scores (the STS benchmark's metric for embeddings,
as sentence-transformers' EmbeddingSimilarityEvaluator reports it).

The pairs come from data_pipeline.classification's GLUE reader (STS-B is a regression
task there: header and score range checked, errors name file:line); each sentence is
encoded alone, `[CLS] sentence [SEP]`, by the classification features' packer.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from data_pipeline.classification.benchmark_files import read_task
from data_pipeline.classification.examples import Example
from data_pipeline.classification.features import convert_examples
from data_pipeline.classification.metrics import spearman  # the one Spearman (GLUE's STS-B too)


@dataclasses.dataclass(frozen=True)
class SentencePairs:
    """N sentence pairs as model features.

    first, second: {input_ids, input_mask, segment_ids}, int32 [N, max_seq_length] each.
    scores: float32 [N], the gold scores (STS-B: 0-5).
    """

    first: dict
    second: dict
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)

    def take(self, n: int) -> SentencePairs:
        """The first n pairs."""
        return SentencePairs(
            {k: v[:n] for k, v in self.first.items()},
            {k: v[:n] for k, v in self.second.items()},
            self.scores[:n],
        )


def single_sentence_features(texts: list[str], tokenizer, max_seq_length: int) -> dict:
    """Texts → {input_ids, input_mask, segment_ids} int32 [N, max_seq_length]:
    `[CLS] text [SEP]`, cut at the end to fit, zero padding."""
    examples = [Example(str(i), t, None, None) for i, t in enumerate(texts)]
    features = convert_examples(examples, tokenizer, max_seq_length, labels=None)
    return {k: features[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}


def sts_pairs(
    data_dir: str, split: str, tokenizer, max_seq_length: int, limit: int | None = None
) -> SentencePairs:
    """STS-B `split` ("train" or "dev") of a GLUE STS-B directory → `SentencePairs`
    (the first `limit` pairs only, when given: the whole file is still read and checked)."""
    if split not in ("train", "dev"):
        raise ValueError(f"split {split!r}: STS-B pairs with scores are 'train' or 'dev'")
    examples = read_task(data_dir, "sts-b", split)[:limit]
    return SentencePairs(
        single_sentence_features([e.text_a for e in examples], tokenizer, max_seq_length),
        single_sentence_features([e.text_b for e in examples], tokenizer, max_seq_length),
        np.array([e.label for e in examples], np.float32),
    )


def embed(embedder, features: dict, batch_size: int = 64) -> np.ndarray:
    """`AlbertEmbedder` over features [N, S] in batches (no dropout) → float32 [N, H]."""
    n = len(features["input_ids"])
    out = [
        embedder({k: v[i : i + batch_size] for k, v in features.items()}, training=False)[
            "embeddings"
        ].numpy()
        for i in range(0, n, batch_size)
    ]
    return np.concatenate(out).astype(np.float32)


def cosine_scores(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """float [N, H], [N, H] → float64 [N]: cos(u_i, v_i) (0 where a vector is zero)."""
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
    norms = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    return np.sum(u * v, axis=1) / np.maximum(norms, 1e-12)


def pair_cosines(embedder, pairs: SentencePairs, batch_size: int = 64) -> np.ndarray:
    """float64 [N]: cos(embedding(first_i), embedding(second_i)) of each pair."""
    u = embed(embedder, pairs.first, batch_size)
    v = embed(embedder, pairs.second, batch_size)
    return cosine_scores(u, v)


def cosine_spearman(embedder, pairs: SentencePairs, batch_size: int = 64) -> float:
    """Spearman's correlation of cos(embedding(first), embedding(second)) with the gold
    scores: the STS evaluation of an embedding model."""
    return spearman(pair_cosines(embedder, pairs, batch_size), pairs.scores)


def write_similarities(path: str, pairs, similarities) -> None:
    """`path` (JSON lines, written atomically): one line a pair of `pairs`
    (pair_files.TextPairs), in the file's order: {"line": where it starts in its file,
    "text_a", "text_b", "similarity": the cosine, and "score": the gold score when the
    file has scores}."""
    import json

    from data_pipeline.io.atomic import atomic_open

    with atomic_open(path) as f:
        for i, similarity in enumerate(similarities):
            row = {"line": pairs.lines[i], "text_a": pairs.texts_a[i], "text_b": pairs.texts_b[i]}
            row["similarity"] = round(float(similarity), 6)
            if pairs.scores is not None:
                row["score"] = pairs.scores[i]
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def pair_features(pairs, tokenizer, max_seq_length: int, max_score: float) -> SentencePairs:
    """`pair_files.TextPairs` → `SentencePairs` (each side packed alone, `[CLS] s [SEP]`,
    `max_seq_length`). Scores are put on STS-B's 0-5 scale (× 5 / `max_score`): the cosine
    objective regresses on score / 5 (embedding_losses.sts_labels), so its label is
    score / max_score in [0, 1]; the Spearman is unchanged by the scale. Pairs without
    scores (to predict) get zeros."""
    from albert_tf.training.embedding_losses import STS_MAX_SCORE

    given = pairs.scores if pairs.scores is not None else [0.0] * len(pairs)
    scores = np.asarray(given, np.float64) * (STS_MAX_SCORE / max_score)
    return SentencePairs(
        single_sentence_features(pairs.texts_a, tokenizer, max_seq_length),
        single_sentence_features(pairs.texts_b, tokenizer, max_seq_length),
        scores.astype(np.float32),
    )
