"""The zero-shot SavedModel (`ZeroShotServing`): texts and candidate labels chosen per request
scored by an NLI classifier (the kind: `albert_tf.checkpoints.task_kinds.zero_shot`), as
Hugging Face's zero-shot-classification pipeline scores them.

Each text is the premise, each label put in the hypothesis template the hypothesis; the
pairs run through the classifier (`albert_tf.serving.tasks.zero_shot.pairs`), and the logits give:
  single-label  softmax over the candidates of their entailment logits (the scores of a
                text sum to 1);
  multi-label   each candidate alone: softmax over its [contradiction, entailment]
                logits, the entailment probability (= sigmoid(entailment - contradiction));
                also what one candidate label gets, as in the pipeline.
No on-device file is written (`TASK.litert`); an ONNX file is (`ZeroShotFromIds`: pairs of
ids in, the scores computed in the file; its runner, `lite_runner.ZeroShotRunner`, builds
the pairs and puts the labels back)."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.base import INPUT_NAMES, Serving, ServingTask, model_inputs
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.request_windows import DEFAULT_MAX_WINDOWS, Wording
from albert_tf.serving.tasks.zero_shot.pairs import check_request, hypotheses, pair_inputs
from albert_tf.serving.text_ops import at_least_one_row, by_length


def zero_shot_outputs(logits, labels, entailment_id: int, contradiction_id: int, multi_label):
    """float32 logits [B, N, C] of the N candidate `labels` (string [N]) → scores [B, N]
    float32 in candidate order, labels [B, N] string and sorted_scores [B, N], best first
    (ties: candidate order), and logits. `multi_label` (bool scalar), or N = 1: each
    candidate's entailment probability against contradiction; otherwise softmax of the
    entailment logits over the candidates."""
    entail = logits[..., entailment_id]
    single = tf.nn.softmax(entail, axis=-1)
    multi = tf.sigmoid(entail - logits[..., contradiction_id])
    alone = tf.logical_or(multi_label, tf.equal(tf.shape(labels)[0], 1))
    scores = tf.where(alone, multi, single)
    order = tf.argsort(scores, axis=-1, direction="DESCENDING", stable=True)
    return {
        "scores": scores,
        "labels": tf.gather(labels, order),
        "sorted_scores": tf.gather(scores, order, batch_dims=1),
        "logits": logits,
    }


class ZeroShotServing(Serving):
    """serving_default(text string [B], candidate_labels string [N] (the same for every
    text of the request), hypothesis_template string scalar ("": the model's default,
    "This example is {}."), multi_label bool scalar) → `zero_shot_outputs`: scores
    [B, N], labels [B, N], sorted_scores [B, N], logits [B, N, C]. A request of no label,
    a template without exactly one "{}", more than max_pairs pairs or too many bytes
    fails (InvalidArgumentError, one line) before anything is tokenized. tokenize(text_a,
    text_b) → the packed ids of any pair, as every text model has."""

    wording = Wording("zero-shot classifier")  # (the request cap's errors)
    checks_own_request = ("serving_default",)  # (pairs.check_request: its bytes)

    def __init__(self, model, text, max_seq_length: int, fields):
        super().__init__(model, text, max_seq_length)
        self.entailment_id = fields.entailment_id
        self.contradiction_id = fields.contradiction_id
        self.default_template = fields.hypothesis_template
        self.max_pairs = fields.max_pairs or DEFAULT_MAX_WINDOWS

    def classify(self, text, candidate_labels, hypothesis_template, multi_label):
        S = self.max_seq_length
        template = tf.where(
            tf.equal(hypothesis_template, ""), self.default_template, hypothesis_template
        )
        text, labels, template = check_request(text, candidate_labels, template, self.max_pairs, S)
        batch, count = tf.shape(text)[0], tf.shape(labels)[0]
        premises = self._ids(at_least_one_row(text))
        ids = pair_inputs(
            premises, self._ids(hypotheses(labels, template)), S, self.cls_id, self.sep_id
        )
        logits = by_length(self._logits, *ids, S)  # [rows · N, C]
        logits = tf.reshape(logits, [-1, count, tf.shape(logits)[-1]])[:batch]
        return zero_shot_outputs(
            logits, labels, self.entailment_id, self.contradiction_id, multi_label
        )

    def signatures(self):
        fn = graph_function(
            self.classify,
            input_signature=[
                tf.TensorSpec([None], tf.string, "text"),
                tf.TensorSpec([None], tf.string, "candidate_labels"),
                tf.TensorSpec([], tf.string, "hypothesis_template"),
                tf.TensorSpec([], tf.bool, "multi_label"),
            ],
        )
        return {
            "serving_default": fn.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


def _saved_model(resolved):
    return ZeroShotServing(
        resolved.model, resolved.text_tokenizer(), resolved.max_seq_length, resolved.task.details
    )


def _litert(resolved, fixed_length: bool):
    """Refused (the kind has `on_device=False`, so exports refuse before this): the
    on-device runner, albert_tf.serving.tflite_predict, has no zero-shot dispatch."""
    raise ValueError(resolved.task.task_kind.on_device_refusal(resolved.tokenizer.is_wordpiece))


class ZeroShotFromIds:
    """The ONNX file's function: serving_default(input_ids, input_mask, segment_ids int32
    [B, N, S]: each text paired with each hypothesis, `lite_runner.pair_ids`; multi_label
    bool scalar) → `zero_shot_outputs` with the candidates as indices: scores,
    sorted_scores [B, N] float32, labels [B, N] int32 (candidate indices, best first),
    logits [B, N, C]."""

    def __init__(self, model, fields):
        self.model, self.fields = model, fields

    def scores(self, input_ids, input_mask, segment_ids, multi_label):
        shape = tf.shape(input_ids)
        flat = [tf.reshape(x, [-1, shape[2]]) for x in (input_ids, input_mask, segment_ids)]
        logits = self.model(model_inputs(*flat), training=False)["logits"]
        logits = tf.reshape(tf.cast(logits, tf.float32), [shape[0], shape[1], -1])
        f = self.fields
        candidates = tf.range(shape[1])
        return zero_shot_outputs(
            logits, candidates, f.entailment_id, f.contradiction_id, multi_label
        )

    def functions(self):
        specs = [tf.TensorSpec([None, None, None], tf.int32, n) for n in INPUT_NAMES]
        specs.append(tf.TensorSpec([], tf.bool, "multi_label"))
        return {"serving_default": graph_function(self.scores, input_signature=specs)}


def _onnx(resolved):
    """The ONNX file's function (`ZeroShotFromIds`) and metadata: the classifier's labels,
    the two indices, the default template, max_pairs."""
    f = resolved.task.details
    meta = {
        "labels": list(f.labels),
        "entailment_id": f.entailment_id,
        "contradiction_id": f.contradiction_id,
        "hypothesis_template": f.hypothesis_template,
        "max_pairs": f.max_pairs or DEFAULT_MAX_WINDOWS,
    }
    return ZeroShotFromIds(resolved.model, f).functions(), meta


TASK = ServingTask("zero_shot", saved_model=_saved_model, litert=_litert, onnx=_onnx)
