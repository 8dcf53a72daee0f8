"""SQuAD v1.1 / v2.0 (and CMRC-style Chinese) data: JSON → examples → windowed features.

Answers are located at the character level, through the same normalization the model sees
(ALBERT's: whitespace collapsed, ``/'' → ", accents stripped, lowercased), so that every
token knows which characters of the *original* context it covers:

  1. The context is split into words at whitespace (no SentencePiece piece crosses a
     space — `AlbertTokenizer`). Each word is normalized character by character, keeping
     for every normalized character the original character it came from.
  2. Each normalized word is encoded by SentencePiece with byte offsets (`return_type=
     "proto"`), and ALBERT's "<digit>," split is applied with offsets too; the ids equal
     `AlbertTokenizer.encode` (tested on all of SQuAD dev).
  3. Token i covers original characters [token_start[i], token_end[i]). An answer span
     [s, e) maps to the first token ending after s and the last token starting before e;
     a predicted token span maps back to context[token_start[a]:token_end[b]].

With a WordPiece vocab.txt, steps 1-2 are BERT's basic tokenizer and WordPiece with
offsets (`data_pipeline.squad.wordpiece_offsets`; each CJK character a word of its own,
unlike the official code's whitespace "doc tokens"); step 3 and everything below are the
same (`offset_tokenizer` picks the encoder by the tokenizer's kind).

An answer whose boundary falls inside a piece comes back with the rest of that piece
("1990" from the piece "▁1990s"): such answers are counted (`boundary_inside_piece`), as
are answers whose offset does not match their text (`misplaced_offset`, found again
nearby when possible) and answers that cannot be located at all (`unalignable`: skipped
for training, never silently wrong).

Features (BERT/ALBERT layout): `[CLS] question [SEP] context window [SEP]`, windows of
`max_seq_length - len(question) - 3` context tokens every `doc_stride` tokens; the
question is cut to `max_query_length` tokens. Labels: start/end token positions of the
answer when the whole answer is inside the window, else 0 (the [CLS] position: "no
answer here"). For prediction each feature carries the character offsets of its context
tokens and whether the window is the one where the token has the most context.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
import unicodedata

import numpy as np

from data_pipeline.io import filesystem
from data_pipeline.tokenization.sentencepiece_tokenizer import SPIECE_UNDERLINE

_WORD = re.compile(r"\S+")


@dataclasses.dataclass
class SquadExample:
    """One question. `answers`: [{"text", "answer_start"}] (all gold answers; the first is
    trained on); `is_impossible`: a v2.0 unanswerable question."""

    qas_id: str
    question: str
    context: str
    answers: list
    is_impossible: bool = False
    title: str = ""
    marked_impossible: bool = False  # the file says `is_impossible: true` (v2.0)


def read_squad(path: str) -> list[SquadExample]:
    """Every question of a SQuAD-format JSON file (v1.1, v2.0, CMRC 2018), in file order.
    A missing file is a FileNotFoundError naming it."""
    if not filesystem.exists(path):
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    try:
        with filesystem.open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f'{path}: not a SQuAD file (expected {{"data": [articles]}})')
    examples = []
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            where = f"{path}: data[{a}].paragraphs[{p}]"
            if "context" not in paragraph or "qas" not in paragraph:
                raise ValueError(f"{where} lacks 'context' or 'qas'")
            context = paragraph["context"]
            for q, qa in enumerate(paragraph["qas"]):
                if "id" not in qa or "question" not in qa:
                    raise ValueError(f"{where}.qas[{q}] lacks 'id' or 'question'")
                answers = [
                    {"text": x["text"], "answer_start": int(x["answer_start"])}
                    for x in qa.get("answers", [])
                ]
                impossible = bool(qa.get("is_impossible", False))
                examples.append(
                    SquadExample(
                        str(qa["id"]),
                        qa["question"],
                        context,
                        answers,
                        impossible or not answers,
                        article.get("title", ""),
                        impossible,
                    )
                )
    if not examples:
        raise ValueError(f"{path}: no questions")
    return examples


def check_version(
    examples: list[SquadExample], path: str, version_2_with_negative: bool, answers: bool
) -> None:
    """In SQuAD v1.1 mode (`version_2_with_negative` False), ValueError naming `path` and
    the first unanswerable question: one marked `is_impossible`, or, where `answers` are
    needed (training, scoring), one without answers. v1.1 would train such questions as
    "no answer here" targets and never predict "" for them. v1.1 files are fine in v2.0
    mode."""
    if version_2_with_negative:
        return
    for ex in examples:
        if ex.marked_impossible or (answers and not ex.answers):
            why = "is_impossible" if ex.marked_impossible else "has no answers"
            raise ValueError(
                f"{path}: question {ex.qas_id!r} {why} (SQuAD v2.0); "
                "pass --version_2_with_negative to train or evaluate on unanswerable questions"
            )


def read_squad_files(uses, version_2_with_negative: bool) -> dict:
    """{path: its questions} for `uses` = [(path or None, answers needed)], each file read
    once and checked with `check_version` (answers are needed to train and to score; a file
    only predicted may lack them)."""
    questions: dict = {}
    for path, answers in uses:
        if path:
            questions[path] = questions.get(path) or read_squad(path)
            check_version(questions[path], path, version_2_with_negative, answers)
    return questions


def is_v2(path: str) -> bool:
    """Whether a SQuAD file has unanswerable questions (v2.0 format)."""
    with filesystem.open(path) as f:
        data = json.load(f)
    return "2.0" in str(data.get("version", "")) or any(
        "is_impossible" in qa
        for art in data["data"]
        for par in art["paragraphs"]
        for qa in par["qas"]
    )


# --- tokens with character offsets --------------------------------------------------------


class OffsetTokenizer:
    """`AlbertTokenizer` ids plus, for each token, the original characters it covers."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._words: dict[str, tuple] = {}

    def _normalize_word(self, word: str) -> tuple[str, list[int], list[int]]:
        """(normalized word, owner start [n], owner end [n]): normalized character j comes
        from original characters [start[j], end[j]) of `word`."""
        tok = self.tokenizer
        chars, starts, ends = [], [], []
        i = 0
        while i < len(word):
            if word[i : i + 2] in ("``", "''"):
                out, width = '"', 2
            else:
                c = word[i]
                out, width = c, 1
                if not tok.keep_accents and not c.isascii():
                    out = "".join(
                        x for x in unicodedata.normalize("NFKD", c) if not unicodedata.combining(x)
                    )
                if tok.do_lower_case:
                    out = out.lower()
            for x in out:
                chars.append(x)
                starts.append(i)
                ends.append(i + width)
            i += width
        normalized = tok.normalize(word)
        if len(normalized) != len(chars):  # context-dependent case mapping: whole word
            starts, ends = [0] * len(normalized), [len(word)] * len(normalized)
        return normalized, starts, ends

    def _encode_words(self, words: list[str]) -> None:
        """Fills the cache: word → (ids, start offsets, end offsets) within the word."""
        sp = self.tokenizer.sp
        normalized = [self._normalize_word(w) for w in words]
        parts, owners = [], []
        for n, (text, _, _) in enumerate(normalized):
            for m in _WORD.finditer(text):  # NFKD can turn a character into spaces
                parts.append(m.group())
                owners.append((n, m.start()))
        protos = sp.encode(parts, return_type="proto") if parts else []
        results = [([], [], []) for _ in words]
        for part, (n, base), proto in zip(parts, owners, protos):
            text, starts, ends = normalized[n]
            char_of_byte = _char_index_of_bytes(part)
            ids, tok_start, tok_end = results[n]
            for piece in proto.pieces:
                b = char_of_byte[piece.begin] + base
                e = char_of_byte[piece.end] + base
                for pid, (pb, pe) in self._split_digit_comma(piece.piece, piece.id, b, e):
                    ids.append(pid)
                    if pe > pb:
                        tok_start.append(starts[pb])
                        tok_end.append(ends[pe - 1])
                    else:  # a bare "▁": no character of its own
                        at = starts[pb] if pb < len(starts) else len(words[n])
                        tok_start.append(at)
                        tok_end.append(at)
        for w, r in zip(words, results):
            self._words[w] = r

    def _split_digit_comma(self, piece: str, pid: int, b: int, e: int):
        """ALBERT's "<digit>," rule (`AlbertTokenizer.tokenize`) with character spans."""
        if not (len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()):
            return [(pid, (b, e))]
        sp = self.tokenizer.sp
        sub = sp.encode_as_pieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
        if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
            sub = sub[1:] if len(sub[0]) == 1 else [sub[0][1:]] + sub[1:]
        out, at = [], b
        for s in sub:
            width = len(s.replace(SPIECE_UNDERLINE, ""))
            out.append((sp.piece_to_id(s), (at, min(at + width, e - 1))))
            at = min(at + width, e - 1)
        out.append((sp.piece_to_id(","), (e - 1, e)))
        return out

    def encode(self, text: str) -> tuple[list[int], list[int], list[int]]:
        """(ids, token start chars, token end chars) of `text` (offsets into `text`)."""
        matches = list(_WORD.finditer(text))
        new = list({m.group() for m in matches if m.group() not in self._words})
        if new:
            if len(self._words) > 1_000_000:
                self._words.clear()
            self._encode_words(new)
        ids, starts, ends = [], [], []
        for m in matches:
            w_ids, w_starts, w_ends = self._words[m.group()]
            ids += w_ids
            starts += [m.start() + s for s in w_starts]
            ends += [m.start() + s for s in w_ends]
        return ids, starts, ends


