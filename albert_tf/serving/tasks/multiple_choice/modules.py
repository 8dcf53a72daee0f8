"""The multiple-choice serving modules: the SavedModel (`MultipleChoiceServing`: the
question's "_" filled with each option in the graph, as in training) and the LiteRT file
(`LiteMultipleChoice`: the runner fills the options in), and their builders (`TASK`)."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.base import LiteModule, Serving, ServingTask, string_spec
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.litert_text import take_rows
from albert_tf.serving.request_windows import Wording
from albert_tf.serving.text_ops import at_least_one_row, by_length, pack, same_rows


class MultipleChoiceServing(Serving):
    """serving_default(passage [B], question [B], options [B, C]) → probabilities [B, C],
    logits, choice [B] int32 ("" options are padding); tokenize."""

    wording = Wording("multiple-choice model", "passages, questions and options", "questions")

    def choose(self, passage, question, options):
        """passage, question [B]; options [B, C] ("" = no such option). No options at all
        (C = 0) gives [B, 0] probabilities and choice 0, as a row of "" options does."""
        passage, question, options = same_rows(passage=passage, question=question, options=options)
        rows, columns = tf.shape(options)[0], tf.shape(options)[1]
        # One "" row / option when there are none (cut off the outputs again below).
        options = tf.pad(
            options,
            [[0, tf.maximum(1 - rows, 0)], [0, tf.maximum(1 - columns, 0)]],
            constant_values="",
        )
        passage, question = at_least_one_row(passage), at_least_one_row(question)
        batch, choices = tf.shape(options)[0], tf.shape(options)[1]
        present = tf.strings.length(options) > 0
        # The training text: the question with "_" filled by the option, else appended.
        q = tf.repeat(question, choices)
        o = tf.reshape(options, [-1])
        parts = tf.strings.split(q, "_")  # [B*C, (P)]
        last = tf.equal(
            tf.ragged.range(parts.row_lengths()).flat_values,
            tf.gather(parts.row_lengths() - 1, parts.value_rowids()),
        )
        pieces = tf.where(
            last,
            parts.flat_values,
            tf.strings.join([parts.flat_values, tf.gather(o, parts.value_rowids())]),
        )
        filled = tf.where(
            tf.strings.regex_full_match(q, "(?s).*_.*"),
            tf.strings.reduce_join(parts.with_flat_values(pieces), axis=1),
            tf.strings.join([q, o], " "),
        )
        ids = pack(
            self._ids(tf.repeat(passage, choices)),
            self._ids(filled),
            self.max_seq_length,
            self.cls_id,
            self.sep_id,
            length_aware=True,
        )
        keep = tf.cast(tf.reshape(present, [-1, 1]), tf.int32)
        ids = [ids[0] * keep, ids[1] * keep, ids[2] * keep]
        shaped = [tf.reshape(x, [batch, choices, tf.shape(ids[0])[1]]) for x in ids]
        logits = by_length(self._logits, *shaped, self.max_seq_length)
        return {
            "probabilities": tf.nn.softmax(logits)[:rows, :columns],
            "logits": logits[:rows, :columns],
            "choice": tf.argmax(logits, -1, output_type=tf.int32)[:rows],
        }

    def signatures(self):
        fn = graph_function(
            self.choose,
            input_signature=[
                tf.TensorSpec([None], tf.string, "passage"),
                tf.TensorSpec([None], tf.string, "question"),
                tf.TensorSpec([None, None], tf.string, "options"),
            ],
        )
        return {
            "serving_default": fn.get_concrete_function(),
            "tokenize": self._tokenize_signature(),
        }


class LiteMultipleChoice(LiteModule):
    ids_rank = 3  # (its ids-in function: [B, C, S], a choice without tokens all zeros)

    def choose(self, passage, choices):
        """passage [B]; choices [B, C] (question with the option filled in, "" = none)."""
        rows, columns = tf.shape(choices)[0], tf.shape(choices)[1]
        flat = self.tokenizer(tf.reshape(choices, [-1]))  # [B*C] rows
        owner = tf.range(rows * columns) // tf.maximum(columns, 1)
        ids = self._pack(take_rows(self.tokenizer(passage), owner), flat)
        present = tf.cast(flat[2] > 0, tf.int32)[:, None]  # a choice with tokens
        return self._from_ids(
            [tf.reshape(x * present, [rows, columns, tf.shape(x)[1]]) for x in ids]
        )

    def _from_ids(self, ids):
        """ids [B, C, S] (a missing choice's rows zero) → probabilities, logits [B, C],
        choice [B]."""
        logits = tf.cast(self._forward(*ids)["logits"], tf.float32)
        return {
            "probabilities": tf.nn.softmax(logits),
            "logits": logits,
            "choice": tf.argmax(logits, -1, output_type=tf.int32),
        }

    def functions(self):
        fn = graph_function(
            self.choose,
            input_signature=[
                string_spec("passage"),
                tf.TensorSpec([None, None], tf.string, "choices"),
            ],
        )
        return {"serving_default": fn, "tokenize": self._tokenize_function()}


def _saved_model(resolved):
    return MultipleChoiceServing(resolved.model, resolved.text_tokenizer(), resolved.max_seq_length)


def _litert(resolved, fixed_length: bool):
    module = LiteMultipleChoice(
        resolved.model,
        resolved.python_tokenizer,
        resolved.max_seq_length,
        fixed_length=fixed_length,
    )
    return module, {}, {}


def _onnx(resolved):
    """The ONNX file's ids-in function [B, C, S] and metadata (albert_tf.serving.
    onnx_export); the runner packs the passage with each choice (`text_inputs`)."""
    module, meta, _ = _litert(resolved, fixed_length=False)
    return module.ids_functions(), dict(meta, text_inputs=["passage", "choices"])


TASK = ServingTask("multiple_choice", saved_model=_saved_model, litert=_litert, onnx=_onnx)
