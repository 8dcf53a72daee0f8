"""Word → piece alignment, windows and the way back, on all of CoNLL-2003 dev and resume_zh
dev with the German SentencePiece model and the Chinese WordPiece vocabulary; the TFRecord
cache and its tf.data reader (padded and length-bucketed)."""

import numpy as np
import pytest

from data_pipeline.length_buckets import LENGTH_BUCKETS
from data_pipeline.tagging.alignment import best_window, windows
from data_pipeline.tagging.data import TaggedSentence, discover_labels, read_conll
from data_pipeline.tagging.features import IGNORED, convert_sentences, tagging_features
from data_pipeline.tagging.predictions import word_predictions, write_conll

DEV_FILES = {"conll2003": "ner/conll2003", "resume_zh": "ner/resume_zh"}


def _dataset(shared_data, name):
    folder = shared_data / DEV_FILES[name]
    labels = discover_labels(read_conll(str(folder / "train.txt")))
    return read_conll(str(folder / "dev.txt")), labels


def _tokenizer(request, kind):
    if kind == "sentencepiece":
        return request.getfixturevalue("tok")
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(request.getfixturevalue("wordpiece_vocab"))


def _check_round_trip(sentences, labels, tokenizer, features, max_seq_length, doc_stride):
    """Every word predicted once, from its max-context window; gold labels come back."""
    ids, mask, label_ids = features["input_ids"], features["input_mask"], features["label_ids"]
    word_index, sentence_index = features["word_index"], features["sentence_index"]
    lengths = mask.sum(axis=1)
    # Positions not owned are never read: garbage there must not change the result.
    noise = np.random.default_rng(0).integers(0, len(labels), ids.shape)
    predicted = np.where(word_index != IGNORED, label_ids, noise)
    back = word_predictions(
        word_index, sentence_index, predicted, [len(s.tokens) for s in sentences]
    )
    assert [[labels[i] for i in tags] for tags in back] == [list(s.tags) for s in sentences]
    # predictions of a batch cut to its longest window (length buckets) read the same
    cut = word_predictions(
        word_index,
        sentence_index,
        predicted[:, : lengths.max()],
        [len(s.tokens) for s in sentences],
    )
    assert cut == back
    # Layout: [CLS] pieces [SEP] padding; labels only on pieces; owned ⊂ labelled.
    assert (ids[:, 0] == tokenizer.cls_id).all()
    assert (ids[np.arange(len(ids)), lengths - 1] == tokenizer.sep_id).all()
    assert (lengths <= max_seq_length).all() and (features["segment_ids"] == 0).all()
    positions = np.arange(max_seq_length)[None, :]
    inside = (positions > 0) & (positions < lengths[:, None] - 1)
    assert ((label_ids != IGNORED) <= inside).all()
    assert ((word_index != IGNORED) <= (label_ids != IGNORED)).all()
    # Windows of a sentence start doc_stride pieces apart and agree where they overlap.
    windows_of, start = {}, {}
    for f, s in enumerate(sentence_index.tolist()):
        windows_of.setdefault(s, []).append(f)
        start[f] = 0 if len(windows_of[s]) == 1 else start[f - 1] + doc_stride
    # The owning window is the max-context one, recomputed from the features: among the
    # sentence's windows holding the word's first piece, the highest
    # min(left, right) + 0.01 * pieces, the earliest on ties.
    for f_owner, c_owner in zip(*np.nonzero(word_index != IGNORED)):
        s = int(sentence_index[f_owner])
        piece = start[f_owner] + c_owner - 1
        best = None
        for f in windows_of[s]:
            n = lengths[f] - 2
            if start[f] <= piece < start[f] + n:
                assert ids[f, piece - start[f] + 1] == ids[f_owner, c_owner]
                assert label_ids[f, piece - start[f] + 1] == label_ids[f_owner, c_owner]
                score = min(piece - start[f], start[f] + n - 1 - piece) + 0.01 * n
                if best is None or score > best[0]:
                    best = (score, f)
        assert best[1] == f_owner, (s, piece)
    return back


