"""Sentence-order (SOP) pretraining instances from tokenized documents (paper §4.1).

`InstanceMaker.make(documents, rng)` turns the documents of one input part into the
feature arrays of its instances for every `dupe_factor` pass, shuffled within the part.
It follows the official `create_instances_from_document` step by step:

1. max_num_tokens = max_seq_length - 3 (- 2 without a second segment). The target length is
   max_num_tokens, or with probability `short_seq_prob` uniform in [2, max_num_tokens],
   drawn once per document per pass (`short_seq_scope="document"`, official) or anew for
   every instance (`"instance"`).
2. Whole sentences accumulate into a chunk until it reaches the target or the document ends.
3. A = chunk[:a_end], B = chunk[a_end:] with a_end uniform in [1, sentences-1].
4. `sop`: swap A and B with probability 0.5 (label 1 = swapped). `nsp`: with probability
   0.5 B is text from a random other document of the same part (label 1), and the unused
   sentences go back to the document. `none`: one segment, label 0 (MLM only; for the
   paper's Table 5).
5. Truncate the pair to max_num_tokens one token at a time from the longer side, from the
   front or the back with equal probability.
6. `[CLS] A [SEP] B [SEP]`, segment 0 up to the first `[SEP]`, 1 after; then n-gram masks
   (`masking.NgramMasker`) unless masks are drawn later in tf.data.

Word starts (whole-word masking, the cuts of long sentences, the split of a single
sentence) come from the tokenizer's per-id rule; with `chinese_words` (`--zh_whole_word_mask`)
a token inside a jieba word is no start either (`chinese_words.py`: marked on its id until
the rows are written).

Fixes of official defects (all counted in the stats → meta_data.json):
- Pure SOP: a single-sentence chunk is split inside the sentence at a uniformly drawn word
  boundary, or dropped when it has one word; the official code makes an NSP-style
  random-document negative from it even in SOP mode (google-research/albert#234).
- A sentence longer than max_num_tokens is cut at word boundaries into pieces that fit
  (official: it is truncated and the rest of its text is lost).
- Memory is bounded by one part (about `block_size` bytes of text) × dupe_factor; NSP
  negatives are drawn from the documents of the same part.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np

from data_pipeline.pretraining.chinese_words import INSIDE_WORD, TOKEN_ID_BITS, ChineseWords
from data_pipeline.pretraining.masking import NgramMasker

SENTENCE_ORDERS = ("sop", "nsp", "none")
SHORT_SEQ_SCOPES = ("document", "instance")


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
    """How instances are made (the official flags, plus this project's choices)."""

    max_seq_length: int = 512
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    sentence_order: str = "sop"
    short_seq_scope: str = "document"

    def __post_init__(self):
        if self.sentence_order not in SENTENCE_ORDERS:
            raise ValueError(
                f"sentence_order={self.sentence_order!r} is not one of {SENTENCE_ORDERS}"
            )
        if self.short_seq_scope not in SHORT_SEQ_SCOPES:
            raise ValueError(
                f"short_seq_scope={self.short_seq_scope!r} is not one of {SHORT_SEQ_SCOPES}"
            )
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length={self.max_seq_length} is too small (>= 5)")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob={self.short_seq_prob} is not in [0, 1]")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor={self.dupe_factor} must be >= 1")

    @property
    def max_num_tokens(self) -> int:
        return self.max_seq_length - (2 if self.sentence_order == "none" else 3)


@dataclasses.dataclass
class InstanceStats:
    """What making instances produced and fixed; summed over parts into meta_data.json."""

    documents: int = 0
    sentences: int = 0
    empty_sentences: int = 0
    instances: int = 0
    tokens: int = 0
    target_draws: int = 0
    short_targets: int = 0
    short_target_instances: int = 0
    single_sentence_chunks_split: int = 0
    single_sentence_chunks_dropped: int = 0
    long_sentences_split: int = 0
    nsp_random_segments: int = 0
    truncated_tokens: int = 0
    labels: list = dataclasses.field(default_factory=lambda: [0, 0])
    instance_tokens: int = 0
    masked_tokens: int = 0
    ngrams: list = dataclasses.field(default_factory=list)
    replacements: list = dataclasses.field(default_factory=lambda: [0, 0, 0])

    def add(self, other: InstanceStats) -> None:
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, list):
                size = max(len(a), len(b))
                setattr(
                    self,
                    f.name,
                    [
                        (a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0)
                        for i in range(size)
                    ],
                )
            else:
                setattr(self, f.name, a + b)


class _Doc:
    """A tokenized document: `tokens` [T] int32, `offsets` [sentences+1] sentence starts."""

    __slots__ = ("tokens", "offsets")

    def __init__(self, tokens, offsets):
        self.tokens = tokens
        self.offsets = offsets


