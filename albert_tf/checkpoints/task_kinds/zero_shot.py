"""The zero-shot kind: an NLI classifier served as a classifier over labels chosen per request
(`albert_tf.serving.tasks.zero_shot.modules`). Each (text, hypothesis) pair, the hypothesis a
template with the candidate label in it ("This example is {}."), is a premise/hypothesis
pair for the classifier; its entailment logit scores the label.

It is made from a fine-tuned classifier directory (run_classifier --task_name mnli or rte, or
a Hugging Face AlbertForSequenceClassification imported by `checkpoints.convert`) by
`from_classifier`: the classifier's labels must name an entailment class (a label starting
with "entail", any case, as Hugging Face's pipeline finds it), its input must be a text
pair, and it must be single-label softmax (not regression, not multi-label). Its fields
record the two indices the scores read and the default template; its model is the
classifier's, weights unchanged."""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_kinds.classifier import KIND as CLASSIFIER
from albert_tf.checkpoints.task_kinds.kind import TaskKind, no_on_device

DEFAULT_TEMPLATE = "This example is {}."
# The slot of the label in a hypothesis template: exactly one, no other braces.
SLOT = "{}"


@dataclasses.dataclass(frozen=True)
class ZeroShotFields:
    """labels: the NLI classifier's classes in its head's output order.
    entailment_id: the class whose logit scores a candidate label.
    contradiction_id: the class it is weighed against in multi-label scoring (softmax over
      [contradiction, entailment] logits per candidate).
    hypothesis_template: the template a request's "" template stands for.
    max_pairs: the most (text, candidate label) pairs one request may hold, each one row
      of the model (None: albert_tf.serving.request_windows.DEFAULT_MAX_WINDOWS).
    task_name: the classifier's task (mnli, rte, ...), kept for the record."""

    labels: tuple[str, ...] = ()
    entailment_id: int = -1
    contradiction_id: int = -1
    hypothesis_template: str = DEFAULT_TEMPLATE
    max_pairs: int | None = None
    task_name: str | None = None


def entailment_index(labels) -> int:
    """The index of the first label starting with "entail" (case-insensitive), or -1."""
    return next((i for i, x in enumerate(labels) if x.lower().startswith("entail")), -1)


def contradiction_index(labels, entailment_id: int) -> int:
    """The label starting with "contradict" (case-insensitive) if any; otherwise Hugging
    Face's rule: index 0, or the last index when entailment is 0 (RTE's
    [entailment, not_entailment] → 1). Both agree whenever contradiction is first."""
    named = next((i for i, x in enumerate(labels) if x.lower().startswith("contradict")), -1)
    if named >= 0:
        return named
    return len(labels) - 1 if entailment_id == 0 else 0


def check_template(template: str) -> None:
    """ValueError unless `template` holds the label slot "{}" once and no other brace."""
    rest = template.replace(SLOT, "", 1)
    if template.count(SLOT) != 1 or "{" in rest or "}" in rest:
        raise ValueError(
            f"hypothesis_template {template!r} must hold '{{}}' (where the label goes) "
            "exactly once and no other brace"
        )


def _check(fields: ZeroShotFields) -> None:
    n = len(fields.labels)
    if n < 2:
        raise ValueError(f"a zero-shot model needs the NLI classifier's labels, not {n}")
    for name in ("entailment_id", "contradiction_id"):
        if not 0 <= getattr(fields, name) < n:
            raise ValueError(f"{name}={getattr(fields, name)} is not an index of {n} labels")
    if fields.entailment_id == fields.contradiction_id:
        raise ValueError("entailment_id and contradiction_id must differ")
    check_template(fields.hypothesis_template)
    if fields.max_pairs is not None and fields.max_pairs < 1:
        raise ValueError(f"'max_pairs' must be ≥ 1, not {fields.max_pairs}")


def from_classifier(info, where: str):
    """The zero-shot TaskInfo of a fine-tuned classifier's TaskInfo `info` (read from
    `where`): same directory, vocabulary, sequence length and casing; ValueError (one
    line naming `where` and the labels) for a model that is not a single-label text-pair
    classifier with an entailment label."""
    d = info.details
    if info.kind != CLASSIFIER.name:  # (made from the classifier kind)
        raise ValueError(
            f"{where} holds a {info.kind} model; zero-shot classification needs an NLI "
            "classifier (kind classifier, with an entailment label)"
        )
    reason = None
    if d.regression:
        reason = "it is a regression model"
    elif d.multi_label:
        reason = "it is multi-label (sigmoid per label), not an NLI softmax"
    elif not d.text_pair:
        reason = "it reads single texts, not premise/hypothesis pairs"
    elif entailment_index(d.labels) < 0:
        reason = "none of its labels starts with 'entail'"
    if reason:
        raise ValueError(
            f"{where}: labels {list(d.labels)}: {reason}; zero-shot classification needs an "
            "NLI classifier of text pairs with an entailment label (e.g. run_classifier "
            "--task_name mnli)"
        )
    entail = entailment_index(d.labels)
    fields = ZeroShotFields(
        labels=tuple(d.labels),
        entailment_id=entail,
        contradiction_id=contradiction_index(d.labels, entail),
        task_name=d.task_name,
    )
    _check(fields)
    return dataclasses.replace(info, kind=KIND.name, details=fields)


def _model(config, fields: ZeroShotFields):
    from albert_tf.modeling.models import AlbertClassifier

    return AlbertClassifier(config, len(fields.labels), dropout=0.0)


KIND = TaskKind(
    name="zero_shot",
    title="zero-shot classifier",
    fields=ZeroShotFields,
    build_model=_model,
    check=_check,
    on_device=no_on_device,
    export_options=("max_pairs",),
    from_task=from_classifier,
    pipeline_tag="zero-shot-classification",
)