def offset_tokenizer(tokenizer):
    """The tokens-with-offsets encoder for `tokenizer`'s kind: `OffsetTokenizer`
    (SentencePiece) or `WordPieceOffsetTokenizer` (a WordPiece vocab.txt,
    data_pipeline.squad.wordpiece_offsets). Both have `encode(text)` → (ids, token start
    chars, token end chars), so features and postprocessing never branch on the kind."""
    from data_pipeline.tokenization.choice import tokenizer_kind

    if tokenizer_kind(tokenizer) == "wordpiece":
        from data_pipeline.squad.wordpiece_offsets import WordPieceOffsetTokenizer

        return WordPieceOffsetTokenizer(tokenizer)
    return OffsetTokenizer(tokenizer)


def _char_index_of_bytes(text: str) -> list[int]:
    """For every UTF-8 byte offset 0..len(bytes) of `text`, the character index there."""
    out = []
    for i, c in enumerate(text):
        out.extend([i] * len(c.encode("utf-8")))
    out.append(len(text))
    return out


# --- answers ------------------------------------------------------------------------------


def locate_answer(context: str, answer: dict, stats: collections.Counter) -> tuple[int, int] | None:
    """The answer's character span [s, e) in `context`: at its `answer_start` when the text
    is there, else the nearest occurrence of the text (counted `misplaced_offset`), else
    None (counted `unalignable`)."""
    text, start = answer["text"], answer["answer_start"]
    if context[start : start + len(text)] == text and text.strip():
        return start, start + len(text)
    hits = [m.start() for m in re.finditer(re.escape(text), context)] if text.strip() else []
    if hits:
        stats["misplaced_offset"] += 1
        best = min(hits, key=lambda h: abs(h - start))
        return best, best + len(text)
    stats["unalignable"] += 1
    return None