@pytest.mark.parametrize("name", sorted(DEV_FILES))
@pytest.mark.parametrize("kind", ["sentencepiece", "wordpiece"])
@pytest.mark.parametrize("max_seq_length, doc_stride", [(128, 64), (16, 4)])
def test_round_trip_on_dev(shared_data, request, name, kind, max_seq_length, doc_stride):
    sentences, labels = _dataset(shared_data, name)
    tokenizer = _tokenizer(request, kind)
    stats = {}
    features = convert_sentences(sentences, tokenizer, max_seq_length, doc_stride, labels, stats)
    _check_round_trip(sentences, labels, tokenizer, features, max_seq_length, doc_stride)
    words = sum(len(s.tokens) for s in sentences)
    assert (features["word_index"] != IGNORED).sum() == words
    assert stats["features"] == len(features["input_ids"]) >= len(sentences)
    print(
        f"{name} {kind} {max_seq_length}/{doc_stride}: {len(sentences):,} sentences, "
        f"{words:,} words, {stats}"
    )
    if max_seq_length == 16:  # most sentences need several windows, and the trip holds
        assert stats["windowed_sentences"] > len(sentences) // 3
    # the pieces of each word are its own encoding: the first pieces in order
    encoded = tokenizer.encode_batch([w for s in sentences[:50] for w in s.tokens])
    firsts = [e[0] if e else tokenizer.unk_id for e in encoded]
    got = []
    for f in np.nonzero(features["sentence_index"] < 50)[0]:
        owned = features["word_index"][f] != IGNORED
        got += features["input_ids"][f][owned].tolist()
    assert got == firsts


@pytest.mark.parametrize("kind", ["sentencepiece", "wordpiece"])
def test_a_word_without_pieces_is_still_predicted(request, kind):
    tokenizer = _tokenizer(request, kind)
    assert tokenizer.encode_batch(["\u200b"]) == [[]]
    sentences = [TaggedSentence(("Peter", "\u200b", "lebt", "\u200b"), ("B-PER", "O", "O", "B-X"))]
    labels = ["O", "B-PER", "B-X"]
    stats = {}
    features = convert_sentences(sentences, tokenizer, 16, 4, labels, stats)
    assert stats["empty_words"] == 2
    with pytest.raises(ValueError, match="'B-X' is not one of the 2 labels"):
        convert_sentences(sentences, tokenizer, 16, 4, labels[:2])
    row = features["input_ids"][0]
    owned = features["word_index"][0] != IGNORED
    assert features["word_index"][0][owned].tolist() == [0, 1, 2, 3]
    assert row[owned][[1, 3]].tolist() == [tokenizer.unk_id] * 2
    back = word_predictions(
        features["word_index"], features["sentence_index"], features["label_ids"], [4]
    )
    assert back == [[1, 0, 0, 2]]


