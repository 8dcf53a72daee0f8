"""run_ner.py's predictions over cached tagging features: one tag per word of every
sentence, and their scores against the gold tags. Values come in as arguments."""

from __future__ import annotations

import numpy as np


def predicted_tags(model, features, sentences, labels, batch_size, length_buckets, strategy):
    """Tags per word [sentence][word] of `sentences` (data.TaggedSentence, the file the
    `features` — data_pipeline.tagging.features.TaggingFeatures — were built from): the
    argmax of the logits [F, S, labels] at each word's first piece in its max-context
    window (data_pipeline.tagging.predictions.word_predictions)."""
    from albert_tf.training.prediction import predict_logits
    from data_pipeline.tagging.features import IGNORED
    from data_pipeline.tagging.predictions import word_predictions

    batches = features.dataset(batch_size, drop_remainder=False, length_buckets=length_buckets)
    out = predict_logits(
        model,
        batches,
        carry=("word_index", "sentence_index"),
        order_by="feature_index",
        per_token={"logits": 0.0, "word_index": IGNORED},
        length=features.max_seq_length,
        strategy=strategy,
        batch_size=batch_size,
    )
    predicted = np.argmax(out["logits"], axis=-1)  # [F, S]
    ids = word_predictions(
        out["word_index"], out["sentence_index"], predicted, [len(s.tokens) for s in sentences]
    )
    return [[labels[i] for i in row] for row in ids]


def ner_scores(sentences, predicted, scheme) -> tuple[dict, dict]:
    """(the flat figures an evaluation records: precision, recall, f1 micro, macro_f1,
    accuracy, f1/<type>; per type {precision, recall, f1, support}) of `predicted` tags
    against the gold tags of `sentences`, entities read with `scheme` (None: seqeval's
    default mode)."""
    from data_pipeline.tagging.metrics import entity_report, tagging_metrics

    gold = [list(s.tags) for s in sentences]
    flat = tagging_metrics(gold, predicted, scheme)
    report = entity_report(gold, predicted, scheme)
    per_type = {
        kind: {"precision": s.precision, "recall": s.recall, "f1": s.f1, "support": s.support}
        for kind, s in report.per_type.items()
    }
    return flat, per_type
