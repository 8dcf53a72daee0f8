"""SQuAD-format span QA with a WordPiece vocab.txt (data_pipeline.squad.wordpiece_offsets):
offsets into the original text through BERT's basic tokenizer, the same offsets in the
graph, every CMRC 2018 answer back from its tokens, and features → oracle logits →
answers → the CMRC 2018 metric."""

import collections
import json

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA

CMRC = SHARED_DATA / "chinese" / "expmrc-cmrc2018-dev.json"

# Normalization that changes lengths: accents (composed and decomposed), case mappings to
# two characters ("İ"), deleted characters (NUL, controls, U+FFFD), full-width forms,
# ligatures, a capital sigma, CJK inside Latin text, CJK outside the BMP, Hangul (NFD
# splits a syllable into three jamo), a Greek varia that NFD turns into "`"
# (punctuation), words over 100 characters, and whitespace of several kinds.
TRICKY = [
    "Café ÉCOLE naïve e\u0301te\u0301",
    "a\x00b\x01c d\x1cx \ufffd \x00",
    "İstanbul ΟΔΟΣ ΣΑΣ. Straße ŒUVRE",
    "ﬁne 中文abc，１２３ iPhone\u00a0X\u3000上市",
    "  Hello,world!  \t\n(don't) 1,000.5 U.S.A.",
    "𠀀𠀁 abc 한국어 텍스트 a\u1fefb",
    "x" * 120 + " " + "y" * 50 + "!" + "z" * 60,
    "",
    "   ",
]


@pytest.fixture(scope="module")
def wp(wordpiece_vocab):
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(wordpiece_vocab)


@pytest.fixture(scope="module")
def cmrc():
    if not CMRC.exists():
        pytest.skip(f"real data not available: {CMRC} is absent")
    from data_pipeline.squad.examples import read_squad

    return read_squad(str(CMRC))


def test_offsets_point_into_the_original_text(wp):
    """Hugging Face's offsets are character offsets into the text as given, whatever
    normalization did to its length: each token's characters normalize to the token, and
    what lies between tokens normalizes to nothing (whitespace, deleted characters,
    dropped accents)."""
    from data_pipeline.squad.offsets import offset_tokenizer

    offsets = offset_tokenizer(wp)
    assert type(offsets).__name__ == "WordPieceOffsetTokenizer"
    for text in TRICKY[:5]:  # (Hangul pieces may split a syllable: the graph test has it)
        ids, starts, ends = offsets.encode(text)
        assert ids == wp.encode(text)
        assert all(0 <= s < e <= len(text) for s, e in zip(starts, ends))
        assert starts == sorted(starts) and ends == sorted(ends)
        for i, s, e in zip(ids, starts, ends):
            piece = wp.id_to_piece(i)
            if piece != "[UNK]":
                assert wp.normalize(text[s:e]).replace(" ", "") == piece.removeprefix("##")
        bounds = [0, *[x for s, e in zip(starts, ends) for x in (s, e)], len(text)]
        for a, b in zip(bounds[::2], bounds[1::2]):
            assert wp.normalize(text[a:b]).strip() == "", repr(text[a:b])
    # Where the lengths change: "İ" is one character of "ist"; "e\u0301" ends at the e; the
    # NUL inside "a\x00b" belongs to its word, U+FFFD and a lone NUL to no token.
    ids, starts, ends = offsets.encode("İstanbul e\u0301 a\x00b \ufffd \x00 中")
    assert starts[0] == 0 and max(e for e in ends if e <= 8) == 8
    spans = [(s, e) for s, e in zip(starts, ends)]
    assert (9, 10) in spans and spans[-1] == (20, 21)
    assert [e for s, e in spans if 12 <= s < 15][-1] == 15


def _graph_equals_python(tokenizer, texts):
    import tensorflow as tf

    from data_pipeline.squad.offsets import offset_tokenizer
    from data_pipeline.squad.wordpiece_offsets import GraphWordPieceOffsets

    graph = GraphWordPieceOffsets(tokenizer.graph_tokenizer())
    ids, starts, ends = (x.to_list() for x in graph(tf.constant(texts)))
    python = offset_tokenizer(tokenizer)
    for text, g_ids, g_starts, g_ends in zip(texts, ids, starts, ends):
        char_at = []  # UTF-8 byte offset → character offset
        for i, c in enumerate(text):
            char_at += [i] * len(c.encode())
        char_at.append(len(text))
        want = python.encode(text)
        assert g_ids == want[0] == tokenizer.encode(text), text[:40]
        assert [char_at[b] for b in g_starts] == want[1], text[:40]
        assert [char_at[b] for b in g_ends] == want[2], text[:40]
    return len(ids)


