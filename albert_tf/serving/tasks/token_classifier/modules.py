"""Token classification (NER) served from raw text: the SavedModel (`TaggerServing`: text in,
per-word tags and entities out, every step in the graph) and the LiteRT file
(`LiteTagger`: windows of ids in, logits out; the on-device runner does the rest in
Python), and their builders (`TASK`).

The SavedModel repeats the runner's steps (data_pipeline.tagging) as TensorFlow ops on a
batch of texts:

  1. Words: whitespace tokens, a token holding a CJK character cut into its characters
     (`word_split`; data_pipeline.tagging.text_words is the Python rule).
  2. Pieces: each word tokenized on its own (the in-graph tokenizer, ids equal to the
     Python tokenizer's); a word with no piece gets one unknown-token piece
     (alignment.word_pieces).
  3. Windows: a row's pieces cut into windows of max_seq_length - 2 pieces starting every
     doc_stride pieces (alignment.windows), `[CLS] window [SEP]`, the request's windows in
     one flat list, computed sorted by length LENGTH_GROUP at a time, each group cut to its
     own longest window (text_ops.by_length with exact=True, as the encoder's `vectors`): a
     request of mixed sentences costs about its pieces, not windows × its longest, and a
     single sentence its own length, not its bucket's.
  4. Each word's tag is the argmax of the logits at its first piece in the window giving
     that piece the most context (alignment.best_window: min(left, right) + 0.01 × length,
     the earliest on ties, in float64 as Python computes it).
  5. Entities: data_pipeline.tagging.metrics' reading of the tags (the task's `scheme`;
     None: seqeval's default) in the graph (`entity_spans`).

Limits: a request may hold at most `max_request_bytes` bytes of text, checked before its
words are split, and need at most `max_windows` windows (the export's setting,
request_windows.DEFAULT_MAX_WINDOWS unless given), checked before the model runs; beyond
either, an InvalidArgumentError naming the limit and the request's size
(albert_tf.serving.request_windows). The LiteRT runner (`lite_runner`) refuses the same
requests.

Scores: a word's score is the softmax probability of its tag at its first piece; an
entity's score is the mean of its words' scores, as Hugging Face's
`aggregation_strategy="simple"` averages its tokens' scores, so the two are comparable
(the minimum would rank a long entity below a short one for one unsure word).
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving import request_windows as rw
from albert_tf.serving.base import LiteWindows, Serving, ServingTask
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.request_windows import DEFAULT_MAX_WINDOWS, Wording, window_rows
from albert_tf.serving.tasks.token_classifier.entity_spans import entity_spans, label_codes
from albert_tf.serving.tasks.token_classifier.word_split import split_words
from albert_tf.serving.text_ops import at_least_one_row, bucket_length, by_length, valid_utf8
from data_pipeline.squad.graph_words import word_substrings

WORDING = Wording("token classifier")  # how the limits' errors name the model


def window_plan(max_seq_length: int, doc_stride: int) -> tuple[int, int, int]:
    """(pieces a window holds, the step between window starts, the most windows that can
    hold one piece): alignment.windows' layout as numbers."""
    room = max_seq_length - 2
    if room < 1:
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for a piece")
    step = max(1, min(doc_stride, room))
    return room, step, -(-room // step)


class TaggerServing(Serving):
    """serving_default(text [B] string) →

      words [B, W] string ("" beyond a row's words), tags [B, W] string (""),
      tag_scores [B, W] float32 (0), word_start / word_end [B, W] int32 character
      offsets of each word in its text (-1), num_words [B] int32;
      entity_type [B, E] string (""), entity_text [B, E] string (""), entity_start /
      entity_end [B, E] int32 character offsets, end exclusive (-1), entity_score [B, E]
      float32 (0), num_entities [B] int32.

    W and E are the request's most words and entities in a row (0 for an empty request);
    row i's real entries are its first num_words[i] / num_entities[i]. A request beyond
    its bytes or `max_windows` windows: InvalidArgumentError (module docstring)."""

    wording = WORDING  # (the request cap's errors)
    checks_own_request = ("serving_default",)  # (its bytes and windows, in the graph)

    def __init__(self, model, text, max_seq_length, fields):
        super().__init__(model, text, max_seq_length)
        self.labels = tf.constant(list(fields.labels))
        self.codes = label_codes(fields.labels, fields.scheme)
        self.type_names = tf.constant(list(self.codes.names))
        self.scheme = fields.scheme
        self.room, self.step, self.candidates = window_plan(max_seq_length, fields.doc_stride)
        self.unk_id = text.python_tokenizer.unk_id
        self.max_windows = fields.max_windows or DEFAULT_MAX_WINDOWS

    def _pieces(self, words):
        """ids [N, (P)] of each word (string [N]), at least one: an empty word's is unk."""
        ids = self.tokenizer(words)
        empty = ids.row_lengths() == 0
        unk = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(empty, tf.int32))], self.unk_id),
            tf.cast(empty, tf.int64),
        )
        return tf.concat([ids, unk], axis=1)

    def _logits_to(self, length, input_ids, input_mask, segment_ids):
        """float32 logits [g, length, labels] of a group of windows cut to its own longest
        window (≤ length): padded back to the request's length so that groups stack."""
        logits = self._logits(input_ids, input_mask, segment_ids)
        return tf.pad(logits, [[0, 0], [0, length - tf.shape(logits)[1]], [0, 0]])

    def tag(self, text):
        rows, S = tf.shape(text)[0], self.max_seq_length
        text = rw.check_text_bytes(text, self.max_windows, S, WORDING)
        text = valid_utf8(at_least_one_row(text))
        words = split_words(text)  # [B, (W)]
        word_row = tf.cast(words.text.value_rowids(), tf.int32)  # [N]
        num_words = tf.cast(words.text.row_lengths(), tf.int32)  # [B]
        pieces = self._pieces(words.text.flat_values)  # [N, (P)]
        count = tf.cast(pieces.row_lengths(), tf.int32)
        flat_ids = pieces.flat_values  # every row's pieces, row by row
        n = tf.math.unsorted_segment_sum(count, word_row, tf.shape(text)[0])  # [B] pieces
        row_first = tf.cumsum(n, exclusive=True)  # [B] a row's first piece in flat_ids
        first = tf.cumsum(count, exclusive=True) - tf.gather(row_first, word_row)  # [N]
        # Windows, flat [W]: row by row (alignment.windows).
        room, step = self.room, self.step
        windows = tf.where(n > room, (n - room + step - 1) // step + 1, 1)  # [B]
        windows = rw.check_windows(windows, self.max_windows, S, WORDING)
        row, k = window_rows(windows)
        w_start = k * step
        w_len = tf.clip_by_value(tf.gather(n, row) - w_start, 0, room)
        p = tf.range(S)[None, :]
        in_piece = (p >= 1) & (p <= w_len[:, None])
        at = tf.gather(row_first, row)[:, None] + w_start[:, None] + p - 1
        none = tf.size(flat_ids)  # (the padding entry appended below)
        ids = tf.gather(tf.pad(flat_ids, [[0, 1]]), tf.where(in_piece, at, none))
        sep = p == (w_len + 1)[:, None]
        input_ids = tf.where(p == 0, self.cls_id, tf.where(sep, self.sep_id, ids))
        total = w_len + 2
        input_mask = tf.cast(p < total[:, None], tf.int32)
        L = bucket_length(tf.reduce_max(total), S)
        cut = [x[:, :L] for x in (input_ids, input_mask, tf.zeros_like(input_ids))]
        logits = by_length(lambda *x: self._logits_to(L, *x), *cut, S, exact=True)  # [W, L, ·]
        # Each word's max-context window among the few that can hold its first piece.
        f = first[:, None]
        kk = first[:, None] // step - (self.candidates - 1) + tf.range(self.candidates)
        ks = kk * step
        kl = tf.clip_by_value(tf.gather(n, word_row)[:, None] - ks, 0, room)
        inside = (kk >= 0) & (kk < tf.gather(windows, word_row)[:, None]) & (f >= ks)
        inside &= f < ks + kl
        score = tf.cast(tf.minimum(f - ks, ks + kl - 1 - f), tf.float64)
        score = tf.where(inside, score + 0.01 * tf.cast(kl, tf.float64), -1.0)
        best = tf.reduce_max(score, axis=1, keepdims=True)
        earliest = tf.reduce_min(
            tf.where(score == best, tf.range(self.candidates)[None, :], self.candidates), 1
        )
        chosen = tf.gather(kk, earliest, batch_dims=1)  # [N] window index within the row
        window = tf.gather(tf.cumsum(windows, exclusive=True), word_row) + chosen
        where = tf.stack([window, first - chosen * step + 1], axis=1)
        word_logits = tf.gather_nd(logits, where)  # [N, labels]
        label_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        probs = tf.reduce_max(tf.nn.softmax(word_logits), axis=-1)  # [N]
        out = self._words_out(words, label_ids, probs)
        out.update(self._entities(text, words, word_row, num_words, label_ids, probs))
        return {k: v[:rows] for k, v in out.items()}

    def _words_out(self, words, label_ids, probs):
        ragged = words.text.with_flat_values
        return {
            "words": words.text.to_tensor(""),
            "tags": ragged(tf.gather(self.labels, label_ids)).to_tensor(""),
            "tag_scores": ragged(probs).to_tensor(0.0),
            "word_start": words.char_start.to_tensor(-1),
            "word_end": words.char_end.to_tensor(-1),
            "num_words": tf.cast(words.text.row_lengths(), tf.int32),
        }

    def _entities(self, text, words, word_row, num_words, label_ids, probs):
        first, last, kind = entity_spans(label_ids, word_row, num_words, self.codes, self.scheme)
        e_row = tf.gather(word_row, first)
        batch = tf.shape(text)[0]
        byte_start = tf.gather(words.byte_start.flat_values, first)
        byte_end = tf.gather(words.byte_end.flat_values, last)
        sums = tf.concat([[0.0], tf.cumsum(tf.cast(probs, tf.float64))], 0)
        mean = (tf.gather(sums, last + 1) - tf.gather(sums, first)) / tf.cast(
            last - first + 1, tf.float64
        )

        def pad(values, fill):
            ragged = tf.RaggedTensor.from_value_rowids(
                values, tf.cast(e_row, tf.int64), tf.cast(batch, tf.int64)
            )
            return ragged.to_tensor(fill)

        return {
            "entity_type": pad(tf.gather(self.type_names, kind), ""),
            "entity_text": pad(word_substrings(text, e_row, byte_start, byte_end), ""),
            "entity_start": pad(tf.gather(words.char_start.flat_values, first), -1),
            "entity_end": pad(tf.gather(words.char_end.flat_values, last), -1),
            "entity_score": pad(tf.cast(mean, tf.float32), 0.0),
            "num_entities": tf.math.bincount(e_row, minlength=batch, maxlength=batch),
        }

    def signatures(self):
        fn = graph_function(self.tag, input_signature=[tf.TensorSpec([None], tf.string, "text")])
        return {"serving_default": fn.get_concrete_function()}


# The on-device file: per-token logits [batch, seq, labels] of windows the caller built;
# words, pieces, windows, the max-context choice and entities are the runner's
# (tflite_predict with data_pipeline.tagging's own code).
LiteTagger = LiteWindows


def _saved_model(resolved):
    return TaggerServing(
        resolved.model, resolved.text_tokenizer(), resolved.max_seq_length, resolved.task.details
    )


def _litert(resolved, fixed_length: bool):
    """The LiteRT file: `_windows_file`, the SentencePiece model in its metadata."""
    from albert_tf.serving.tflite_predict import SPM_NAME

    module, meta = _windows_file(resolved, fixed_length)
    return module, meta, {SPM_NAME: resolved.python_tokenizer.model_proto}


def _windows_file(resolved, fixed_length: bool):
    """(the windows-in module, the file's metadata): the LiteRT file's and the ONNX
    file's (whose vocabulary lies beside it, either kind)."""
    fields = resolved.task.details
    label_codes(fields.labels, fields.scheme)  # (a scheme that does not fit: refused here too)
    meta = {
        "labels": list(fields.labels),
        "doc_stride": fields.doc_stride,
        "scheme": fields.scheme,
        "unk_id": resolved.python_tokenizer.unk_id,
        "max_windows": fields.max_windows or DEFAULT_MAX_WINDOWS,
    }
    return LiteTagger(resolved.model, resolved.max_seq_length, fixed_length), meta


def _onnx(resolved):
    """The ONNX file's function and metadata (albert_tf.serving.onnx_export): the LiteRT
    file's, ids in (the runner cuts and reads back the windows)."""
    module, meta = _windows_file(resolved, fixed_length=False)
    return module.functions(), meta


TASK = ServingTask("token_classifier", saved_model=_saved_model, litert=_litert, onnx=_onnx)
