"""Long documents as windows (data_pipeline.classification.long_documents): the windows
cover every piece of a real review in order, carry its label, the cache keys on them, and
the per-document aggregation equals its definition."""

import json

import numpy as np
import pytest

from data_pipeline.classification.examples import Example
from data_pipeline.classification.long_documents import (
    DocumentWindows,
    aggregate_logits,
    convert_windowed,
    document_outputs,
    document_spans,
)
from data_pipeline.windows import doc_spans


def _reviews(shared_data, n=6):
    path = shared_data / "long_documents" / "movie_reviews" / "dev.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = [r for r in rows if r["label"] == "neg"][: n // 2] + [
        r for r in rows if r["label"] == "pos"
    ][: n // 2]
    return [Example(r["id"], r["text"], None, r["label"], i + 1) for i, r in enumerate(rows)]


def test_doc_spans_has_one_home_and_its_layout():
    from data_pipeline.squad import features

    assert features.doc_spans is doc_spans
    assert doc_spans(10, 4, 2) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    assert doc_spans(0, 4, 2) == [(0, 0)] and doc_spans(4, 4, 9) == [(0, 4)]
    assert doc_spans(9, 4, 9) == [(0, 4), (4, 4), (8, 1)]  # a stride past a window: no gap
    with pytest.raises(ValueError, match="max_tokens >= 1"):
        doc_spans(5, 0, 2)


def test_windows_cover_every_piece_with_the_documents_label(shared_data, tok):
    examples = _reviews(shared_data)
    S, stride = 64, 24
    stats = {}
    f = convert_windowed(examples, tok, S, ["neg", "pos"], DocumentWindows(stride), stats)
    counts = stats["document_windows"]
    assert sum(counts) == len(f["input_ids"]) and stats["windowed"] == len(examples)
    assert stats["truncated"] == 0 and stats["text_pair"] is False
    first = 0
    for e, ids, n in zip(examples, tok.encode_batch([e.text_a for e in examples]), counts):
        spans = doc_spans(len(ids), S - 2, stride)
        assert n == len(spans) > 1
        seen = []
        for k, (start, length) in enumerate(spans):
            row, mask = f["input_ids"][first + k], f["input_mask"][first + k]
            assert row[0] == tok.cls_id and row[length + 1] == tok.sep_id
            assert list(row[1 : length + 1]) == list(ids[start : start + length])
            assert mask.sum() == length + 2 and not row[length + 2 :].any()
            seen.extend(range(start, start + length))
        assert sorted(set(seen)) == list(range(len(ids)))  # every piece, none invented
        assert set(f["label_ids"][first : first + n]) == {["neg", "pos"].index(e.label)}
        first += n
    assert not f["segment_ids"].any()
    # The first W windows of a document (the rest not read), counted.
    capped = {}
    g = convert_windowed(examples, tok, S, ["neg", "pos"], DocumentWindows(stride, 2), capped)
    assert capped["document_windows"] == [2] * len(examples)
    assert capped["truncated"] == len(examples)
    np.testing.assert_array_equal(g["input_ids"][:2], f["input_ids"][:2])
    assert document_spans(1000, S, stride, 3) == doc_spans(1000, S - 2, stride)[:3]
    # Training order: the same windows shuffled with the seed (a label-sorted file would
    # otherwise fill the reader's shuffle buffer with one label), never aggregated.
    shuffled = {}
    h = convert_windowed(examples, tok, S, ["neg", "pos"], DocumentWindows(stride), shuffled, "", 3)
    assert shuffled["shuffled"] and shuffled["document_windows"] == counts
    key = lambda rows: sorted(map(tuple, rows))  # noqa: E731
    assert key(h["input_ids"]) == key(f["input_ids"])
    assert not np.array_equal(h["input_ids"], f["input_ids"])
    pairs = lambda g: sorted(zip(map(tuple, g["input_ids"]), g["label_ids"]))  # noqa: E731
    assert pairs(h) == pairs(f)
    with pytest.raises(ValueError, match="shuffled"):
        document_outputs(np.zeros((len(h["label_ids"]), 2)), h["label_ids"], shuffled, "max_prob")


def test_pairs_and_bad_settings_are_one_line_errors(tok):
    pair = [Example("dev-0", "a", "b", "neg", 7)]
    with pytest.raises(ValueError, match=r"dev.jsonl:7: --doc_stride windows single texts"):
        convert_windowed(pair, tok, 32, ["neg"], DocumentWindows(8), {}, "dev.jsonl")
    with pytest.raises(ValueError, match="multiple-choice"):
        DocumentWindows(8).check_task(multiple_choice=True, regression=False)
    with pytest.raises(ValueError, match="--aggregate=max_prob"):
        DocumentWindows(8, aggregate="max_prob").check_task(False, regression=True)
    DocumentWindows(0, aggregate="max_prob").check_task(False, True)  # truncation: unused
    with pytest.raises(ValueError, match="aggregate='sum' is not one of"):
        DocumentWindows(8, aggregate="sum")
    with pytest.raises(ValueError, match="doc_stride=-1 must be >= 0"):
        DocumentWindows(-1)


def test_aggregation_equals_its_definition():
    rng = np.random.default_rng(0)
    counts = [3, 1, 5]
    logits = rng.normal(size=(9, 4)).astype(np.float32) * 3
    mean = aggregate_logits(logits, counts, "mean_logits")
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    best = aggregate_logits(logits, counts, "max_prob")
    for d, (lo, hi) in enumerate(((0, 3), (3, 4), (4, 9))):
        np.testing.assert_allclose(mean[d], logits[lo:hi].mean(0), rtol=1e-6)
        np.testing.assert_allclose(np.exp(best[d]), probs[lo:hi].max(0), rtol=1e-5)
    np.testing.assert_allclose(aggregate_logits(logits, [1] * 9, "mean_logits"), logits)
    labels = np.array([1, 1, 1, 0, 2, 2, 2, 2, 2])
    out, gold = document_outputs(logits, labels, {"document_windows": counts}, "mean_logits")
    assert out.shape == (3, 4) and list(gold) == [1, 0, 2]
    same = document_outputs(logits, labels, {"truncated": 0}, "mean_logits")
    assert same[0] is logits and same[1] is labels  # truncation: unchanged
    with pytest.raises(ValueError, match="9 windows do not match"):
        aggregate_logits(logits, [3, 3], "mean_logits")


def test_multi_label_windows_carry_the_documents_multi_hot_label(shared_data, tok):
    """--multi_label with --doc_stride: every window of a document holds the document's
    multi-hot row, in document order; max_prob (softmax) is refused for sigmoid labels."""
    from data_pipeline.classification.multi_label import multi_hot

    reviews = _reviews(shared_data, 4)
    names = ("neg", "pos", "long")
    examples = [
        Example(e.guid, e.text_a, None, (e.label, "long") if i % 2 else (e.label,), e.line)
        for i, e in enumerate(reviews)
    ]
    stats = {}
    out = convert_windowed(
        examples, tok, 64, list(names), DocumentWindows(32), stats, multi_label=True
    )
    counts = stats["document_windows"]
    assert min(counts) > 1 and out["label_ids"].shape == (sum(counts), 3)
    assert out["label_ids"].dtype == np.float32
    expected = np.repeat(multi_hot(examples, names), counts, axis=0)
    np.testing.assert_array_equal(out["label_ids"], expected)
    logits, labels = document_outputs(
        np.zeros((sum(counts), 3)), out["label_ids"], stats, "mean_logits"
    )
    np.testing.assert_array_equal(labels, multi_hot(examples, names))
    with pytest.raises(ValueError, match="with --multi_label .* use --aggregate=mean_logits"):
        DocumentWindows(32, aggregate="max_prob").check_task(False, False, multi_label=True)