def token_span(starts: list[int], ends: list[int], span: tuple[int, int]) -> tuple[int, int] | None:
    """First token ending after span start, last token starting before span end."""
    s, e = span
    first = next((i for i, end in enumerate(ends) if end > s), None)
    last = next((i for i in range(len(starts) - 1, -1, -1) if starts[i] < e), None)
    if first is None or last is None or last < first:
        return None
    return first, last


# --- features -----------------------------------------------------------------------------

FEATURE_KEYS = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "start_positions",
    "end_positions",
    "is_impossible",
    "qa_index",
    "context_mask",
    "max_context",
    "token_start_char",
    "token_end_char",
)
# What postprocessing needs of each feature besides the model's logits.
PREDICTION_KEYS = ("qa_index", "context_mask", "max_context", "token_start_char", "token_end_char")
# Prediction on length-grouped batches (`predict_logits(per_token=PER_TOKEN_FILL,
# length=max_seq_length)`): what the positions beyond a batch's bucket get when the
# per-token arrays are padded back to max_seq_length. Logits -1e4, as the model gives
# padding; the features 0: not context, so postprocessing never reads those logits.
PER_TOKEN_FILL = {
    "start_logits": -1e4,
    "end_logits": -1e4,
    "context_mask": 0,
    "max_context": 0,
    "token_start_char": 0,
    "token_end_char": 0,
}


