"""Entity metrics against seqeval 1.2.2 (the test-only reference) on the real gold tags of
CoNLL-2003 dev (IOB2, and the same entities re-tagged IOBES / IOE2 / BILOU) and resume_zh
dev (BMES), with systematically corrupted predictions: random tag flips at several rates,
boundary shifts, type swaps and ill-formed sequences. Default (conlleval) and strict mode,
micro / macro / weighted and per type, equal to 1e-12."""

import random

import pytest

from data_pipeline.tagging.data import discover_labels, read_conll
from data_pipeline.tagging.metrics import (
    detect_scheme,
    entities,
    entity_report,
    tagging_metrics,
    token_accuracy,
)

seqeval_metrics = pytest.importorskip("seqeval.metrics")
from seqeval import scheme as seqeval_schemes  # noqa: E402
from seqeval.metrics import sequence_labeling, v1  # noqa: E402

SEQEVAL_SCHEME = {
    "IOB2": seqeval_schemes.IOB2,
    "IOE2": seqeval_schemes.IOE2,
    "IOBES": seqeval_schemes.IOBES,
    "BMES": seqeval_schemes.IOBES,  # seqeval has no M: it gets M → I (the same scheme)
    "BILOU": seqeval_schemes.BILOU,
}


def _retag(sentences_tags, scheme):
    """CoNLL's IOB2 gold re-tagged in `scheme` (same entities)."""
    out = []
    for tags in sentences_tags:
        new = ["O"] * len(tags)
        for kind, start, end in entities([tags], "IOB2"):
            n = end - start
            if scheme in ("IOBES", "BILOU"):
                single, first, middle, last = ("S", "B", "I", "E") if scheme == "IOBES" else "UBIL"
                letters = [single] if n == 1 else [first] + [middle] * (n - 2) + [last]
            else:  # IOE2
                letters = ["I"] * (n - 1) + ["E"]
            for i, letter in enumerate(letters):
                new[start + i] = f"{letter}-{kind}"
        out.append(new)
    return out


def _gold(shared_data, name):
    if name.startswith("conll2003"):
        path = shared_data / "ner" / "conll2003" / "dev.txt"
        # the first 1,000 of 3,250 dev sentences (14k tokens, every type, 1,735
        # entities): seqeval, the reference, is pure Python and ten runs a case
        tags = [list(s.tags) for s in read_conll(str(path))[:1000]]
        scheme = name.split("-")[1] if "-" in name else "IOB2"
        return (tags if scheme == "IOB2" else _retag(tags, scheme)), scheme
    path = shared_data / "ner" / "resume_zh" / "dev.txt"
    return [list(s.tags) for s in read_conll(str(path))], "BMES"


def _corruptions(gold, scheme, rates, seed=0):
    """name → predicted tags: each a systematic way of being wrong."""
    rng = random.Random(seed)
    labels = sorted({t for tags in gold for t in tags})
    kinds = sorted({t[2:] for t in labels if t != "O"})
    letters = sorted({t[0] for t in labels if t != "O"})
    out = {"perfect": [list(t) for t in gold]}
    for rate in rates:
        out[f"flip{rate}"] = [
            [rng.choice(labels) if rng.random() < rate else t for t in tags] for tags in gold
        ]
    shifted, swapped, dropped = [], [], []
    for tags in gold:
        s, w, d = list(tags), list(tags), list(tags)
        for kind, start, end in entities([tags], scheme):
            move = rng.choice((-1, 1))
            # boundary shift: the whole entity's tags slide one token left or right
            if 0 <= start + move and end + move <= len(tags):
                s[start + move : end + move] = tags[start:end]
                s[start if move == 1 else end - 1] = "O"
            # type swap: same span, another type
            other = rng.choice([k for k in kinds if k != kind] or [kind])
            w[start:end] = [f"{t[0]}-{other}" for t in tags[start:end]]
            # an entity loses its first or last tag to O (dangling I/M/E, B without end)
            d[start if rng.random() < 0.5 else end - 1] = "O"
        shifted.append(s)
        swapped.append(w)
        dropped.append(d)
    out.update(shift=shifted, type_swap=swapped, dropped_edge=dropped)
    # ill-formed: letters replaced at random by any letter of the scheme (I after O,
    # E without B, M after S, ...), types kept
    out["ill_formed"] = [
        [f"{rng.choice(letters)}-{t[2:]}" if t != "O" and rng.random() < 0.3 else t for t in tags]
        for tags in gold
    ]
    # lenient-only: I-/E- from nowhere inside O runs (spurious starts)
    out["spurious"] = [
        [
            f"{rng.choice(letters)}-{rng.choice(kinds)}" if t == "O" and rng.random() < 0.05 else t
            for t in tags
        ]
        for tags in gold
    ]
    return out


def _reference(gold, pred, scheme):
    """seqeval's classification report: {type or "micro avg" / "macro avg" / "weighted avg":
    {precision, recall, f1-score, support}} (scheme None: default mode)."""
    if scheme is None:
        return sequence_labeling.classification_report(
            gold, pred, output_dict=True, zero_division=0
        )
    if scheme == "BMES":
        gold, pred = (
            [[("I" + t[1:]) if t[:1] == "M" else t for t in s] for s in x] for x in (gold, pred)
        )
    return v1.classification_report(
        gold, pred, output_dict=True, zero_division=0, scheme=SEQEVAL_SCHEME[scheme]
    )


