"""The fine-tuning runners' predictions over their cached features: classifier logits and
SQuAD answers, in input order, computed on a strategy's replicas in batches grouped by
length (or padded to the maximum: `length_buckets` None). Values come in as arguments."""

from __future__ import annotations

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