def doc_spans(num_tokens: int, max_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) windows over `num_tokens` context tokens, as BERT/ALBERT."""
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, doc_stride)


def _is_max_context(spans, span_index: int, position: int) -> bool:
    """Whether window `span_index` gives token `position` the most context (min of left and
    right context, + 0.01 × window length), as the official code."""
    best, best_index = None, None
    for i, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best is None or score > best:
            best, best_index = score, i
    return best_index == span_index


def convert_squad_examples(
    examples: list[SquadExample],
    tokenizer,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    is_training: bool = False,
    stats: dict | None = None,
) -> dict[str, np.ndarray]:
    """Features of `examples` as {key: array [F, ...]} (keys: FEATURE_KEYS; per-token
    arrays [F, max_seq_length] int64, the rest [F]). `qa_index` is the example's index.

    Training drops only examples whose answer cannot be located (counted in `stats`);
    `stats` also counts answers whose boundary falls inside a piece, questions cut to
    `max_query_length`, examples spread over several windows and features.
    """
    if max_seq_length < max_query_length + 3 + 1:
        raise ValueError(
            f"max_seq_length {max_seq_length} leaves no room for context "
            f"after max_query_length {max_query_length}"
        )
    counts = collections.Counter()
    offsets = offset_tokenizer(tokenizer)
    rows = {k: [] for k in FEATURE_KEYS}
    contexts: dict[str, tuple] = {}
    for index, ex in enumerate(examples):
        query = tokenizer.encode(ex.question)
        if len(query) > max_query_length:
            counts["questions_truncated"] += 1
            query = query[:max_query_length]
        cached = contexts.get(ex.context)
        if cached is None:
            cached = contexts[ex.context] = offsets.encode(ex.context)
            if len(contexts) > 4:  # consecutive questions share a context
                contexts.pop(next(iter(contexts)))
        ids, starts, ends = cached
        answer_tokens = None
        if is_training and not ex.is_impossible:
            span = locate_answer(ex.context, ex.answers[0], counts)
            answer_tokens = span and token_span(starts, ends, span)
            if answer_tokens is None:
                if span is not None:
                    counts["unalignable"] += 1
                continue
            if (
                ex.context[starts[answer_tokens[0]] : ends[answer_tokens[1]]]
                != ex.context[span[0] : span[1]]
            ):
                counts["boundary_inside_piece"] += 1
        max_tokens = max_seq_length - len(query) - 3
        spans = doc_spans(len(ids), max_tokens, doc_stride)
        if len(spans) > 1:
            counts["examples_with_several_windows"] += 1
        for s, (start, length) in enumerate(spans):
            n_query = len(query) + 2
            input_ids = (
                [tokenizer.cls_id]
                + query
                + [tokenizer.sep_id]
                + ids[start : start + length]
                + [tokenizer.sep_id]
            )
            pad = max_seq_length - len(input_ids)
            context_mask = [0] * n_query + [1] * length + [0] * (pad + 1)
            max_ctx = (
                [0] * n_query
                + [int(_is_max_context(spans, s, start + j)) for j in range(length)]
                + [0] * (pad + 1)
            )
            tok_s = [0] * n_query + starts[start : start + length] + [0] * (pad + 1)
            tok_e = [0] * n_query + ends[start : start + length] + [0] * (pad + 1)
            start_pos = end_pos = 0
            if answer_tokens is not None:
                a, b = answer_tokens
                if a >= start and b < start + length:
                    start_pos, end_pos = a - start + n_query, b - start + n_query
            rows["input_ids"].append(input_ids + [0] * pad)
            rows["input_mask"].append([1] * len(input_ids) + [0] * pad)
            rows["segment_ids"].append([0] * n_query + [1] * (length + 1) + [0] * pad)
            rows["context_mask"].append(context_mask)
            rows["max_context"].append(max_ctx)
            rows["token_start_char"].append(tok_s)
            rows["token_end_char"].append(tok_e)
            rows["start_positions"].append(start_pos)
            rows["end_positions"].append(end_pos)
            rows["is_impossible"].append(int(ex.is_impossible or start_pos == 0))
            rows["qa_index"].append(index)
    counts["features"] = len(rows["qa_index"])
    counts["examples"] = len(examples)
    if stats is not None:
        stats.update(counts)
    shape = (len(rows["qa_index"]), max_seq_length)
    return {
        k: np.asarray(v, np.int64).reshape(shape if isinstance(v[0], list) else (-1,))
        if v
        else np.zeros(
            (0,)
            + (
                (max_seq_length,)
                if k not in ("start_positions", "end_positions", "is_impossible", "qa_index")
                else ()
            ),
            np.int64,
        )
        for k, v in rows.items()
    }


# The per-token features of the records ([max_seq_length] each): what length-grouped
# batches cut and pad to their bucket.
SEQUENCE_FEATURES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "context_mask",
    "max_context",
    "token_start_char",
    "token_end_char",
)
# What the model is trained on (plus `example_index`, read as `feature_index`).
TRAINING_KEYS = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "start_positions",
    "end_positions",
    "is_impossible",
)


def squad_dataset(
    record_path: str,
    batch_size: int,
    max_seq_length: int,
    is_training: bool = False,
    seed: int | None = None,
    input_context=None,
    drop_remainder: bool = True,
    keys=None,
    length_buckets=None,
):
    """Batches of {input_ids, input_mask, segment_ids: int32 [B, S], start_positions,
    end_positions, is_impossible: int32 [B], feature_index int32 [B]} (`keys`: the record
    features to read instead, e.g. the model's inputs and PREDICTION_KEYS, whose
    context_mask, max_context, token_start_char, token_end_char are [B, S];
    feature_index, the record's position in the file, always comes along).

    `length_buckets` (e.g. data_pipeline.length_buckets.LENGTH_BUCKETS; None: every batch
    padded to max_seq_length): windows of similar length are batched together, S being
    the batch's bucket (a window is `[CLS] question [SEP] context [SEP]`: mostly short of
    384 for SQuAD's paragraphs), every per-token feature (SEQUENCE_FEATURES) cut to it.
    Batches then come out of file order: `feature_index` puts the results back
    (`predict_logits(order_by="feature_index")`); training batches are full."""
    import tensorflow as tf

    wanted = tuple(dict.fromkeys((*(keys or TRAINING_KEYS), "example_index")))
    spec = {
        k: tf.io.FixedLenFeature([max_seq_length if k in SEQUENCE_FEATURES else 1], tf.int64)
        for k in wanted
    }

    def parse(records):
        f = tf.io.parse_example(records, spec)
        out = {k: tf.cast(v if k in SEQUENCE_FEATURES else v[:, 0], tf.int32) for k, v in f.items()}
        out["feature_index"] = out.pop("example_index")
        return out

    from data_pipeline.records import record_dataset

    sequences = tuple(k for k in SEQUENCE_FEATURES if k in wanted)
    return record_dataset(
        record_path, batch_size, parse, is_training, seed, input_context, drop_remainder,
        length_buckets, sequences, max_seq_length,
    )  # fmt: skip


# Bumped when the cached `info` gains a field older caches lack (2: max_seq_length).
CACHE_FORMAT = 2


@dataclasses.dataclass(frozen=True)
class SquadFeatures:
    """The windowed features of one SQuAD file. source: the JSON file; examples: its
    questions (postprocessing maps features back to them); path: the cached TFRecords;
    count: features; max_seq_length: their length; info: what the conversion counted
    (`convert_squad_examples` stats); reused: read from the cache rather than converted."""

    source: str
    examples: list
    path: str
    count: int
    max_seq_length: int
    info: dict
    reused: bool

    def describe(self) -> str:
        """One line: questions, features, where they are, the conversion's counts."""
        counts = ", ".join(
            f"{k} {v:,}"
            for k, v in sorted(self.info.items())
            if k not in ("features", "examples", "max_seq_length")
        )
        return (
            f"{self.source}: {len(self.examples):,} questions -> {self.count:,} features "
            f"({'cached' if self.reused else 'converted'}: {self.path}); {counts}"
        )

    def dataset(self, batch_size: int, **options):
        """`squad_dataset` of these records (their own length; `length_buckets=...` for
        batches grouped by length)."""
        return squad_dataset(self.path, batch_size, self.max_seq_length, **options)

    def prediction_dataset(self, batch_size: int, length_buckets=None):
        """Every feature once: the model's inputs, PREDICTION_KEYS and feature_index; in
        file order, or with `length_buckets` grouped by length (put the results back in
        order with `feature_index`)."""
        return self.dataset(
            batch_size,
            drop_remainder=False,
            keys=("input_ids", "input_mask", "segment_ids") + PREDICTION_KEYS,
            length_buckets=length_buckets,
        )


def squad_features(
    source: str,
    tokenizer,
    cache_dir: str,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
    examples: list[SquadExample] | None = None,
) -> SquadFeatures:
    """The features of the SQuAD file `source`, from the cache `cache_dir/<name>[-train]`
    or converted into it (`convert_squad_examples`); the cache is keyed by the file's and
    the vocabulary's checksums and every argument. A missing file is a FileNotFoundError
    naming it. `examples`: the file's questions when the caller has read them already
    (`read_squad`). A cache whose records do not match its metadata is rebuilt."""
    from data_pipeline.records import cached_features, fingerprint

    if not filesystem.exists(source):
        raise FileNotFoundError(f"SQuAD file not found: {source}")
    key = fingerprint(
        source,
        tokenizer,
        kind="squad",
        is_training=is_training,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
        cache_format=CACHE_FORMAT,
    )
    examples = read_squad(source) if examples is None else examples
    info = {"max_seq_length": max_seq_length}
    name = os.path.splitext(os.path.basename(source))[0] + ("-train" if is_training else "")
    base = os.path.join(cache_dir, name)

    def build():
        return convert_squad_examples(
            examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training, info
        )

    path, count, reused = cached_features(base, key, build, info)
    return SquadFeatures(source, examples, path, count, info["max_seq_length"], info, reused)
