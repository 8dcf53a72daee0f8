"""Each fine-tuning task's predictions over its cached features, in input order, computed on
a strategy's replicas in batches grouped by length (or padded to the maximum:
`length_buckets` None): classifier logits, SQuAD answers, NER tags per word and their
entity scores. Values come in as arguments."""

from __future__ import annotations

import numpy as np

# The albert SQuAD head's outputs (a start × end beam and the answer-class logit).
BEAM_OUTPUTS = (
    "start_top_log_probs",
    "start_top_index",
    "end_top_log_probs",
    "end_top_index",
    "cls_logits",
)


def classifier_logits(model, features, batch_size: int, length_buckets, strategy):
    """(logits [N, labels or choices], label_ids [N]) of every record of `features` (a
    TaskFeatures), in file order."""
    from albert_tf.training.prediction import predict_logits

    batches = features.dataset(batch_size, drop_remainder=False, length_buckets=length_buckets)
    out = predict_logits(
        model,
        batches,
        carry=("label_ids",),
        order_by="example_index",
        strategy=strategy,
        batch_size=batch_size,
    )
    return out["logits"], out["label_ids"]


def squad_answers(
    model,
    features,
    threshold: float,
    strategy,
    *,
    batch_size: int,
    length_buckets,
    beam: bool,
    n_best_size: int,
    max_answer_length: int,
    version_2_with_negative: bool,
):
    """(predictions, nbest, null_odds) for the questions of `features` (SquadFeatures):
    the albert head's beam (`beam`) or start/end logits (data_pipeline.squad.postprocess);
    v2.0 answers "no answer" above `threshold`."""
    from albert_tf.training.prediction import predict_logits
    from data_pipeline.squad.features import PER_TOKEN_FILL, PREDICTION_KEYS
    from data_pipeline.squad.postprocess import postprocess, postprocess_beam

    dataset = features.prediction_dataset(batch_size, length_buckets)
    out = predict_logits(
        model,
        dataset,
        BEAM_OUTPUTS if beam else ("start_logits", "end_logits"),
        carry=PREDICTION_KEYS,
        order_by="feature_index",
        per_token=PER_TOKEN_FILL,
        length=features.max_seq_length,
        strategy=strategy,
        batch_size=batch_size,
    )
    sizes = (n_best_size, max_answer_length)
    if beam:
        return postprocess_beam(features.examples, out, out, *sizes, threshold)
    logits = (out["start_logits"], out["end_logits"])
    return postprocess(features.examples, out, *logits, *sizes, version_2_with_negative, threshold)


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
    check_gold_scheme(sentences, gold, scheme)
    flat = tagging_metrics(gold, predicted, scheme)
    report = entity_report(gold, predicted, scheme)
    per_type = {
        kind: {"precision": s.precision, "recall": s.recall, "f1": s.f1, "support": s.support}
        for kind, s in report.per_type.items()
    }
    return flat, per_type


def check_gold_scheme(sentences, gold, scheme) -> None:
    """ValueError (one line naming the dev file's line and --tag_scheme) when the strict
    `scheme` cannot read the gold tags (data_pipeline.tagging.metrics.misread): IOB1 dev
    tags read as IOB2, or BIO ones as IOBES, would otherwise score near 0 for any model,
    and best/ and early stopping would follow it. seqeval's default mode (--tag_scheme
    none) reads such tags as conlleval does."""
    from data_pipeline.tagging.metrics import misread

    found = misread(gold, scheme) if scheme is not None else None
    if found is None:
        return
    index, position, strict, default = found
    line = sentences[index].line
    line = line + position if line is not None else f"of sentence {index + 1}"
    before = repr(gold[index][position - 1]) if position else "the sentence start"
    raise ValueError(
        f"the dev file's line {line}: gold tag {gold[index][position]!r} after {before} "
        f"is not {scheme} (IOB1, or mixed schemes?): {scheme} reads {strict} of the "
        f"{default} gold entities seqeval's default mode reads, so F1 would not measure "
        f"the model; give --tag_scheme none (seqeval's default mode, as conlleval) or the "
        f"scheme the files are written in"
    )
