"""data_pipeline.pretraining.masking.NgramMasker on synthetic batches (no tokenizer, no
TensorFlow)."""

import numpy as np
import pytest

from data_pipeline.pretraining.masking import NgramMasker

PAD, CLS, SEP, MASK = 0, 2, 3, 4
VOCAB = 1000
UNUSED = np.arange(500, 520)  # ids a replacement must never draw
ORDINARY = np.setdiff1d(np.arange(5, VOCAB), UNUSED)
P_SHORT = np.array([6, 3, 2]) / 11  # p(n) ∝ 1/n, n = 1..3


def make_batch(seed, batch=256, seq=128, word_start_prob=0.7, min_len=16):
    """[CLS] A [SEP] B [SEP] rows of random length, padded; words of 1+ pieces."""
    rng = np.random.default_rng(seed)
    tokens = rng.choice(ORDINARY, (batch, seq)).astype(np.int32)
    word_start = rng.random((batch, seq)) < word_start_prob
    valid = np.zeros((batch, seq), bool)
    special = np.zeros((batch, seq), bool)
    for b, n in enumerate(rng.integers(min_len, seq + 1, batch)):
        valid[b, :n] = True
        special[b, [0, int(rng.integers(2, n - 2)), n - 1]] = True
    tokens[special] = SEP
    tokens[:, 0] = CLS
    tokens[~valid] = PAD
    word_start[~valid] = False
    return tokens, word_start, special, valid


def word_ids(word_start, special, valid, whole_word=True):
    """Per row: word index of each candidate token (-1 elsewhere), the masker's rule."""
    cand = valid & ~special
    after = np.ones_like(special)
    after[:, 1:] = special[:, :-1]
    starts = cand & (word_start | after) if whole_word else cand
    ids = np.where(cand, np.cumsum(starts, axis=1) - 1, -1)
    return ids


def masked_matrix(res, shape):
    m = np.zeros(shape, bool)
    rows, cols = np.nonzero(res.weights)
    m[rows, res.positions[rows, cols]] = True
    return m


def budgets(valid, masker):
    return np.array([masker.budget(int(n)) for n in valid.sum(axis=1)])


def run(masker, seed, batches=1, **kw):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(batches):
        batch = make_batch(seed * 1000 + i, **kw)
        out.append((batch, masker(*batch, rng)))
    return out


def new_masker(**kw):
    args = dict(mask_id=MASK, ordinary_ids=ORDINARY, max_predictions_per_seq=20)
    args.update(kw)
    return NgramMasker(**args)


def test_budget_formula():
    m = new_masker(max_predictions_per_seq=20, masked_lm_prob=0.15)
    for n in (1, 3, 4, 7, 10, 13, 50, 100, 128, 133, 134, 512):
        assert m.budget(n) == min(20, max(1, round(n * 0.15)))
    assert m.budget(2) == 1 and m.budget(128) == 19 and m.budget(512) == 20


def test_budget_filled_exactly_with_single_piece_words():
    m = new_masker()
    for (_tokens, _ws, _special, valid), res in run(m, 1, batches=2, word_start_prob=1.0):
        masked = res.weights.sum(axis=1)
        np.testing.assert_array_equal(masked, budgets(valid, m))


def test_invariants_specials_padding_sorted_labels():
    m = new_masker()
    for (tokens, _ws, special, valid), res in run(m, 2, batches=3):
        b = budgets(valid, m)
        count = res.weights.sum(axis=1).astype(int)
        assert (count <= b).all()
        assert count.sum() >= 0.97 * b.sum()  # multi-piece words may leave 1-2 unfilled
        for r in range(len(tokens)):
            k = count[r]
            pos = res.positions[r]
            assert (res.weights[r, :k] == 1).all() and (res.weights[r, k:] == 0).all()
            assert (pos[k:] == 0).all() and (res.labels[r, k:] == 0).all()
            p = pos[:k]
            assert (np.diff(p) > 0).all()  # sorted, unique
            assert valid[r, p].all() and not special[r, p].any()  # no pad, no [CLS]/[SEP]
            np.testing.assert_array_equal(res.labels[r, :k], tokens[r, p])
        m_mat = masked_matrix(res, tokens.shape)
        # Everything not selected is unchanged, specials and padding included.
        np.testing.assert_array_equal(res.tokens[~m_mat], tokens[~m_mat])
        assert res.kinds.sum() == count.sum()


def test_whole_words_and_consecutive_units():
    m = new_masker()
    total_runs = total_units = 0
    for (tokens, ws, special, valid), res in run(m, 3, batches=3, word_start_prob=0.6):
        mm = masked_matrix(res, tokens.shape)
        wid = word_ids(ws, special, valid)
        masked_words = 0
        for r in range(len(tokens)):
            words = wid[r][wid[r] >= 0]
            hit = mm[r][wid[r] >= 0]
            n_words = words.max() + 1
            per_word = np.bincount(words, weights=hit, minlength=n_words)
            size = np.bincount(words, minlength=n_words)
            # A masked word is masked entirely: all of its pieces.
            assert ((per_word == 0) | (per_word == size)).all(), r
            chosen = per_word > 0
            masked_words += chosen.sum()
            # Maximal runs of consecutive masked words: each unit is a run of n
            # consecutive words, so there are never more runs than units.
            total_runs += int(np.sum(chosen & ~np.r_[False, chosen[:-1]]))
        assert masked_words == sum((n + 1) * c for n, c in enumerate(res.ngrams))
        total_units += int(res.ngrams.sum())
        # A unit may span a multi-piece word: those exist in this batch.
        assert (mm & ~ws & valid & ~special).any()
    assert total_runs <= total_units