def test_windows_and_max_context_by_hand():
    assert windows(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert windows(4, 4, 2) == [(0, 4)] and windows(0, 4, 2) == [(0, 0)]
    assert windows(5, 4, 8) == [(0, 4), (4, 1)]  # a stride past the window: no gap
    spans = windows(10, 4, 2)  # (0,4) (2,4) (4,4) (6,4)
    assert spans == [(0, 4), (2, 4), (4, 4), (6, 4)]
    # piece 2: min(2, 1) = 1 in window 0, min(0, 3) = 0 in window 1 → 0;
    # piece 3: min(3, 0) = 0 in window 0, min(1, 2) = 1 in window 1 → 1
    assert [best_window(spans, p) for p in range(10)] == [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    # a tie in min context goes to the earlier window
    assert best_window([(0, 3), (1, 3)], 2) == 1 and best_window([(0, 4), (1, 4)], 2) == 0
    with pytest.raises(ValueError):
        windows(5, 0, 1)


def test_best_windows_of_a_sentence_are_the_max_context_rule():
    """best_windows (one pass, what convert_sentences uses) equals the rule applied to
    every window for each position, on random layouts and on a sentence of 5,000 pieces
    in 10-piece windows every piece (5,000 windows; its cost is measured in
    docs/performance.md, not timed here)."""
    import random

    from data_pipeline.tagging.alignment import best_windows

    def brute(spans, p):  # the rule over all windows, ties to the earlier
        scores = [
            (min(p - s, s + n - 1 - p) + 0.01 * n, -i)
            for i, (s, n) in enumerate(spans)
            if s <= p < s + n
        ]
        return -max(scores)[1]

    rng = random.Random(0)
    for _ in range(200):
        n, room, stride = rng.randint(0, 60), rng.randint(1, 12), rng.randint(1, 15)
        spans = windows(n, room, stride)
        positions = sorted(rng.sample(range(n), rng.randint(0, n)))
        assert best_windows(spans, positions) == [brute(spans, p) for p in positions]
    spans = windows(5000, 10, 1)
    owners = best_windows(spans, range(5000))
    for p in [0, 4, 5, 6, 4999, *rng.sample(range(5000), 30)]:
        assert owners[p] == brute(spans, p), p


def test_prediction_errors_and_conll_file(tmp_path):
    word_index = np.array([[-1, 0, 1, -1], [-1, 1, -1, -1]])
    with pytest.raises(ValueError, match="predicted twice"):
        word_predictions(word_index, np.array([0, 0]), np.zeros((2, 4), int), [2])
    with pytest.raises(ValueError, match="no prediction"):
        word_predictions(word_index[:1], np.array([0]), np.zeros((1, 4), int), [3])
    with pytest.raises(ValueError, match="cut off"):
        word_predictions(word_index[:1], np.array([0]), np.zeros((1, 2), int), [2])
    sentences = [TaggedSentence(("EU", "rejects"), ("B-ORG", "O")), TaggedSentence(("x",), ("O",))]
    path = tmp_path / "out" / "predictions.txt"
    path.parent.mkdir()
    write_conll(str(path), sentences, [["B-ORG", "B-MISC"], ["O"]])
    assert path.read_text() == "EU B-ORG B-ORG\nrejects O B-MISC\n\nx O O\n\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["predictions.txt"]
    with pytest.raises(ValueError, match="sentence 1"):
        write_conll(str(path), sentences, [["O", "O"], ["O", "O"]])
    with pytest.raises(ValueError, match="CoNLL column"):
        write_conll(str(path), [TaggedSentence(("New York",), ("B-LOC",))], [["B-LOC"]])
    assert path.read_text() == "EU B-ORG B-ORG\nrejects O B-MISC\n\nx O O\n\n"  # untouched


def test_cache_and_dataset(shared_data, tok, tmp_path):
    source = str(shared_data / "ner" / "conll2003" / "dev.txt")
    sentences, labels = _dataset(shared_data, "conll2003")
    expected = convert_sentences(sentences, tok, 32, 8, labels)
    cached = tagging_features(source, "dev", tok, str(tmp_path), labels, 32, 8)
    assert not cached.reused and cached.count == len(expected["input_ids"])
    assert cached.info["sentences"] == 3250 and cached.info["windowed_sentences"] > 100
    again = tagging_features(source, "dev", tok, str(tmp_path), labels, 32, 8)
    assert again.reused and again.info == cached.info and "cached" in again.describe()

    def gather(ds):
        rows = {}
        for batch in ds:
            for k, v in batch.items():
                v = v.numpy()
                if v.ndim == 2:  # bucketed: pad back as a model's padded batch would be
                    fill = -1 if k in ("label_ids", "word_index") else 0
                    v = np.pad(v, [(0, 0), (0, 32 - v.shape[1])], constant_values=fill)
                rows.setdefault(k, []).append(v)
        rows = {k: np.concatenate(v) for k, v in rows.items()}
        order = np.argsort(rows["feature_index"])
        return {k: v[order] for k, v in rows.items()}

    padded = gather(cached.dataset(64, drop_remainder=False))
    bucketed = gather(cached.dataset(64, drop_remainder=False, length_buckets=LENGTH_BUCKETS))
    for got in (padded, bucketed):
        assert got["feature_index"].tolist() == list(range(cached.count))
        for k, v in expected.items():
            np.testing.assert_array_equal(got[k], v, err_msg=k)
    shapes = set()
    for batch in cached.dataset(64, drop_remainder=False, length_buckets=LENGTH_BUCKETS):
        shapes.add(batch["input_ids"].shape[1])
    assert shapes == {16, 32}
