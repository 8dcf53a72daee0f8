"""n-gram masked-LM targets (ALBERT paper §4.1, "n-gram masking"), one implementation.

The offline writer (`create_pretraining_data`) and the dynamic-masking mode of the input
pipeline (`input_pipeline`, masks drawn anew every epoch) both call `NgramMasker`, so the
two paths cannot drift apart.

Algorithm (the official create_pretraining_data.py's, with its three defects fixed):
1. Tokens are grouped into words: a non-special token starts a word when its
   `word_start` flag is set (official piece rule, `AlbertTokenizer.vocab_tables`), or when
   it follows a special token (a segment never continues the previous segment's last word).
   Without whole-word masking every token is a word. Special tokens are never candidates.
2. Budget: min(max_predictions_per_seq, max(1, round(len(tokens) · masked_lm_prob))).
3. Every word position is a candidate, visited in random order. For each, n ∈ {1..ngram}
   is drawn, renormalized over the n that fit before the last word; the unit is the n
   consecutive words starting there. If it would exceed the budget, n-1, … is tried; if no
   n fits, or any word of the unit is already masked (a real check: the official one is a
   no-op), the candidate is skipped.
   The paper's distribution is p(n) ∝ 1/n (favor_shorter_ngram; ∝ n otherwise). Drawn
   as is (`calibrate=False`, the official behaviour), the budget fallbacks and overlap
   skips make the *realized* units far shorter: 65/23/11% on WikiText for p = 55/27/18%.
   With `calibrate=True` (default) n is drawn from q(n) ∝ max(p(n)·(T+H) - c(n), ε), where
   c(n) counts the units of size n realized so far by this masker and T their total: a
   deficit controller (horizon H=200 units) that makes the realized mix match p(n) within
   a fraction of a point while the budget is filled exactly as before. The counts restart
   with `reset()` (the writer resets per output shard, so output does not depend on how parts
   are spread over processes).
4. Every selected token: 80% `[MASK]`, 10% a random *ordinary* piece (never `<pad>`,
   `[CLS]`, …: an official defect), 10% unchanged. The label is the original id.
5. Positions come out sorted. Every draw comes from the `numpy.random.Generator` passed in
   (the official code draws n from numpy's unseeded global state: not reproducible).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np


@dataclasses.dataclass
class MaskResult:
    """A batch's masking. `tokens` [B, S] int32 with replacements applied; `positions`,
    `labels` [B, P] int32 and `weights` [B, P] float32 (P = max_predictions_per_seq; sorted
    positions, zero-padded with weight 0); `ngrams` [ngram] count of selected units by n;
    `kinds` [3] count of tokens set to [MASK], to a random piece, and left unchanged."""

    tokens: np.ndarray
    positions: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    ngrams: np.ndarray
    kinds: np.ndarray


class NgramMasker:
    """Draws masked-LM targets for one sequence at a time.

    Args:
      mask_id: id of `[MASK]`.
      ordinary_ids: [K] int ids a random replacement may draw.
      max_predictions_per_seq, masked_lm_prob, ngram, favor_shorter_ngram,
      do_whole_word_mask: the official flags, same defaults.
      calibrate: match the realized n-gram mix to p(n) (see the module docstring).
    """

    def __init__(
        self,
        mask_id: int,
        ordinary_ids,
        max_predictions_per_seq: int = 20,
        masked_lm_prob: float = 0.15,
        ngram: int = 3,
        favor_shorter_ngram: bool = True,
        do_whole_word_mask: bool = True,
        calibrate: bool = True,
    ):
        self.check_options(max_predictions_per_seq, masked_lm_prob, ngram)
        self.mask_id = int(mask_id)
        self.ordinary_ids = np.asarray(ordinary_ids, np.int32)
        if self.ordinary_ids.size == 0:
            raise ValueError("ordinary_ids is empty: nothing to draw random replacements from")
        self.max_predictions = max_predictions_per_seq
        self.masked_lm_prob = masked_lm_prob
        self.ngram = ngram
        self.whole_word = do_whole_word_mask
        weights = 1.0 / np.arange(1, ngram + 1)
        if not favor_shorter_ngram:
            weights = weights[::-1]
        self.p = weights / weights.sum()
        self._p = self.p.tolist()
        self.calibrate = calibrate
        self.realized = [0] * ngram  # Python ints: updated per sequence in the inner loop

    HORIZON = 200

    @staticmethod
    def check_options(max_predictions_per_seq: int, masked_lm_prob: float, ngram: int) -> None:
        """A one-line ValueError naming the first option out of range (callers check their
        settings with this before any worker builds a masker)."""
        if ngram < 1:
            raise ValueError(f"ngram={ngram} must be at least 1")
        if not 0.0 < masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob={masked_lm_prob} must be in (0, 1)")
        if max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq} must be >= 1")

    @classmethod
    def from_tokenizer(cls, tokenizer, **options) -> NgramMasker:
        """A masker for `tokenizer`'s vocabulary ([MASK] id, ordinary pieces)."""
        _, _, ordinary = tokenizer.vocab_tables()
        return cls(tokenizer.mask_id, ordinary, **options)

    def mask_records(
        self,
        input_ids: np.ndarray,
        token_boundary: np.ndarray,
        input_mask: np.ndarray,
        special_ids,
        rng: np.random.Generator,
    ) -> MaskResult:
        """Masks records written with dynamic masking ([B, S] arrays): words from the
        stored `token_boundary`, specials by id (`special_ids`: [CLS], [SEP])."""
        special = np.isin(input_ids, np.asarray(special_ids)) & (input_mask > 0)
        return self(input_ids, token_boundary > 0, special, input_mask > 0, rng)

    def reset(self) -> None:
        """Forget the realized counts of the calibration (start of an independent stream)."""
        self.realized = [0] * self.ngram

    def _cdf(self) -> list[float]:
        """Cumulative (unnormalized) weights of n = 1..ngram for the next sequence."""
        if not self.calibrate:
            return list(itertools.accumulate(self._p))
        total = sum(self.realized) + self.HORIZON
        return list(
            itertools.accumulate(
                max(p * total - c, 1e-3 * p) for p, c in zip(self._p, self.realized)
            )
        )

    def budget(self, num_tokens: int) -> int:
        return min(self.max_predictions, max(1, int(round(num_tokens * self.masked_lm_prob))))

    def __call__(
        self,
        tokens: np.ndarray,
        word_start: np.ndarray,
        special: np.ndarray,
        valid: np.ndarray,
        rng: np.random.Generator,
    ) -> MaskResult:
        """Masks a batch. tokens [B, S] int; word_start, special, valid [B, S] bool (valid:
        the input mask; special: [CLS]/[SEP]). Rows are processed in order, so the result
        depends only on the inputs, the generator state and the calibration counts."""
        tokens = np.asarray(tokens, np.int32)
        batch, seq = tokens.shape
        special = np.asarray(special, bool)
        valid = np.asarray(valid, bool)
        candidate = valid & ~special
        if self.whole_word:
            after_special = np.ones_like(special)
            after_special[:, 1:] = special[:, :-1]
            starts = candidate & (np.asarray(word_start, bool) | after_special)
        else:
            starts = candidate
        words_per_row = starts.sum(axis=1)
        row_first = np.zeros(batch + 1, np.int64)  # first global word of each row
        np.cumsum(words_per_row, out=row_first[1:])
        total = int(row_first[-1])
        # Global word index of every token (only meaningful where `candidate`).
        word_of = np.cumsum(starts, axis=1) - 1 + row_first[:-1, None]
        length = np.bincount(word_of[candidate], minlength=total)
        cum = np.zeros(total + 1, np.int64)
        np.cumsum(length, out=cum[1:])
        row_of_word = np.repeat(np.arange(batch), words_per_row)
        order = np.lexsort((rng.random(total), row_of_word))  # words shuffled within rows
        u = rng.random(total).tolist()
        cum_l, order_l, first_l = cum.tolist(), order.tolist(), row_first.tolist()
        num_tokens = valid.sum(axis=1).tolist()
        selected = bytearray(total)
        ngrams = [0] * self.ngram
        top = self.ngram
        for b in range(batch):
            lo, hi = first_l[b], first_l[b + 1]
            if lo == hi:
                continue
            budget = self.budget(num_tokens[b])
            cdf = self._cdf()
            realized = [0] * top
            count = 0
            for w in order_l[lo:hi]:
                if count >= budget:
                    break
                avail = min(top, hi - w)
                x = u[w] * cdf[avail - 1]
                n = 1
                while n < avail and x >= cdf[n - 1]:
                    n += 1
                size = cum_l[w + n] - cum_l[w]
                while count + size > budget and n > 1:
                    n -= 1
                    size = cum_l[w + n] - cum_l[w]
                if count + size > budget or any(selected[w : w + n]):
                    continue
                selected[w : w + n] = b"\x01" * n
                realized[n - 1] += 1
                count += size
            for i in range(top):
                ngrams[i] += realized[i]
                self.realized[i] += realized[i]
        chosen = np.frombuffer(bytes(selected), np.uint8).astype(bool)
        picked = candidate & chosen[np.where(candidate, word_of, 0)]
        rows, cols = np.nonzero(picked)  # row-major: sorted per row
        k = len(rows)
        rank = np.cumsum(picked, axis=1)[rows, cols] - 1
        labels = tokens[rows, cols]
        draws = rng.random((2, k))
        to_mask = draws[0] < 0.8
        to_random = ~to_mask & (draws[1] >= 0.5)
        random_ids = self.ordinary_ids[rng.integers(0, len(self.ordinary_ids), k)]
        out = tokens.copy()
        out[rows, cols] = np.where(to_mask, self.mask_id, np.where(to_random, random_ids, labels))
        positions = np.zeros((batch, self.max_predictions), np.int32)
        label_ids = np.zeros((batch, self.max_predictions), np.int32)
        weights = np.zeros((batch, self.max_predictions), np.float32)
        positions[rows, rank] = cols
        label_ids[rows, rank] = labels
        weights[rows, rank] = 1.0
        n_mask, n_random = int(to_mask.sum()), int(to_random.sum())
        return MaskResult(
            out,
            positions,
            label_ids,
            weights,
            np.array(ngrams, np.int64),
            np.array([n_mask, n_random, k - n_mask - n_random], np.int64),
        )
