"""N21 / N02: a strict tag scheme that cannot read the dev file's gold tags is refused in one
line naming the line and --tag_scheme, instead of scoring 0 for a perfect model; gold tags
written in the scheme (CoNLL-2003 dev as IOB2, re-tagged IOBES / IOE2 / BILOU, resume_zh
as BMES) are scored as before, and the refused files score under --tag_scheme none exactly
as seqeval's default mode does."""

import random

import pytest

from albert_tf.training.task_predictions import ner_scores
from data_pipeline.tagging.data import TaggedSentence, read_conll
from data_pipeline.tagging.metrics import MIN_READ, detect_scheme, entities, misread
from tests.data_pipeline.tagging.test_tagging_metrics import SEQEVAL_SCHEME, _retag

seqeval_metrics = pytest.importorskip("seqeval.metrics")


def _iob1(tags):
    """IOB2 tags as the original CoNLL-2003 files write them: B- only where an entity
    follows one of its own type."""
    out, prev = [], "O"
    for tag in tags:
        if tag.startswith("B-") and not (prev != "O" and prev[2:] == tag[2:]):
            tag = "I-" + tag[2:]
        out.append(tag)
        prev = tag
    return out


def _sentences(tags_list, first_line=1):
    out, line = [], first_line
    for tags in tags_list:
        out.append(TaggedSentence(tuple(f"w{i}" for i in range(len(tags))), tuple(tags), line))
        line += len(tags) + 1
    return out


@pytest.fixture
def conll_dev(shared_data):
    path = shared_data / "ner" / "conll2003" / "dev.txt"
    return [list(s.tags) for s in read_conll(str(path))[:400]]


def _corrupt(gold, rate=0.15, seed=0):
    r = random.Random(seed)
    labels = sorted({t for tags in gold for t in tags})
    return [[r.choice(labels) if r.random() < rate else t for t in tags] for tags in gold]


def test_iob1_dev_read_as_iob2_is_refused_naming_the_line(conll_dev):
    gold = [_iob1(tags) for tags in conll_dev]
    labels = sorted({t for tags in gold for t in tags} | {"B-LOC", "B-ORG", "B-MISC"})
    assert detect_scheme(labels) == "IOB2"  # what auto picks from the label set alone
    sentences = _sentences(gold)
    assert entities(gold, "IOB2") == []  # before: 0 gold entities, F1 0 for any model
    with pytest.raises(ValueError) as excinfo:
        ner_scores(sentences, gold, "IOB2")
    message = str(excinfo.value)
    index, position, _, _ = misread(gold, "IOB2")
    line = sentences[index].line + position
    assert "\n" not in message and message.startswith(f"the dev file's line {line}: ")
    assert f"reads 0 of the {len(entities(gold))} gold entities" in message
    assert "--tag_scheme none" in message
    # Read as seqeval's default mode: a perfect model scores 1, a corrupted one as seqeval.
    flat, _ = ner_scores(sentences, gold, None)
    assert flat["f1"] == 1.0
    pred = _corrupt(gold)
    flat, _ = ner_scores(sentences, pred, None)
    assert flat["f1"] == pytest.approx(seqeval_metrics.f1_score(gold, pred), abs=1e-12)
    assert flat["precision"] == pytest.approx(
        seqeval_metrics.precision_score(gold, pred), abs=1e-12
    )


def test_bio_dev_read_as_iobes_from_mixed_training_tags_is_refused(conll_dev):
    mixed_train = conll_dev[:200] + _retag(conll_dev[200:], "IOBES")
    labels = sorted({t for tags in mixed_train for t in tags})
    assert detect_scheme(labels) == "IOBES"
    sentences = _sentences(conll_dev)
    with pytest.raises(ValueError, match=r"^the dev file's line \d+: .* is not IOBES"):
        ner_scores(sentences, conll_dev, "IOBES")
    flat, _ = ner_scores(sentences, conll_dev, None)
    assert flat["f1"] == 1.0


@pytest.mark.parametrize("scheme", ["IOB2", "IOBES", "IOE2", "BILOU", "BMES"])
def test_gold_written_in_the_scheme_scores_as_before(shared_data, conll_dev, scheme):
    if scheme == "BMES":
        path = shared_data / "ner" / "resume_zh" / "dev.txt"
        gold = [list(s.tags) for s in read_conll(str(path))]
    else:
        gold = conll_dev if scheme == "IOB2" else _retag(conll_dev, scheme)
    # (real files have a few ill-formed tags: CoNLL-2003's copy about 1% of entities)
    assert len(entities(gold, scheme)) >= MIN_READ * len(entities(gold))
    assert misread(gold, scheme) is None
    pred = _corrupt(gold, seed=1)
    flat, _ = ner_scores(_sentences(gold), pred, scheme)
    as_seqeval = lambda tags: [[t.replace("M-", "I-") for t in s] for s in tags]  # noqa: E731
    want = seqeval_metrics.f1_score(
        as_seqeval(gold), as_seqeval(pred), mode="strict", scheme=SEQEVAL_SCHEME[scheme]
    )
    assert flat["f1"] == pytest.approx(want, abs=1e-12) and 0.3 < flat["f1"] < 1