def test_graph_offsets_equal_the_runners(wp, cmrc, wordpiece_vocab):
    """GraphWordPieceOffsets (the SavedModel's) gives the Python ids and, converted from
    UTF-8 bytes to characters, the Python offsets: on the tricky strings and on every
    CMRC 2018 context; cased (no lowercasing, accents kept) on the tricky strings."""
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    contexts = list(dict.fromkeys(ex.context for ex in cmrc))
    assert _graph_equals_python(wp, TRICKY + contexts) == len(TRICKY) + 369
    cased = WordPieceTokenizer(wordpiece_vocab, do_lower_case=False)
    assert _graph_equals_python(cased, TRICKY) == len(TRICKY)


def test_every_cmrc_answer_round_trips(wp, cmrc):
    """Gold answer → its token span → the context's characters between the tokens'
    offsets gives the answer back, for every locatable answer of the 515 CMRC questions
    (3 answers each). Each CJK character is a token, so no answer boundary falls inside
    a piece; the only differences are four gold answers with spaces around them (the
    spaces are not part of any token)."""
    from data_pipeline.squad.features import locate_answer, token_span
    from data_pipeline.squad.offsets import offset_tokenizer

    offsets = offset_tokenizer(wp)
    stats = collections.Counter()
    total, exceptions = 0, []
    contexts = {}
    for ex in cmrc:
        if ex.context not in contexts:
            contexts[ex.context] = offsets.encode(ex.context)
        ids, starts, ends = contexts[ex.context]
        for answer in ex.answers:
            span = locate_answer(ex.context, answer, stats)
            if span is None:
                continue
            total += 1
            a, b = token_span(starts, ends, span)
            back = ex.context[starts[a] : ends[b]]
            if back != answer["text"]:
                exceptions.append((ex.qas_id, answer["text"], back))
    assert len(cmrc) == 515 and len(contexts) == 369
    # 11 ExpMRC answers are not in their context at all (answer_start -1).
    assert total == 1534 and stats["unalignable"] == 11
    assert exceptions == [
        ("DEV_158_QUERY_1", " 1999年", "1999年"),
        ("DEV_591_QUERY_1", "小巴 47M ", "小巴 47M"),
        ("DEV_1130_QUERY_1", ' "Iskra" ', '"Iskra"'),
        ("DEV_1130_QUERY_1", ' "Iskra" ', '"Iskra"'),
    ]


def test_oracle_logits_give_the_gold_answers_and_cmrc_em_100(wp, cmrc):
    """WordPiece features (128 tokens, stride 64) → logits at the labelled positions →
    postprocess → the CMRC 2018 metric: the questions are answered with exactly their first
    gold answer (stripped), through windows, max-context and the offsets, but for two:
    their start token has its most context in a window that does not hold the whole
    answer (the official max-context rule), so a later start is taken: a part of the
    answer."""
    from data_pipeline.squad import cmrc_evaluation
    from data_pipeline.squad.features import convert_squad_examples
    from data_pipeline.squad.postprocess import postprocess

    stats = {}
    features = convert_squad_examples(cmrc, wp, 128, 64, 32, is_training=True, stats=stats)
    assert "boundary_inside_piece" not in stats and "unalignable" not in stats
    assert stats["examples_with_several_windows"] == 515 and stats["features"] == 3741
    assert (features["input_ids"][:, 0] == wp.cls_id).all()
    n, seq = features["input_ids"].shape
    start = np.full((n, seq), -5.0, np.float32)
    end = np.full((n, seq), -5.0, np.float32)
    start[np.arange(n), features["start_positions"]] = 5.0
    end[np.arange(n), features["end_positions"]] = 5.0
    predictions, _, _ = postprocess(cmrc, features, start, end, max_answer_length=64)
    gold = {ex.qas_id: ex.answers[0]["text"].strip() for ex in cmrc}
    missed = {q for q in gold if predictions[q] != gold[q]}
    assert missed == {"DEV_168_QUERY_1", "DEV_1525_QUERY_3"}
    assert all(gold[q].endswith(predictions[q]) for q in missed)
    with open(CMRC) as f:
        scores = cmrc_evaluation.evaluate(json.load(f), predictions)
    assert scores["total"] == 515 and scores["skip"] == 0
    assert scores["exact_match"] == pytest.approx(100 * 513 / 515)
    assert 100 * 513 / 515 < scores["f1"] < 100