def _assert_equal(report, reference):
    averages = {f"{a} avg": getattr(report, a) for a in ("micro", "macro", "weighted")}
    kinds = [k for k in reference if k not in averages]
    assert list(report.per_type) == kinds
    for name, got in [*report.per_type.items(), *averages.items()]:
        want = reference[name]
        assert got.precision == pytest.approx(want["precision"], abs=1e-12), name
        assert got.recall == pytest.approx(want["recall"], abs=1e-12), name
        assert got.f1 == pytest.approx(want["f1-score"], abs=1e-12), name
        assert got.support == want["support"], name


COMPARED = {"tokens": 0, "comparisons": 0}


@pytest.mark.parametrize(
    "name",
    ["conll2003", "resume_zh", "conll2003-IOBES", "conll2003-IOE2", "conll2003-BILOU"],
)
def test_equal_to_seqeval_on_corrupted_dev_predictions(shared_data, name):
    gold, scheme = _gold(shared_data, name)
    assert detect_scheme({t for tags in gold for t in tags}) == scheme
    # the re-tagged copies of CoNLL (same text, other letters) get fewer flip rates
    rates = (0.01, 0.05, 0.2, 0.5) if "-" not in name else (0.05,)
    compared = 0
    # BILOU's L and U mean nothing to conlleval's rules (seqeval warns): strict mode only
    modes = (scheme,) if scheme == "BILOU" else (None, scheme)
    for case, pred in _corruptions(gold, scheme, rates).items():
        for mode in modes:
            _assert_equal(entity_report(gold, pred, mode), _reference(gold, pred, mode))
            compared += sum(map(len, pred))
        assert token_accuracy(gold, pred) == pytest.approx(
            seqeval_metrics.accuracy_score(gold, pred), abs=1e-15
        )
        f1 = entity_report(gold, pred, scheme).micro.f1
        # every corruption costs something: the comparisons are not of trivial cases
        assert f1 == 1.0 if case == "perfect" else f1 < 1.0, case
    print(f"{name}: {compared:,} predicted tags compared ({len(modes)} modes)")


def test_ill_formed_sequences_by_hand():
    # default mode: I after O starts a chunk, a type change splits, E closes
    assert entities([["O", "I-PER", "I-PER", "O"]]) == [("PER", 1, 3)]
    assert entities([["B-PER", "I-LOC"]]) == [("PER", 0, 1), ("LOC", 1, 2)]
    assert entities([["E-X", "E-X"]]) == [("X", 0, 1), ("X", 1, 2)]
    # strict: only well-formed chunks
    assert entities([["O", "I-PER", "I-PER", "O"]], "IOB2") == []
    assert entities([["B-PER", "I-PER", "O", "B-LOC"]], "IOB2") == [("PER", 0, 2), ("LOC", 3, 4)]
    assert entities([["B-X", "M-X", "E-X", "M-X", "E-X", "S-Y"]], "BMES") == [
        ("X", 0, 3),
        ("Y", 5, 6),
    ]
    assert entities([["B-X", "M-X", "O"]], "BMES") == []  # never closed
    assert entities([["a", "b"], ["c"]], None) == []  # not tags: no chunks, no error
    # sentence positions: one slot between sentences
    assert entities([["B-X"], ["B-Y"]], "IOB2") == [("X", 0, 1), ("Y", 2, 3)]
    with pytest.raises(ValueError, match="not a IOB2 tag"):
        entities([["B-X", "E-X"]], "IOB2")
    with pytest.raises(ValueError, match="scheme"):
        entities([["O"]], "IOB1")
    with pytest.raises(ValueError, match="sentence 0"):
        entity_report([["O", "O"]], [["O"]])


def test_scores_by_hand_and_flat_metrics():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG"]]
    report = entity_report(gold, pred)
    assert report.micro.correct == 2 and report.micro.predicted == 3 and report.micro.support == 3
    assert report.per_type["LOC"].f1 == 0.0 and report.per_type["ORG"].precision == 0.5
    assert report.macro.f1 == pytest.approx((1 + 0 + 2 / 3) / 3)
    flat = tagging_metrics(gold, pred, "IOB2")
    assert flat["f1"] == pytest.approx(2 / 3) and flat["accuracy"] == 0.8
    assert set(flat) == {"precision", "recall", "f1", "macro_f1", "accuracy"} | {
        "f1/LOC",
        "f1/ORG",
        "f1/PER",
    }
    empty = entity_report([["O"]], [["O"]])
    assert empty.per_type == {} and empty.micro.f1 == 0.0 and empty.macro.f1 == 0.0


def test_detect_scheme():
    assert detect_scheme(["O", "B-X", "I-X"]) == "IOB2"
    assert detect_scheme(["O", "I-X"]) is None  # IO: lenient mode only
    assert detect_scheme(["O", "B-X", "M-X", "E-X", "S-X"]) == "BMES"
    assert detect_scheme(["O", "B-X", "I-X", "E-X", "S-X"]) == "IOBES"
    assert detect_scheme(["O", "I-X", "E-X"]) == "IOE2"
    assert detect_scheme(["B-X", "I-X", "L-X", "U-X", "O"]) == "BILOU"


def test_labels_of_resume_zh_are_bmes(shared_data):
    train = read_conll(str(shared_data / "ner" / "resume_zh" / "train.txt"))
    assert detect_scheme(discover_labels(train)) == "BMES"
