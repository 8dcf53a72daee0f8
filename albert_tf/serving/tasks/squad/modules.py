"""The SQuAD SavedModel: question + context strings → answer text and character offsets,
entirely in the graph (see albert_tf.serving.export).

The same steps as the runner (data_pipeline.squad.features, .postprocess), as TensorFlow
ops on a batch:

  1. The context is split at whitespace with byte offsets; each word is normalized and
     cut into pieces (GraphTokenizer, ids equal to the Python tokenizer's). A piece's
     characters in the original word come from the pieces' lengths when normalization
     kept the word's length (ASCII, accents, case: almost every word); otherwise the piece
     covers its whole word (the runner maps those character by character: "ﬁne", "``",
     a word with a control character that SentencePiece deletes, "x\\x01y"). NUL bytes
     are ordinary characters of their word here, as in the runner.
     A WordPiece model (vocab.txt) takes BERT's basic tokenizer and WordPiece with byte
     offsets instead (data_pipeline.squad.wordpiece_offsets.GraphWordPieceOffsets: the
     runner's offsets, each CJK character a token).
  2. Windows: `[CLS] question [SEP] context window [SEP]`, the question cut to
     `max_query_length` tokens, `max_seq_length - len(question) - 3` context tokens every
     `doc_stride` tokens, each row's own windows, the request's in one flat list
     (`windows`: every tensor linear in the request's windows and bytes). A request of
     more than `max_windows` windows (the export's setting, default
     `DEFAULT_MAX_WINDOWS`) or more bytes than `max_request_bytes` is an
     InvalidArgumentError naming the limit and the request's size, before the model runs
     (albert_tf.serving.request_windows).
  3. The model scores every window, `WINDOW_GROUP` at a time, cut to the request's bucket: the
     smallest of the training buckets (data_pipeline.length_buckets, `bucket_length`)
     that holds the longest window, so a short paragraph costs what its length costs
     (`length_aware=False`: all `max_seq_length` columns; the answers are the same). The
     answer is the best start + end logit over pairs of the `n_best_size` best starts
     and ends of each window (context tokens only, the window giving the start token its
     most context, at most `max_answer_length` tokens).
     v2.0: null score = the smallest [CLS] start + end logit over the windows;
     null_odds = null score − best span score; no answer when null_odds > the threshold,
     and `no_answer_probability` = sigmoid(null_odds), the n-best softmax of the two.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.serving.base import LiteWindows, Serving, ServingTask
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.request_windows import DEFAULT_MAX_WINDOWS, check_windows, window_rows
from albert_tf.serving.tasks.squad.lite_runner import WORDING
from albert_tf.serving.tasks.squad.windows import (
    best_per_row,
    candidate_windows,
    check_request_bytes,
    forward_in_groups,
    max_context,
)
from albert_tf.serving.text_ops import at_least_one_row, bucket_length, same_rows, valid_utf8


def _span_text(context, a, b):
    """(text, start, end): context bytes [a, b) and their character offsets."""

    def chars(x):
        return tf.strings.length(tf.strings.substr(context, tf.zeros_like(x), x), unit="UTF8_CHAR")

    return tf.strings.substr(context, a, b - a), chars(a), chars(b)


def _tokens_at(tokens, row, where, index):
    """tokens[row[w], index[w, s]] where `where`, else 0: tokens int32 [B, (T)], row int32
    [W], where bool / index int32 [W, S] → int32 [W, S]. Read from the flat values (one
    padding 0 at the end: what a position off the tokens reads), never from a [rows,
    longest row] padded copy."""
    starts = tf.gather(tf.cast(tokens.row_starts(), tf.int32), row)[:, None]
    end = tf.cast(tf.size(tokens.flat_values), tf.int32)
    return tf.gather(tf.pad(tokens.flat_values, [[0, 1]]), tf.where(where, starts + index, end))


class SquadServing(Serving):
    """serving_default(question [B], context [B]) → answer [B] string, score [B],
    start/end [B] int32 character offsets (-1: no answer), and for v2.0
    no_answer_probability, null_odds [B]. `fields`: the task's SquadFields (windows, span
    search, head, threshold)."""

    wording = WORDING  # (the request cap's errors)
    checks_own_request = ("serving_default",)  # (its bytes and windows, in the graph)

    def __init__(self, model, text, max_seq_length, fields, length_aware: bool = True):
        super().__init__(model, text, max_seq_length)
        self.wordpiece_offsets = None
        if text.spec.is_wordpiece:  # (its FastWordpiece resource is the tokenizer's, tracked)
            from data_pipeline.squad.wordpiece_offsets import GraphWordPieceOffsets

            self.wordpiece_offsets = GraphWordPieceOffsets(self.tokenizer)
        self.length_aware = length_aware
        self.doc_stride = fields.doc_stride
        self.max_query_length = fields.max_query_length
        self.max_answer_length = fields.max_answer_length
        self.n_best_size = fields.n_best_size
        self.version_2 = fields.version_2_with_negative
        self.beam = fields.squad_head == "albert"  # the official ALBERT v2.0 head
        self.threshold = fields.null_score_diff_threshold
        self.max_windows = fields.max_windows or DEFAULT_MAX_WINDOWS
        if self.max_windows < 1:
            raise ValueError(f"--max_windows={self.max_windows} must be at least 1")

    # --- 1. context tokens with byte offsets ----------------------------------------------

    def _context_tokens(self, context):
        """ids, byte starts, byte ends: int32 RaggedTensors [B, (T)]."""
        from data_pipeline.squad.graph_words import word_substrings
        from data_pipeline.tokenization.sentencepiece_tokenizer import (
            SPIECE_UNDERLINE,
            _whitespace_class,
        )

        if self.wordpiece_offsets is not None:
            return self.wordpiece_offsets(context)

        # regex_split_with_offsets stops at a NUL byte: split a copy whose NULs are \x01
        # (one byte, not whitespace either), then cut the words out of the context itself.
        _, w_begin, w_end = tf_text.regex_split_with_offsets(
            tf.strings.regex_replace(context, "\\x00", "\x01"), _whitespace_class() + "+", ""
        )  # [B, (W)]
        flat = word_substrings(
            context, w_begin.value_rowids(), w_begin.flat_values, w_end.flat_values
        )  # [N]
        words = w_begin.with_flat_values(flat)
        pieces = self.tokenizer.tokenize(flat)  # [N, (P)]
        ids = tf.cast(self.tokenizer.sp.string_to_id(pieces), tf.int32)
        piece_chars = tf.strings.length(
            tf.strings.regex_replace(pieces, SPIECE_UNDERLINE, ""), unit="UTF8_CHAR"
        )  # [N, (P)]
        word_chars = tf.strings.length(flat, unit="UTF8_CHAR")
        norm_chars = tf.strings.length(self.tokenizer.normalize(flat), unit="UTF8_CHAR")
        exact = (tf.reduce_sum(piece_chars, axis=1) == norm_chars) & (norm_chars == word_chars)
        end_char = tf.cumsum(piece_chars, axis=1)  # [N, (P)]
        start_char = end_char - piece_chars
        # Character → byte offset inside each word (one extra entry: the word's end).
        _, char_bytes = tf.strings.unicode_decode_with_offsets(flat, "UTF-8")
        word_bytes = tf.strings.length(flat)
        char_bytes = tf.concat(
            [tf.cast(char_bytes, tf.int32), tf.RaggedTensor.from_tensor(word_bytes[:, None])],
            axis=1,
        )
        splits = char_bytes.row_splits
        table = char_bytes.flat_values  # int32
        row = pieces.value_rowids()
        base = tf.gather(splits, row)
        start_byte = tf.gather(table, base + tf.cast(start_char.flat_values, splits.dtype))
        end_byte = tf.gather(table, base + tf.cast(end_char.flat_values, splits.dtype))
        exact_p = tf.gather(exact, row)
        start_byte = tf.where(exact_p, start_byte, 0)
        end_byte = tf.where(exact_p, end_byte, tf.gather(word_bytes, row))
        offset = tf.gather(tf.cast(w_begin.flat_values, tf.int32), row)
        starts = pieces.with_flat_values(start_byte + offset)
        ends = pieces.with_flat_values(end_byte + offset)
        # [N, (P)] → [B, (W), (P)] → [B, (T)]
        shape = lambda r: words.with_flat_values(r).merge_dims(1, 2)  # noqa: E731
        return shape(ids), shape(starts), shape(ends)

    # --- 2.-3. windows, model, best span --------------------------------------------------

    def answer(self, question, context):
        question, context = same_rows(question=question, context=context)
        rows = tf.shape(question)[0]
        S = self.max_seq_length
        question, context = check_request_bytes(question, context, self.max_windows, S)
        # An empty request is answered as one ("", "") row, cut off at the end.
        question = valid_utf8(at_least_one_row(question))
        context = valid_utf8(at_least_one_row(context))
        q = self.tokenizer(question)[:, : self.max_query_length]  # [B, (Q)]
        ids, starts, ends = self._context_tokens(context)  # [B, (T)]
        batch = tf.shape(question)[0]
        lq = tf.cast(q.row_lengths(), tf.int32)  # [B]
        lt = tf.cast(ids.row_lengths(), tf.int32)
        room = S - lq - 3  # [B]
        step = tf.minimum(self.doc_stride, room)
        windows = tf.where(lt > room, (lt - room + step - 1) // step + 1, 1)  # [B]
        windows = check_windows(windows, self.max_windows, S, WORDING)
        # The request's windows, flat [W]: row by row, window by window.
        row, k = window_rows(windows)
        of_row = lambda x: tf.gather(x, row)  # noqa: E731
        lq_w, lt_w, room_w, step_w = of_row(lq), of_row(lt), of_row(room), of_row(step)
        start_of = lambda kk: kk * step_w[:, None, None]  # noqa: E731
        len_of = lambda kk: tf.clip_by_value(  # noqa: E731
            lt_w[:, None, None] - start_of(kk), 0, room_w[:, None, None]
        )
        w_start = k * step_w  # [W]
        w_len = tf.clip_by_value(lt_w - w_start, 0, room_w)
        p = tf.range(S)[None, :]  # [1, S]
        first = (lq_w + 2)[:, None]  # context start
        j = w_start[:, None] + p - first  # doc index [W, S]
        in_doc = (p >= first) & (p < first + w_len[:, None])  # [W, S]
        # Tokens are gathered from the flat values (one padding entry at the end: what a
        # position off the context reads), never from a [rows, longest] padded copy.
        is_q = (p >= 1) & (p <= lq_w[:, None])
        qtok = _tokens_at(q, row, is_q, p - 1)
        sep1 = p == (lq_w + 1)[:, None]
        sep2 = p == first + w_len[:, None]
        input_ids = tf.where(
            p == 0,
            self.cls_id,
            tf.where(
                is_q,
                qtok,
                tf.where(
                    sep1 | sep2, self.sep_id, tf.where(in_doc, _tokens_at(ids, row, in_doc, j), 0)
                ),
            ),
        )
        total = first + w_len[:, None] + 1
        input_mask = tf.cast(p < total, tf.int32)
        segment_ids = tf.cast((p >= first) & (p < total), tf.int32)
        tok_start, tok_end = (_tokens_at(x, row, in_doc, j) for x in (starts, ends))
        max_ctx = max_context(
            j,
            k,
            start_of,
            len_of,
            of_row(windows),
            step_w,
            candidate_windows(S, self.doc_stride, self.max_query_length),
        )
        neg = tf.constant(-1e30)
        # The model sees the windows cut to the request's bucket (every position beyond the
        # longest window is padding: no output changes), WINDOW_GROUP windows at a time; its
        # logits come back padded to S with `neg`, positions that are no context token and
        # are never chosen.
        L = bucket_length(tf.reduce_max(total), S) if self.length_aware else S
        out = forward_in_groups(
            self._forward, [x[:, :L] for x in (input_ids, input_mask, segment_ids)]
        )
        back = lambda x: tf.pad(  # noqa: E731
            tf.cast(x, tf.float32), [[0, 0], [0, S - L]], constant_values=neg
        )
        context_ok = in_doc
        g = lambda t, idx: tf.gather(t, idx, batch_dims=1)  # noqa: E731
        if self.beam:
            return self._answer_beam(
                out, context, context_ok & max_ctx, context_ok, tok_start, tok_end, row, rows
            )
        start_logits, end_logits = back(out["start_logits"]), back(out["end_logits"])
        n = min(self.n_best_size, S)
        s_val, s_idx = tf.math.top_k(tf.where(context_ok, start_logits, neg), n)  # [W, n]
        e_val, e_idx = tf.math.top_k(tf.where(context_ok, end_logits, neg), n)
        s_ok = g(context_ok & max_ctx, s_idx)[:, :, None]
        e_ok = g(context_ok, e_idx)[:, None, :]
        si, ei = s_idx[:, :, None], e_idx[:, None, :]
        a_byte = g(tok_start, s_idx)[:, :, None]
        b_byte = g(tok_end, e_idx)[:, None, :]
        pair_ok = (
            s_ok & e_ok & (ei >= si) & (ei - si + 1 <= self.max_answer_length) & (b_byte > a_byte)
        )
        pair = tf.where(pair_ok, s_val[:, :, None] + e_val[:, None, :], neg)  # [W, n, n]
        best_score, best = best_per_row(tf.reshape(pair, [tf.shape(pair)[0], -1]), row, batch)
        has_span = best_score > neg / 2
        a = tf.gather(tf.reshape(tf.broadcast_to(a_byte, tf.shape(pair_ok)), [-1]), best)
        b = tf.gather(tf.reshape(tf.broadcast_to(b_byte, tf.shape(pair_ok)), [-1]), best)
        text, start_char, end_char = _span_text(context, a, b)
        result = {}
        answered = has_span
        if self.version_2:
            null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], row, batch)
            odds = tf.where(has_span, null - best_score, 1e9)
            answered = has_span & (odds <= self.threshold)
            result["no_answer_probability"] = tf.sigmoid(odds)
            result["null_odds"] = odds
        result.update(
            {
                "answer": tf.where(answered, text, ""),
                "score": tf.where(has_span, best_score, 0.0),
                "start": tf.where(answered, start_char, -1),
                "end": tf.where(answered, end_char, -1),
            }
        )
        return {k: v[:rows] for k, v in result.items()}

    def _answer_beam(self, out, context, start_ok, end_ok, tok_start, tok_end, row, rows):
        """Step 3 for the ALBERT v2.0 head (data_pipeline.squad.postprocess
        .postprocess_beam): per window the model's beam of `start_n_top` starts × `end_n_top`
        ends, pairs kept as the runner keeps them, scored by the sum of log-probabilities;
        null_odds = the smallest answer-class logit over the windows. Windows flat [W]
        (`row`: each one's row of the request)."""
        batch = tf.shape(context)[0]
        s_idx, s_lp = out["start_top_index"], out["start_top_log_probs"]  # [W, k]
        e_idx, e_lp = out["end_top_index"], out["end_top_log_probs"]  # [W, k * k_end]
        ends_per_start = tf.shape(e_idx)[1] // tf.maximum(tf.shape(s_idx)[1], 1)
        owner = tf.range(tf.shape(e_idx)[1]) // ends_per_start  # the start of each end
        s_of = tf.gather(s_idx, owner, axis=1)  # [W, k * k_end]
        g = lambda t, idx: tf.gather(t, idx, batch_dims=1)  # noqa: E731
        a, b = g(tok_start, s_of), g(tok_end, e_idx)
        ok = (
            g(start_ok, s_of)
            & g(end_ok, e_idx)
            & (e_idx >= s_of)
            & (e_idx - s_of + 1 <= self.max_answer_length)
            & (b > a)
        )
        neg = tf.constant(-1e30)
        pair = tf.where(ok, tf.gather(s_lp, owner, axis=1) + e_lp, neg)
        best_score, best = best_per_row(pair, row, batch)
        has_span = best_score > neg / 2
        a = tf.gather(tf.reshape(a, [-1]), best)
        b = tf.gather(tf.reshape(b, [-1]), best)
        text, start_char, end_char = _span_text(context, a, b)
        null = tf.math.unsorted_segment_min(tf.reshape(out["cls_logits"], [-1]), row, batch)
        odds = tf.where(has_span, null, 1e9)
        answered = has_span & (odds <= self.threshold)
        result = {
            "answer": tf.where(answered, text, ""),
            "score": tf.where(has_span, best_score, 0.0),
            "start": tf.where(answered, start_char, -1),
            "end": tf.where(answered, end_char, -1),
            "no_answer_probability": tf.sigmoid(odds),
            "null_odds": odds,
        }
        return {k: v[:rows] for k, v in result.items()}

    def signatures(self):
        fn = graph_function(
            self.answer,
            input_signature=[
                tf.TensorSpec([None], tf.string, "question"),
                tf.TensorSpec([None], tf.string, "context"),
            ],
        )
        return {"serving_default": fn.get_concrete_function()}


# The on-device file: span logits of windows the caller built; windowing, character
# offsets and answer text are the runner's (tflite_predict, run_squad's own Python code).
LiteSquad = LiteWindows


def _saved_model(resolved):
    return SquadServing(
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
    meta = {
        "doc_stride": fields.doc_stride,
        "max_query_length": fields.max_query_length,
        "max_answer_length": fields.max_answer_length,
        "n_best_size": fields.n_best_size,
        "version_2_with_negative": fields.version_2_with_negative,
        "null_score_diff_threshold": float(fields.null_score_diff_threshold),
        "squad_head": fields.squad_head,
        "max_windows": fields.max_windows or DEFAULT_MAX_WINDOWS,
    }
    return LiteSquad(resolved.model, resolved.max_seq_length, fixed_length), meta


def _onnx(resolved):
    """The ONNX file's function and metadata (albert_tf.serving.onnx_export): the LiteRT
    file's, ids in (the runner cuts and reads back the windows)."""
    module, meta = _windows_file(resolved, fixed_length=False)
    return module.functions(), meta


TASK = ServingTask("squad", saved_model=_saved_model, litert=_litert, onnx=_onnx)
