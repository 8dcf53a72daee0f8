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
     `doc_stride` tokens, as many windows as the longest context of the batch needs.
  3. The model scores every window, the windows cut to the request's bucket: the
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

from albert_tf.serving.base import Serving, ServingTask
from albert_tf.serving.text_ops import at_least_one_row, bucket_length, same_rows, valid_utf8


def _span_text(context, a, b):
    """(text, start, end): context bytes [a, b) and their character offsets."""

    def chars(x):
        return tf.strings.length(tf.strings.substr(context, tf.zeros_like(x), x), unit="UTF8_CHAR")

    return tf.strings.substr(context, a, b - a), chars(a), chars(b)


class SquadServing(Serving):
    """serving_default(question [B], context [B]) → answer [B] string, score [B],
    start/end [B] int32 character offsets (-1: no answer), and for v2.0
    no_answer_probability, null_odds [B]. `fields`: the task's SquadFields (windows, span
    search, head, threshold)."""

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

    # --- 1. context tokens with byte offsets ----------------------------------------------

    def _context_tokens(self, context):
        """ids, byte starts, byte ends: int32 RaggedTensors [B, (T)]."""
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
        flat = tf.strings.substr(
            tf.gather(context, w_begin.value_rowids()),
            w_begin.flat_values,
            w_end.flat_values - w_begin.flat_values,
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
        # An empty request is answered as one ("", "") row, cut off at the end.
        question = valid_utf8(at_least_one_row(question))
        context = valid_utf8(at_least_one_row(context))
        S = self.max_seq_length
        q = self.tokenizer(question)[:, : self.max_query_length]  # [B, (Q)]
        ids, starts, ends = self._context_tokens(context)  # [B, (T)]
        batch = tf.shape(question)[0]
        lq = tf.cast(q.row_lengths(), tf.int32)  # [B]
        lt = tf.cast(ids.row_lengths(), tf.int32)
        room = S - lq - 3  # [B]
        step = tf.minimum(self.doc_stride, room)
        windows = tf.where(lt > room, (lt - room + step - 1) // step + 1, 1)  # [B]
        K = tf.reduce_max(windows)
        k = tf.range(K)[None, :]  # [1, K]
        w_start = k * step[:, None]  # [B, K]
        w_len = tf.clip_by_value(lt[:, None] - w_start, 0, room[:, None])
        valid = k < windows[:, None]  # [B, K]
        p = tf.range(S)[None, None, :]  # [1, 1, S]
        first = (lq + 2)[:, None, None]  # context start
        j = w_start[:, :, None] + p - first  # doc index
        in_doc = (p >= first) & (p < first + w_len[:, :, None])  # [B, K, S]
        qpos = tf.clip_by_value(p - 1, 0, tf.maximum(tf.reduce_max(lq) - 1, 0))
        # Dense, plus one padding column: index 0 exists even for an empty question or
        # context of the whole batch.
        qd, ids_d, st_d, en_d = (
            tf.pad(x.to_tensor(0), [[0, 0], [0, 1]]) for x in (q, ids, starts, ends)
        )
        jj = tf.where(in_doc, j, 0)
        gather = lambda t: tf.gather(t, jj, batch_dims=1)  # noqa: E731
        qtok = tf.gather(qd, tf.broadcast_to(qpos, tf.shape(jj)), batch_dims=1)
        is_q = (p >= 1) & (p <= lq[:, None, None])
        sep1 = p == (lq + 1)[:, None, None]
        sep2 = p == first + w_len[:, :, None]
        input_ids = tf.where(
            p == 0,
            self.cls_id,
            tf.where(
                is_q, qtok, tf.where(sep1 | sep2, self.sep_id, tf.where(in_doc, gather(ids_d), 0))
            ),
        )
        total = first + w_len[:, :, None] + 1
        input_mask = tf.cast(p < total, tf.int32)
        segment_ids = tf.cast((p >= first) & (p < total), tf.int32)
        tok_start, tok_end = gather(st_d), gather(en_d)
        # Most context: min(left, right) + 0.01 × length, first window wins ties.
        jk = j[:, :, :, None]  # [B, K, S, 1]
        ws, wl = w_start[:, None, None, :], w_len[:, None, None, :]  # [B, 1, 1, K']
        inside = (jk >= ws) & (jk < ws + wl) & valid[:, None, None, :]
        score = tf.where(
            inside,
            tf.cast(tf.minimum(jk - ws, ws + wl - 1 - jk), tf.float32)
            + 0.01 * tf.cast(wl, tf.float32),
            -1e9,
        )
        max_ctx = tf.equal(tf.argmax(score, axis=-1, output_type=tf.int32), k[:, :, None])
        neg = tf.constant(-1e30)
        # The model sees the windows cut to the request's bucket (every position beyond the
        # longest window is padding: no output changes); its logits come back padded to S
        # with `neg`, positions that are no context token and are never chosen.
        L = bucket_length(tf.reduce_max(total), S) if self.length_aware else S
        flat = lambda x: tf.reshape(x[:, :, :L], [-1, L])  # noqa: E731
        out = self._forward(flat(input_ids), flat(input_mask), flat(segment_ids))
        shape = tf.concat([tf.shape(input_ids)[:2], [L]], 0)
        back = lambda x: tf.pad(  # noqa: E731
            tf.reshape(tf.cast(x, tf.float32), shape),
            [[0, 0], [0, 0], [0, S - L]],
            constant_values=neg,
        )
        context_ok = in_doc & valid[:, :, None]
        g = lambda t, idx: tf.gather(t, idx, batch_dims=2)  # noqa: E731
        if self.beam:
            return self._answer_beam(
                out, context, context_ok & max_ctx, context_ok, tok_start, tok_end, valid, rows
            )
        start_logits, end_logits = back(out["start_logits"]), back(out["end_logits"])
        n = tf.minimum(self.n_best_size, S)
        s_val, s_idx = tf.math.top_k(tf.where(context_ok, start_logits, neg), n)  # [B,K,n]
        e_val, e_idx = tf.math.top_k(tf.where(context_ok, end_logits, neg), n)
        s_ok = g(context_ok & max_ctx, s_idx)[:, :, :, None]
        e_ok = g(context_ok, e_idx)[:, :, None, :]
        si, ei = s_idx[:, :, :, None], e_idx[:, :, None, :]
        a_byte = g(tok_start, s_idx)[:, :, :, None]
        b_byte = g(tok_end, e_idx)[:, :, None, :]
        pair_ok = (
            s_ok & e_ok & (ei >= si) & (ei - si + 1 <= self.max_answer_length) & (b_byte > a_byte)
        )
        pair = tf.where(pair_ok, s_val[:, :, :, None] + e_val[:, :, None, :], neg)
        pair = tf.reshape(pair, [batch, -1])  # [B, K*n*n]
        best = tf.argmax(pair, axis=-1, output_type=tf.int32)
        best_score = tf.gather(pair, best, batch_dims=1)
        has_span = best_score > neg / 2
        a_all = tf.reshape(tf.broadcast_to(a_byte, tf.shape(pair_ok)), [batch, -1])
        b_all = tf.reshape(tf.broadcast_to(b_byte, tf.shape(pair_ok)), [batch, -1])
        a = tf.gather(a_all, best, batch_dims=1)
        b = tf.gather(b_all, best, batch_dims=1)
        text, start_char, end_char = _span_text(context, a, b)
        result = {}
        answered = has_span
        if self.version_2:
            null = tf.reduce_min(
                tf.where(valid, start_logits[:, :, 0] + end_logits[:, :, 0], -neg), axis=1
            )
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

    def _answer_beam(self, out, context, start_ok, end_ok, tok_start, tok_end, valid, rows):
        """Step 3 for the ALBERT v2.0 head (data_pipeline.squad.postprocess
        .postprocess_beam): per window the model's beam of `start_n_top` starts × `end_n_top`
        ends, pairs kept as the runner keeps them, scored by the sum of log-probabilities;
        null_odds = the smallest answer-class logit over the windows."""
        batch, windows = tf.shape(valid)[0], tf.shape(valid)[1]
        shaped = lambda x: tf.reshape(x, [batch, windows, -1])  # noqa: E731
        s_idx, s_lp = shaped(out["start_top_index"]), shaped(out["start_top_log_probs"])
        e_idx, e_lp = shaped(out["end_top_index"]), shaped(out["end_top_log_probs"])
        ends_per_start = tf.shape(e_idx)[2] // tf.maximum(tf.shape(s_idx)[2], 1)
        owner = tf.range(tf.shape(e_idx)[2]) // ends_per_start  # the start of each end
        s_of = tf.gather(s_idx, owner, axis=2)  # [B, K, k * k_end]
        g = lambda t, idx: tf.gather(t, idx, batch_dims=2)  # noqa: E731
        a, b = g(tok_start, s_of), g(tok_end, e_idx)
        ok = (
            g(start_ok, s_of)
            & g(end_ok, e_idx)
            & (e_idx >= s_of)
            & (e_idx - s_of + 1 <= self.max_answer_length)
            & (b > a)
        )
        neg = tf.constant(-1e30)
        pair = tf.reshape(tf.where(ok, tf.gather(s_lp, owner, axis=2) + e_lp, neg), [batch, -1])
        best = tf.argmax(pair, axis=-1, output_type=tf.int32)
        best_score = tf.gather(pair, best, batch_dims=1)
        has_span = best_score > neg / 2
        a = tf.gather(tf.reshape(a, [batch, -1]), best, batch_dims=1)
        b = tf.gather(tf.reshape(b, [batch, -1]), best, batch_dims=1)
        text, start_char, end_char = _span_text(context, a, b)
        null = tf.reduce_min(tf.where(valid, shaped(out["cls_logits"])[:, :, 0], -neg), axis=1)
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
        fn = tf.function(
            self.answer,
            input_signature=[
                tf.TensorSpec([None], tf.string, "question"),
                tf.TensorSpec([None], tf.string, "context"),
            ],
        )
        return {"serving_default": fn.get_concrete_function()}


class LiteSquad:
    """The on-device file: span logits of windows the caller built. Windowing, character
    offsets and answer text are the runner's (albert_tf.serving.tflite_predict, the same
    Python code as run_squad): tensorflow-text's LiteRT ops have no tokenizer with offsets,
    and LiteRT has no substring op. The SentencePiece model travels in the file's metadata
    (`SPM_NAME`), so a squad file needs no custom op at all."""

    def __init__(self, model, max_seq_length: int, fixed_length: bool = False):
        self.model, self.max_seq_length, self.fixed_length = model, max_seq_length, fixed_length

    def logits(self, input_ids, input_mask, segment_ids):
        out = self.model(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
            training=False,
        )
        return {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v for k, v in out.items()}

    def functions(self):
        length = self.max_seq_length if self.fixed_length else None
        specs = [
            tf.TensorSpec([None, length], tf.int32, n)
            for n in ("input_ids", "input_mask", "segment_ids")
        ]
        return {"serving_default": tf.function(self.logits, input_signature=specs)}


def _saved_model(resolved):
    return SquadServing(
        resolved.model, resolved.text_tokenizer(), resolved.max_seq_length, resolved.task.details
    )


def _litert(resolved, fixed_length: bool):
    from albert_tf.serving.tflite_predict import SPM_NAME

    fields = resolved.task.details
    meta = {
        "doc_stride": fields.doc_stride,
        "max_query_length": fields.max_query_length,
        "max_answer_length": fields.max_answer_length,
        "n_best_size": fields.n_best_size,
        "version_2_with_negative": fields.version_2_with_negative,
        "null_score_diff_threshold": float(fields.null_score_diff_threshold),
        "squad_head": fields.squad_head,
    }
    module = LiteSquad(resolved.model, resolved.max_seq_length, fixed_length)
    return module, meta, {SPM_NAME: resolved.python_tokenizer.model_proto}


TASK = ServingTask(saved_model=_saved_model, litert=_litert)