class InstanceMaker:
    """Makes the instances of one part of the corpus.

    Args:
      tokenizer: an `AlbertTokenizer` (normalization and encoding of the raw sentences).
      options: `InstanceOptions`.
      masker: an `NgramMasker`, or None to leave masking to the input pipeline (dynamic
        masking: records then carry `token_boundary` and no `masked_lm_*`).
      chinese_words: a `ChineseWords` to make jieba words whole-word units
        (`--zh_whole_word_mask`), or None.
    """

    def __init__(
        self,
        tokenizer,
        options: InstanceOptions,
        masker: NgramMasker | None,
        chinese_words: ChineseWords | None = None,
    ):
        self.tokenizer = tokenizer
        self.options = options
        self.masker = masker
        self.chinese_words = chinese_words
        self.word_start, self.special_ids, _ = tokenizer.vocab_tables()
        self.cls_id, self.sep_id = tokenizer.cls_id, tokenizer.sep_id

    # --- tokenization ---------------------------------------------------------------------

    def tokenize(self, documents: list[list[str]], stats: InstanceStats) -> list[_Doc]:
        """Raw sentences → token documents; empty sentences and documents dropped, sentences
        longer than max_num_tokens cut at word boundaries."""
        flat = [s for doc in documents for s in doc]
        encoded = self.tokenizer.encode_batch(flat)
        if self.chinese_words is not None:  # before the cuts: they fall at word starts
            encoded = [self.chinese_words.mark(ids) for ids in encoded]
        limit = self.options.max_num_tokens
        docs, k = [], 0
        for doc in documents:
            pieces, lengths = [], []
            for ids in encoded[k : k + len(doc)]:
                if not ids:
                    stats.empty_sentences += 1
                    continue
                if len(ids) <= limit:
                    pieces.append(ids)
                    lengths.append(len(ids))
                    continue
                stats.long_sentences_split += 1
                for part in self._cut(np.asarray(ids, np.int32), limit):
                    pieces.append(part)
                    lengths.append(len(part))
            k += len(doc)
            if not pieces:
                continue
            tokens = np.fromiter((t for p in pieces for t in p), np.int32, count=sum(lengths))
            offsets = np.zeros(len(lengths) + 1, np.int64)
            np.cumsum(lengths, out=offsets[1:])
            docs.append(_Doc(tokens, offsets.tolist()))
            stats.sentences += len(lengths)
        stats.documents += len(docs)
        stats.tokens += sum(len(d.tokens) for d in docs)
        return docs

    def _starts(self, ids: np.ndarray) -> np.ndarray:
        """[T] bool: which of the (possibly marked) token ids `ids` [T] start a word."""
        if self.chinese_words is None:
            return self.word_start[ids]
        return self.word_start[ids & TOKEN_ID_BITS] & (ids & INSIDE_WORD == 0)

    def _cut(self, ids: np.ndarray, limit: int):
        starts = np.flatnonzero(self._starts(ids))
        pos = 0
        while len(ids) - pos > limit:
            inside = starts[(starts > pos) & (starts <= pos + limit)]
            cut = int(inside[-1]) if len(inside) else pos + limit
            yield ids[pos:cut].tolist()
            pos = cut
        yield ids[pos:].tolist()

    # --- instances --------------------------------------------------------------------------

    def make(
        self, documents: list[list[str]], rng: np.random.Generator, stats: InstanceStats
    ) -> dict[str, np.ndarray]:
        """Raw documents of one part → {feature: [instances, length]} arrays, shuffled."""
        docs = self.tokenize(documents, stats)
        py = random.Random(int(rng.integers(1 << 62)))  # fast scalar draws, same seed tree
        pairs = []
        for _ in range(self.options.dupe_factor):
            for index, _doc in enumerate(docs):
                self._document_instances(docs, index, py, stats, pairs)
        order = rng.permutation(len(pairs))
        return self._features([pairs[i] for i in order], rng, stats)

    def _target(self, py: random.Random, stats: InstanceStats) -> tuple[int, bool]:
        stats.target_draws += 1
        limit = self.options.max_num_tokens
        if py.random() < self.options.short_seq_prob:
            stats.short_targets += 1
            return py.randint(2, limit), True
        return limit, False

    def _document_instances(self, docs, index, py, stats, out) -> None:
        opts = self.options
        doc = docs[index]
        off = doc.offsets
        n_sent = len(off) - 1
        per_instance = opts.short_seq_scope == "instance"
        target, short = self._target(py, stats)
        first, length, i = 0, 0, 0
        while i < n_sent:
            length += off[i + 1] - off[i]
            if i == n_sent - 1 or length >= target:
                unused = self._chunk(docs, index, first, i + 1, target, py, stats, out, short)
                i -= unused
                first, length = i + 1, 0
                if per_instance:
                    target, short = self._target(py, stats)
            i += 1

    def _chunk(self, docs, index, first, last, target, py, stats, out, short) -> int:
        """Sentences [first, last) of docs[index] → at most one instance appended to `out`
        as (a, b, label). Returns the number of sentences to give back (NSP only)."""
        opts = self.options
        doc = docs[index]
        tokens, off = doc.tokens, doc.offsets
        n = last - first
        begin, end = off[first], off[last]
        if opts.sentence_order == "none":
            a, b, label, unused = tokens[begin:end], tokens[:0], 0, 0
        elif n == 1:
            if opts.sentence_order == "nsp":  # official NSP: B from a random document
                a = tokens[begin:end]
                b = self._random_segment(docs, index, target - len(a), py)
                label, unused = 1, 0
                stats.nsp_random_segments += 1
            else:  # pure SOP: split the sentence at a word boundary, or drop it
                inner = np.flatnonzero(self._starts(tokens[begin + 1 : end]))
                if len(inner) == 0:
                    stats.single_sentence_chunks_dropped += 1
                    return 0
                cut = begin + 1 + int(inner[py.randrange(len(inner))])
                stats.single_sentence_chunks_split += 1
                a, b, unused = tokens[begin:cut], tokens[cut:end], 0
                label = int(py.random() < 0.5)
                if label:
                    a, b = b, a
        else:
            a_end = py.randint(1, n - 1)
            split = off[first + a_end]
            a = tokens[begin:split]
            if opts.sentence_order == "nsp" and py.random() < 0.5:
                b = self._random_segment(docs, index, target - len(a), py)
                label, unused = 1, n - a_end
                stats.nsp_random_segments += 1
            else:
                b, label, unused = tokens[split:end], 0, 0
                if opts.sentence_order == "sop" and py.random() < 0.5:
                    a, b, label = b, a, 1
        a, b = self._truncate(a, b, py, stats)
        out.append((a, b, label))
        stats.labels[label] += 1
        stats.short_target_instances += short
        return unused

    def _random_segment(self, docs, index, target_length, py) -> np.ndarray:
        other = index
        for _ in range(10):
            other = py.randrange(len(docs))
            if other != index:
                break
        doc = docs[other]
        off = doc.offsets
        start = py.randrange(len(off) - 1)
        end = start + 1
        while end < len(off) - 1 and off[end] - off[start] < target_length:
            end += 1
        return doc.tokens[off[start] : off[end]]

    def _truncate(self, a, b, py, stats):
        """Official truncate_seq_pair in closed form: the longer side (B on ties) loses a
        token per step, from the front or the back with probability 1/2 each."""
        la, lb = len(a), len(b)
        excess = la + lb - self.options.max_num_tokens
        if excess <= 0:
            return a, b
        stats.truncated_tokens += excess
        ka = kb = 0
        if la > lb:
            ka = min(la - lb, excess)
        elif lb > la:
            kb = min(lb - la, excess)
        rest = excess - ka - kb
        kb += (rest + 1) // 2
        ka += rest // 2
        fa = bin(py.getrandbits(ka)).count("1") if ka else 0
        fb = bin(py.getrandbits(kb)).count("1") if kb else 0
        return a[fa : la - (ka - fa)], b[fb : lb - (kb - fb)]

    def _features(self, pairs, rng, stats) -> dict[str, np.ndarray]:
        seq = self.options.max_seq_length
        count = len(pairs)
        stats.instances += count
        ids = np.zeros((count, seq), np.int32)
        boundary = np.zeros((count, seq), np.int8)
        segment = np.zeros((count, seq), np.int8)
        mask = np.zeros((count, seq), np.int8)
        labels = np.zeros((count, 1), np.int32)
        two = self.options.sentence_order != "none"
        seps = np.zeros((count, 2), np.int64)
        for r, (a, b, label) in enumerate(pairs):
            la, lb = len(a), len(b)
            n = la + lb + (3 if two else 2)
            row = ids[r]
            row[0] = self.cls_id
            row[1 : la + 1] = a
            row[la + 1] = self.sep_id
            if two:
                row[la + 2 : n - 1] = b
                row[n - 1] = self.sep_id
                segment[r, la + 2 : n] = 1
            mask[r, :n] = 1
            labels[r, 0] = label
            seps[r] = (la + 1, n - 1)
        valid = mask.astype(bool)
        special = np.zeros((count, seq), bool)
        special[:, 0] = True
        rows = np.arange(count)
        special[rows, seps[:, 0]] = True
        special[rows, seps[:, 1]] = True
        starts = self._starts(ids) & valid
        if self.chinese_words is not None:
            np.bitwise_and(ids, TOKEN_ID_BITS, out=ids)  # the marks end here
        # Official token_boundary: 1 at word starts and at [CLS]/[SEP]; a segment's first
        # token starts a word even when it is a continuation piece (after truncation).
        after_special = np.zeros_like(special)
        after_special[:, 1:] = special[:, :-1]
        boundary[:] = (starts | special | after_special) & valid
        features = {
            "input_ids": ids,
            "input_mask": mask,
            "segment_ids": segment,
            "token_boundary": boundary,
            "next_sentence_labels": labels,
        }
        if self.masker is not None and count:
            res = self.masker(ids, starts, special, valid, rng)
            features.update(
                input_ids=res.tokens,
                masked_lm_positions=res.positions,
                masked_lm_ids=res.labels,
                masked_lm_weights=res.weights,
            )
            stats.masked_tokens += int(res.weights.sum())
            stats.ngrams = [
                x + int(y) for x, y in zip(stats.ngrams or [0] * len(res.ngrams), res.ngrams)
            ]
            stats.replacements = [x + int(y) for x, y in zip(stats.replacements, res.kinds)]
        stats.instance_tokens += int(mask.sum(dtype=np.int64))
        return features