def test_random_replacements_only_ordinary_ids():
    m = new_masker()
    seen_random = 0
    for (tokens, _ws, _special, _valid), res in run(m, 4, batches=3):
        mm = masked_matrix(res, tokens.shape)
        new = res.tokens[mm]
        old = tokens[mm]
        other = (new != MASK) & (new != old)
        seen_random += other.sum()
        assert np.isin(new[other], ORDINARY).all()
        assert not np.isin(new, UNUSED).any()
        assert not np.isin(new[other], [PAD, 1, CLS, SEP, MASK]).any()
    assert seen_random > 100


def test_reproducible_with_seed():
    a = run(new_masker(), 5, batches=2)
    b = run(new_masker(), 5, batches=2)
    c = run(new_masker(), 6, batches=2)  # other seed (and other batch contents)
    for (_, ra), (_, rb) in zip(a, b):
        for field in ("tokens", "positions", "labels", "weights", "ngrams", "kinds"):
            np.testing.assert_array_equal(getattr(ra, field), getattr(rb, field))
    # Same batch, other generator seed: other masks.
    batch = make_batch(77)
    r1 = new_masker()(*batch, np.random.default_rng(1))
    r2 = new_masker()(*batch, np.random.default_rng(2))
    assert not np.array_equal(r1.positions, r2.positions)
    assert not np.array_equal(a[0][1].positions, c[0][1].positions)
    # reset() restarts the calibration: same generator state → same result again.
    m = new_masker()
    x = m(*batch, np.random.default_rng(9))
    m(*batch, np.random.default_rng(10))
    m.reset()
    y = m(*batch, np.random.default_rng(9))
    np.testing.assert_array_equal(x.positions, y.positions)


def realized_mix(masker, seed, batches=8, **kw):
    units = np.zeros(3)
    for _, res in run(masker, seed, batches=batches, **kw):
        units += res.ngrams
    return units / units.sum()


def test_uncalibrated_reproduces_official_bias_towards_short_units():
    mix = realized_mix(new_masker(calibrate=False), 7)
    # Drawn as is, budget fallbacks and overlap skips make units far shorter than p(n).
    assert mix[0] > P_SHORT[0] + 0.04, mix
    assert mix[2] < P_SHORT[2] - 0.03, mix


def test_calibrated_mix_matches_p():
    mix = realized_mix(new_masker(calibrate=True), 7)
    np.testing.assert_allclose(mix, P_SHORT, atol=0.015)


def test_favor_longer_ngrams_reverses():
    # Rows of 64-128 tokens (budgets 10-19): p(n) ∝ n is reachable there. (On rows of a
    # few tokens a 3-word unit cannot fit a budget of 2-3, and the realized share of
    # 3-grams stays ~2 points short of 6/11 whatever the controller does.)
    mix = realized_mix(new_masker(calibrate=True, favor_shorter_ngram=False), 8, min_len=64)
    np.testing.assert_allclose(mix, P_SHORT[::-1], atol=0.015)
    raw = realized_mix(new_masker(calibrate=False, favor_shorter_ngram=False), 8, min_len=64)
    assert raw[2] > raw[0]  # even uncalibrated, longer units now dominate


def test_replacement_kinds_80_10_10():
    m = new_masker()
    kinds = np.zeros(3)
    observed = np.zeros(3)
    for (tokens, _ws, _special, _valid), res in run(m, 9, batches=16):
        kinds += res.kinds
        mm = masked_matrix(res, tokens.shape)
        new, old = res.tokens[mm], tokens[mm]
        observed += [(new == MASK).sum(), ((new != MASK) & (new != old)).sum(), (new == old).sum()]
    assert kinds.sum() > 30000
    np.testing.assert_allclose(kinds / kinds.sum(), [0.8, 0.1, 0.1], atol=0.02)
    np.testing.assert_allclose(observed / observed.sum(), [0.8, 0.1, 0.1], atol=0.02)
    # "unchanged" in the output ⊇ kind "unchanged" (a random draw may hit the same id).
    assert observed[0] == kinds[0] and observed[2] >= kinds[2]


def test_without_whole_word_mask_every_piece_is_a_word():
    m = new_masker(do_whole_word_mask=False)
    partial = 0
    for (tokens, ws, special, valid), res in run(m, 10, batches=2, word_start_prob=0.3):
        mm = masked_matrix(res, tokens.shape)
        # Budget filled exactly: every unit is n single pieces.
        np.testing.assert_array_equal(res.weights.sum(axis=1), budgets(valid, m))
        assert mm.sum() == sum((n + 1) * c for n, c in enumerate(res.ngrams))
        # Words (by word_start) are masked partially now.
        wid = word_ids(ws, special, valid, whole_word=True)
        for r in range(len(tokens)):
            words = wid[r][wid[r] >= 0]
            hit = mm[r][wid[r] >= 0]
            per_word = np.bincount(words, weights=hit)
            size = np.bincount(words)
            partial += int(((per_word > 0) & (per_word < size)).sum())
    assert partial > 50


def test_bad_arguments():
    with pytest.raises(ValueError, match="ngram"):
        new_masker(ngram=0)
    with pytest.raises(ValueError, match="masked_lm_prob"):
        new_masker(masked_lm_prob=0.0)
    with pytest.raises(ValueError, match="ordinary_ids"):
        new_masker(ordinary_ids=[])
    with pytest.raises(ValueError, match="max_predictions_per_seq"):
        new_masker(max_predictions_per_seq=0)
