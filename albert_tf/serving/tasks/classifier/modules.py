"""The classifier's serving modules: the SavedModel (`ClassifierServing`: text in, label and
probabilities out, rows computed in length-sorted groups; long documents windowed in the
graph) and the LiteRT file (`LiteClassifier`, or windows of ids in for long documents),
and their builders (`TASK`). A multi-label classifier returns each label's sigmoid
probability and the labels at or over their thresholds (`multi_label_outputs`)."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving import request_windows as rw
from albert_tf.serving.base import LiteModule, LiteWindows, Serving, ServingTask, string_spec
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.request_windows import DEFAULT_MAX_WINDOWS
from albert_tf.serving.text_ops import at_least_one_row, by_length, pack, same_rows


def multi_label_outputs(logits, labels, thresholds) -> dict:
    """A multi-label classifier's outputs from float32 logits [B, L] and thresholds [L]:
    probabilities (sigmoid) [B, L], logits, predicted int32 [B, L] (1: probability ≥ the
    label's threshold) and label string [B, L] (the label's name where predicted, ""
    elsewhere; a gather, which LiteRT runs)."""
    probabilities = tf.sigmoid(logits)
    over = probabilities >= thresholds
    count = tf.shape(labels)[0]
    names = tf.concat([labels, tf.constant([""])], 0)
    index = tf.where(over, tf.range(count)[None, :], tf.fill(tf.shape(over), count))
    return {
        "probabilities": probabilities,
        "logits": logits,
        "predicted": tf.cast(over, tf.int32),
        "label": tf.gather(names, index),
    }


def classifier_outputs(logits, labels, regression: bool, thresholds=None) -> dict:
    """The classifier signature's outputs from float32 logits [B, L]: probabilities,
    logits and label (a string of `labels`), or score [B] for regression;
    `multi_label_outputs` when `thresholds` [L] are given."""
    if thresholds is not None:
        return multi_label_outputs(logits, labels, thresholds)
    if regression:
        return {"score": logits[:, 0]}
    return {
        "probabilities": tf.nn.softmax(logits),
        "logits": logits,
        "label": tf.gather(labels, tf.argmax(logits, -1, output_type=tf.int32)),
    }


def aggregate(logits, row, rows, how: str):
    """float32 window logits [W, L] of rows `row` [W] (ascending, each present) →
    document logits [rows, L]: the mean (mean_logits) or the largest log-probability
    (max_prob), as long_documents.aggregate_logits."""
    if how == "mean_logits":
        return tf.math.unsorted_segment_mean(logits, row, rows)
    if how == "max_prob":
        return tf.math.unsorted_segment_max(tf.nn.log_softmax(logits), row, rows)
    raise ValueError(f"aggregate={how!r} is not one of mean_logits, max_prob")


class ClassifierServing(Serving):
    """serving_default(text_a [B] (, text_b [B])) → probabilities [B, L], label [B],
    logits [B, L] (regression: score [B]; multi-label, `thresholds` [L] given:
    `multi_label_outputs`); tokenize. `fields` with a doc_stride: each text_a read as the
    windows training made, their logits combined (`aggregate`) before the outputs, every
    tensor linear in the request's windows (albert_tf.serving.request_windows: at most
    `max_windows` windows and their bytes a request)."""

    def __init__(
        self,
        model,
        text,
        max_seq_length,
        labels,
        regression,
        text_pair,
        thresholds=None,
        fields=None,
    ):
        super().__init__(model, text, max_seq_length)
        self.regression = regression
        self.thresholds = None if thresholds is None else tf.constant(thresholds, tf.float32)
        self.labels = tf.constant(labels or [""])
        self.text_pair = text_pair
        self.windows = fields if fields is not None and fields.doc_stride else None
        self.max_windows = (fields and fields.max_windows) or DEFAULT_MAX_WINDOWS
        # (windows: classify_windows checks its bytes and windows in the graph)
        self.checks_own_request = ("serving_default",) if self.windows is not None else ()

    def classify_windows(self, text):
        """The per-document outputs of long texts [B] (request_windows, `aggregate`)."""
        w, S = self.windows, self.max_seq_length
        text = at_least_one_row(rw.check_text_bytes(text, self.max_windows, S))
        ids = self._ids(text)
        counts = rw.window_counts(
            tf.cast(ids.row_lengths(), tf.int32), S - 2, w.doc_stride, w.max_document_windows
        )
        counts = rw.check_windows(counts, self.max_windows, S)
        inputs, row = rw.windowed_inputs(ids, S - 2, w.doc_stride, counts, self.cls_id, self.sep_id)
        logits = by_length(self._logits, *inputs, S)
        return aggregate(logits, row, tf.size(counts), w.aggregate)

    def classify(self, text_a, text_b):
        if self.windows is not None:  # (single texts: text_b is never given)
            batch = tf.shape(text_a)[0]
            logits = self.classify_windows(text_a)[:batch]
            return classifier_outputs(logits, self.labels, self.regression, self.thresholds)
        text_a, text_b = same_rows(text_a=text_a, text_b=text_b)
        batch = tf.shape(text_a)[0]
        ids = pack(
            self._ids(at_least_one_row(text_a)),
            self._ids(at_least_one_row(text_b)),
            self.max_seq_length,
            self.cls_id,
            self.sep_id,
            length_aware=True,
        )
        logits = by_length(self._logits, *ids, self.max_seq_length)[:batch]
        return classifier_outputs(logits, self.labels, self.regression, self.thresholds)

    def signatures(self):
        if self.text_pair:
            fn = graph_function(
                lambda text_a, text_b: self.classify(text_a, text_b),
                input_signature=[
                    tf.TensorSpec([None], tf.string, "text_a"),
                    tf.TensorSpec([None], tf.string, "text_b"),
                ],
            )
        else:
            fn = graph_function(
                lambda text_a: self.classify(text_a, tf.zeros_like(text_a)),
                input_signature=[tf.TensorSpec([None], tf.string, "text_a")],
            )
        return {
            "serving_default": fn.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


class LiteClassifier(LiteModule):
    def __init__(
        self,
        model,
        tokenizer,
        max_seq_length,
        labels,
        regression,
        text_pair,
        thresholds=None,
        **kw,
    ):
        super().__init__(model, tokenizer, max_seq_length, **kw)
        self.labels = tf.constant(list(labels or [""]))
        self.regression, self.text_pair = regression, text_pair
        self.thresholds = None if thresholds is None else tf.constant(thresholds, tf.float32)

    def _from_ids(self, ids):
        """Packed ids [B, S] → `classifier_outputs` (the text-in and the ids-in function)."""
        logits = tf.cast(self._forward(*ids)["logits"], tf.float32)
        return classifier_outputs(logits, self.labels, self.regression, self.thresholds)

    def functions(self):
        if self.text_pair:
            fn = graph_function(
                lambda text_a, text_b: self._from_ids(
                    self._pack(self.tokenizer(text_a), self.tokenizer(text_b))
                ),
                input_signature=[string_spec("text_a"), string_spec("text_b")],
            )
        else:
            fn = graph_function(
                lambda text_a: self._from_ids(self._single(text_a)),
                input_signature=[string_spec("text_a")],
            )
        return {"serving_default": fn, "tokenize": self._tokenize_function()}


def _saved_model(resolved):
    fields = resolved.task.details
    return ClassifierServing(
        resolved.model,
        resolved.text_tokenizer(),
        resolved.max_seq_length,
        fields.labels,
        fields.regression,
        fields.text_pair,
        _thresholds(fields),
        fields,
    )


def _thresholds(fields):
    """[L] thresholds of a multi-label classifier, None otherwise."""
    return list(fields.decision_thresholds()) if fields.multi_label else None


def _litert(resolved, fixed_length: bool):
    fields = resolved.task.details
    if fields.doc_stride:
        return _litert_windows(resolved, fixed_length, fields)
    labels = list(fields.labels or [""])
    module = LiteClassifier(
        resolved.model,
        resolved.python_tokenizer,
        resolved.max_seq_length,
        labels,
        fields.regression,
        fields.text_pair,
        _thresholds(fields),
        fixed_length=fixed_length,
    )
    meta = {
        "labels": [] if fields.regression else labels,
        "regression": fields.regression,
        "text_pair": fields.text_pair,
    }
    if fields.multi_label:
        meta.update(multi_label=True, thresholds=_thresholds(fields))
    return module, meta, {}


def _litert_windows(resolved, fixed_length: bool, fields):
    """A long-document classifier's file: logits of windows the on-device runner cut
    (albert_tf.serving.tflite_predict, with the Python windows of the runner), as SQuAD's
    file (`base.LiteWindows`: ids in, model outputs out; the SentencePiece model in its
    metadata)."""
    from albert_tf.serving.tflite_predict import SPM_NAME

    if resolved.tokenizer.is_wordpiece:
        raise ValueError(
            "on-device long-document classifiers of WordPiece models are not written (their "
            "runner windows text with the SentencePiece model the file carries); export the "
            "savedmodel format"
        )
    module, meta = _windows_file(resolved, fixed_length, fields)
    return module, meta, {SPM_NAME: resolved.python_tokenizer.model_proto}


def _windows_file(resolved, fixed_length: bool, fields):
    """(LiteWindows, metadata) of a long-document classifier's file (LiteRT's, ONNX's)."""
    meta = {
        "labels": [] if fields.regression else list(fields.labels),
        "regression": fields.regression,
        "text_pair": False,
        "doc_stride": fields.doc_stride,
        "max_document_windows": fields.max_document_windows,
        "aggregate": fields.aggregate,
        "max_windows": fields.max_windows or DEFAULT_MAX_WINDOWS,
    }
    return LiteWindows(resolved.model, resolved.max_seq_length, fixed_length), meta


def _onnx(resolved):
    """The ONNX file's function and metadata (albert_tf.serving.onnx_export): the LiteRT
    module's ids-in function; long documents: its windows-in file's, windows cut by the
    runner. `text_inputs`: the inputs the runner's Python front end packs into ids."""
    fields = resolved.task.details
    if fields.doc_stride:
        module, meta = _windows_file(resolved, False, fields)
        return module.functions(), meta
    module, meta, _ = _litert(resolved, fixed_length=False)
    names = ["text_a", "text_b"] if resolved.task.details.text_pair else ["text_a"]
    return module.ids_functions(), dict(meta, text_inputs=names)


TASK = ServingTask("classifier", saved_model=_saved_model, litert=_litert, onnx=_onnx)
