"""SQuAD features: character offsets through ALBERT's normalization, windows, labels, and
the whole way back from logits to answer text (data_pipeline.squad.features/.postprocess)."""

import collections
import json
import re

import numpy as np
import pytest

from data_pipeline.squad import evaluation as squad_eval
from data_pipeline.squad.examples import SquadExample, read_squad
from data_pipeline.squad.features import (
    convert_squad_examples,
    doc_spans,
    locate_answer,
    token_span,
)
from data_pipeline.squad.offsets import OffsetTokenizer
from data_pipeline.squad.postprocess import postprocess, predictions_at_threshold
from tests.support.harness import SHARED_DATA
from tests.support.tiny import tiny_config


@pytest.fixture(scope="module")
def tokenizer():
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    path = SHARED_DATA / "spm" / "de-30k-clean.model"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/data)")
    return AlbertTokenizer(str(path))


def test_offsets_through_accents_case_quotes_and_digit_commas(tokenizer):
    text = "In 1990, CAFÉ Müller sold 2,000 ``cheap'' cups\u00a0— ﬁne ones."
    ids, starts, ends = OffsetTokenizer(tokenizer).encode(text)
    assert ids == tokenizer.encode(text)
    for answer in ("1990", "CAFÉ Müller", "2,000", "``cheap''", "ﬁne ones"):
        s = text.index(answer)
        a, b = token_span(starts, ends, (s, s + len(answer)))
        assert text[starts[a] : ends[b]] == answer
    # Every token covers characters in order, inside the text.
    assert all(0 <= s <= e <= len(text) for s, e in zip(starts, ends))
    assert starts == sorted(starts)


def test_doc_spans_and_labels(tokenizer):
    assert doc_spans(10, 4, 2) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    assert doc_spans(3, 4, 2) == [(0, 3)]
    context = " ".join(f"w{i}" for i in range(60)) + " the answer is here ."
    start = context.index("answer is")
    ex = SquadExample(
        "q1", "where is the answer?", context, [{"text": "answer is", "answer_start": start}]
    )
    stats = {}
    f = convert_squad_examples(
        [ex],
        tokenizer,
        max_seq_length=48,
        doc_stride=16,
        max_query_length=16,
        is_training=True,
        stats=stats,
    )
    n = len(f["qa_index"])
    assert n > 2 and stats["features"] == n and stats.get("questions_truncated", 0) == 0
    assert f["input_ids"].shape == (n, 48)
    with_answer = np.flatnonzero(f["start_positions"])
    assert len(with_answer) >= 1
    for row in with_answer:
        a, b = f["start_positions"][row], f["end_positions"][row]
        assert f["context_mask"][row, a] == 1 and a <= b
        assert context[f["token_start_char"][row, a] : f["token_end_char"][row, b]] == "answer is"
    assert (f["is_impossible"][with_answer] == 0).all()
    # Exactly one window gives each context token its maximum context.
    first_tokens = {}
    for row in range(n):
        for pos in np.flatnonzero(f["max_context"][row]):
            key = (int(f["token_start_char"][row, pos]), int(f["token_end_char"][row, pos]))
            assert key not in first_tokens
            first_tokens[key] = row
    assert len(first_tokens) == len(tokenizer.encode(context))


def test_misplaced_and_missing_answers_are_counted():
    stats = collections.Counter()
    context = "alpha beta gamma beta"
    assert locate_answer(context, {"text": "beta", "answer_start": 6}, stats) == (6, 10)
    assert locate_answer(context, {"text": "beta", "answer_start": 15}, stats) == (17, 21)
    assert stats["misplaced_offset"] == 1
    assert locate_answer(context, {"text": "delta", "answer_start": 0}, stats) is None
    assert stats["unalignable"] == 1


def test_bad_files_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=r"bad.json: not valid JSON \(line 1"):
        read_squad(str(bad))
    bad.write_text(json.dumps({"data": [{"paragraphs": [{"context": "x"}]}]}))
    with pytest.raises(ValueError, match=r"data\[0\].paragraphs\[0\] lacks 'context' or 'qas'"):
        read_squad(str(bad))
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="not a SQuAD file"):
        read_squad(str(bad))


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("context", 12345, r"data\[0\]\.paragraphs\[1\]\.context is a number, not a string$"),
        ("question", ["why"], r"paragraphs\[1\]\.qas\[0\] \(id 'b'\)\.question is a list, not"),
        (
            "answers",
            [{"text": 5, "answer_start": 0}],
            r"\(id 'b'\)\.answers\[0\] must be an object",
        ),
        ("answers", [{"text": "Paris", "answer_start": None}], r"\(id 'b'\)\.answers\[0\] must be"),
    ],
    ids=["context", "question", "answer-text", "answer-start"],
)
def test_a_field_of_the_wrong_type_names_file_paragraph_and_question(tmp_path, field, value, named):
    """R-J10: a context that is not a string was a TypeError traceback naming nothing."""
    path = _squad_with_ids(tmp_path / "typed.json", [["a"], ["b"]])
    data = json.loads(open(path).read())
    paragraph = data["data"][0]["paragraphs"][1]
    (paragraph if field == "context" else paragraph["qas"][0])[field] = value
    (tmp_path / "typed.json").write_text(json.dumps(data))
    with pytest.raises(ValueError) as excinfo:
        read_squad(path)
    message = str(excinfo.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert re.search(named, message), message
    paragraph = data["data"][0]["paragraphs"][1]  # a string start, as int() read it, still reads
    paragraph["qas"][0] = {
        "id": "b",
        "question": "?",
        "answers": [{"text": "P", "answer_start": "13"}],
    }
    paragraph["context"] = "Tom lives in Paris."
    (tmp_path / "typed.json").write_text(json.dumps(data))
    assert read_squad(path)[1].answers == [{"text": "P", "answer_start": 13}]


def _squad_with_ids(path, paragraphs):
    """A SQuAD file with one article of `paragraphs` (lists of question ids)."""
    context = "Tom lives in Paris."
    answer = {"text": "Paris", "answer_start": context.index("Paris")}
    article = {
        "title": "t",
        "paragraphs": [
            {
                "context": context,
                "qas": [{"id": i, "question": "?", "answers": [answer]} for i in p],
            }
            for p in paragraphs
        ],
    }
    path.write_text(json.dumps({"version": "1.1", "data": [article]}))
    return str(path)


def test_duplicate_question_ids_are_refused_at_read_time(tmp_path):
    """Answers are keyed by question id: a duplicated id would silently lose one."""
    from data_pipeline.squad.examples import read_squad_files

    one = _squad_with_ids(tmp_path / "one.json", [["a", "b"], ["c", "b"]])
    with pytest.raises(ValueError) as e:
        read_squad(one)
    assert str(e.value) == (
        f"{one}: 1 question id(s) appear more than once: 'b' (2 times); answers are keyed "
        "by id, give each question its own"
    )
    with pytest.raises(ValueError, match=r"^\S+one.json: 1 question id"):
        read_squad_files([(one, False)], version_2_with_negative=True)
    many = _squad_with_ids(tmp_path / "many.json", [list("abcdefg") * 2, ["a"]])
    with pytest.raises(ValueError) as e:
        read_squad(many)
    assert str(e.value).startswith(
        f"{many}: 7 question id(s) appear more than once: 'a' (3 times), 'b' (2 times), "
        "'c' (2 times), 'd' (2 times), 'e' (2 times) and 2 more; "
    )
    assert "\n" not in str(e.value)
    assert [
        e.qas_id for e in read_squad(_squad_with_ids(tmp_path / "ok.json", [["a"], ["b"]]))
    ] == [
        "a",
        "b",
    ]


def _round_trip(tokenizer, path):
    offsets = OffsetTokenizer(tokenizer)
    contexts, total, exact, failures, id_mismatch = {}, 0, 0, [], 0
    stats = collections.Counter()
    for ex in read_squad(path):
        if ex.context not in contexts:
            contexts[ex.context] = offsets.encode(ex.context)
            id_mismatch += contexts[ex.context][0] != tokenizer.encode(ex.context)
        _, starts, ends = contexts[ex.context]
        for answer in ex.answers:
            span = locate_answer(ex.context, answer, stats)
            if span is None:
                continue
            total += 1
            tokens = span and token_span(starts, ends, span)
            back = ex.context[starts[tokens[0]] : ends[tokens[1]]] if tokens else None
            exact += back == answer["text"]
            if back != answer["text"]:
                failures.append((answer["text"], back))
    return total, exact, failures, id_mismatch, stats["unalignable"]


ZH_ROUND_TRIP = 0.98  # measured 98.6%: Chinese pieces are often words ("1935年初")


@pytest.mark.slow
@pytest.mark.parametrize("name,answers", [("dev-v1.1.json", 34726), ("dev-v2.0.json", 20302)])
def test_every_gold_answer_round_trips(tokenizer, shared_data, name, answers):
    """Gold answer → tokens → original characters reproduces the answer text for ≥ 99.5%
    of all answers of the dev sets (measured: 99.78% and 99.77%). The rest end inside a
    piece: "6.1" of "6.1%", or gold answers that are word fragments ("onomist"). The ids
    equal AlbertTokenizer.encode on every context."""
    total, exact, failures, id_mismatch, unalignable = _round_trip(
        tokenizer, str(shared_data / "squad" / name)
    )
    assert total == answers and id_mismatch == 0 and unalignable == 0
    assert exact / total >= 0.995, failures[:20]
    # A failure is always a wider span that contains the answer: never another place.
    assert all(answer in back for answer, back in failures if back)


@pytest.mark.slow
def test_chinese_cmrc_round_trips(shared_data, tmp_path):
    """Chinese has no spaces: a paragraph is one "word" for SentencePiece; offsets still
    hold. The vocabulary is trained (ALBERT's recipe) on the shared Chinese news."""
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer
    from data_pipeline.tokenization.sentencepiece_trainer import train_sentencepiece

    model = train_sentencepiece(
        [str(shared_data / "corpus" / "zh_news" / "thucnews_1000.txt")],
        str(tmp_path / "zh"),
        vocab_size=8000,
    )["model_file"]
    total, exact, failures, id_mismatch, unalignable = _round_trip(
        AlbertTokenizer(model), str(shared_data / "chinese" / "expmrc-cmrc2018-dev.json")
    )
    # 11 ExpMRC answers are not in their context at all (answer_start -1): counted apart.
    assert unalignable == 11 and total == 1534 and id_mismatch == 0
    assert exact / total >= ZH_ROUND_TRIP, failures[:20]
    assert all(answer.strip() in back for answer, back in failures if back)


def _oracle_logits(features):
    """Logits that put the answer's start and end (or [CLS]) first in every window."""
    n, seq = features["input_ids"].shape
    start = np.full((n, seq), -5.0, np.float32)
    end = np.full((n, seq), -5.0, np.float32)
    rows = np.arange(n)
    start[rows, features["start_positions"]] = 5.0
    end[rows, features["end_positions"]] = 5.0
    # A window without the answer: [CLS] first, and nothing better among its context.
    return start, end


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dev-v1.1.json", "dev-v2.0.json"])
def test_oracle_logits_score_almost_100(tokenizer, shared_data, name):
    """Features (384/128/64) → logits at the gold positions → postprocess → official
    scoring: everything between the JSON and the scores is exact up to the round-trip
    misses; v2.0 predicts "" for unanswerable questions through the null score."""
    path = str(shared_data / "squad" / name)
    examples = read_squad(path)[:3000]
    stats = {}
    features = convert_squad_examples(
        examples, tokenizer, 384, 128, 64, is_training=True, stats=stats
    )
    start, end = _oracle_logits(features)
    v2 = "v2" in name
    # Answers longer than max_answer_length (30 pieces of this German vocabulary) are out
    # of reach by design; allow every length to test the mapping itself.
    preds, nbest, null_odds = postprocess(
        examples, features, start, end, version_2=v2, max_answer_length=1000
    )
    with open(path) as f:
        data = json.load(f)
    ids = {e.qas_id for e in examples}
    data["data"] = [
        {
            "paragraphs": [
                {"context": p["context"], "qas": [q for q in p["qas"] if q["id"] in ids]}
                for p in a["paragraphs"]
            ]
        }
        for a in data["data"]
    ]
    scores = squad_eval.evaluate(data, preds, version="2.0" if v2 else "1.1")
    key = "exact" if v2 else "exact_match"
    assert scores[key] >= 99.0 and scores["f1"] >= 99.5, (scores, stats)
    if v2:
        assert scores["NoAns_exact"] == 100.0
        unanswerable = [e.qas_id for e in examples if e.is_impossible]
        assert all(null_odds[q] > 0 for q in unanswerable)
        assert predictions_at_threshold(nbest, null_odds, 0.0) == preds
    for _qid, candidates in list(nbest.items())[:50]:
        assert abs(sum(c["probability"] for c in candidates) - 1) < 1e-5


# --- batches grouped by length ------------------------------------------------------------


def _tiny_qa(vocab_size, max_position_embeddings=384):
    import keras

    from albert_tf.modeling.models import AlbertQuestionAnswering

    keras.utils.set_random_seed(5)
    config = tiny_config(
        vocab_size=vocab_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_position_embeddings,
    )
    model = AlbertQuestionAnswering(config)
    model.build()
    return model


def test_length_aware_prediction_gives_the_padded_logits_and_answers(tok, shared_data, tmp_path):
    """60 questions of SQuAD v1.1 dev (every 8th of the first 480: paragraphs of many
    lengths; 86 windows of 384/128/64, 94 to 384 tokens) through a tiny model,
    as run_squad predicts: batches grouped by length and padded to their bucket give the
    padded path's start/end logits on every token (within float tolerance), in feature
    order, and the same answers; they use only bucket lengths, compute far fewer tokens,
    and trace a bounded number of forward functions. Training batches are full and
    length-grouped too, their labels inside the window."""
    from albert_tf.training.prediction import _forward, predict_logits
    from data_pipeline.length_buckets import LENGTH_BUCKETS, bucket_sizes
    from data_pipeline.squad.feature_records import squad_features
    from data_pipeline.squad.features import PER_TOKEN_FILL, PREDICTION_KEYS

    source = str(shared_data / "squad" / "dev-v1.1.json")
    examples = read_squad(source)[:480:8]
    features = squad_features(source, tok, str(tmp_path), 384, 128, 64, False, examples)
    model = _tiny_qa(tok.vocab_size)

    def run(buckets):
        ds = features.prediction_dataset(16, length_buckets=buckets)
        out = predict_logits(
            model,
            ds,
            ("start_logits", "end_logits"),
            carry=PREDICTION_KEYS,
            order_by="feature_index",
            per_token=PER_TOKEN_FILL,
            length=384,
        )
        answers = postprocess(examples, out, out["start_logits"], out["end_logits"])
        return ds, out, answers

    padded_ds, padded, padded_answers = run(None)
    bucketed_ds, bucketed, bucketed_answers = run(LENGTH_BUCKETS)
    mask = np.concatenate([b["input_mask"].numpy() for b in padded_ds]).astype(bool)
    assert bucketed["start_logits"].shape == (features.count, 384)
    for side in ("start_logits", "end_logits"):
        np.testing.assert_allclose(bucketed[side][mask], padded[side][mask], atol=1e-5)
        assert (bucketed[side][~mask] <= -1e4 + 10).all()  # padding, as the model gives it
    for key in PREDICTION_KEYS:
        np.testing.assert_array_equal(bucketed[key], padded[key])
    assert bucketed_answers[0] == padded_answers[0] and len(padded_answers[0]) == 60
    assert [[c["text"] for c in v] for v in bucketed_answers[1].values()] == [
        [c["text"] for c in v] for v in padded_answers[1].values()
    ]
    shapes = [tuple(b["input_ids"].shape) for b in bucketed_ds]
    assert sum(s[0] for s in shapes) == features.count
    assert {s[1] for s in shapes} <= set(bucket_sizes(384)) and len({s[1] for s in shapes}) >= 2
    # Every window is computed at its own bucket: 0.80 of the padded tokens here.
    lengths = mask.sum(axis=1)
    own = sum(min(b for b in bucket_sizes(384) if b >= n) for n in lengths)
    assert sum(s[0] * s[1] for s in shapes) == own < 0.85 * features.count * 384
    # every bucket, one trace (the host's packed forward)
    assert _forward(model, packed=True).experimental_get_tracing_count() == 1
    first = next(iter(bucketed_ds))["feature_index"].numpy()
    assert not np.array_equal(first, np.arange(len(first)))  # the reordering matters
    train = squad_features(source, tok, str(tmp_path), 384, 128, 64, True, examples)
    for batch in train.dataset(8, is_training=True, seed=1, length_buckets=LENGTH_BUCKETS).take(6):
        length = batch["input_ids"].shape[1]
        assert batch["input_ids"].shape[0] == 8 and length in bucket_sizes(384)
        assert batch["segment_ids"].shape == batch["input_mask"].shape == (8, length)
        assert (batch["end_positions"].numpy() < batch["input_mask"].numpy().sum(1)).all()


def test_serving_answers_on_bucketed_windows_as_on_padded_ones(tok, shared_data, tmp_path):
    """SquadServing runs the model on the windows cut to the request's bucket and pads the
    logits back: the answers, offsets, scores and v2.0 null odds equal those of the
    windows padded to max_seq_length, for short paragraphs (one window, a short bucket)
    and a batch whose long context needs several windows; so does the SavedModel."""
    import tensorflow as tf

    from albert_tf.serving.tasks.squad.modules import SquadServing
    from data_pipeline.length_buckets import bucket_sizes

    examples = read_squad(str(shared_data / "squad" / "dev-v1.1.json"))[:40:4]
    spm = str(shared_data / "spm" / "de-30k-clean.model")
    model = _tiny_qa(tok.vocab_size, 128)
    lengths = []

    class Spy:  # the model, noting the length it is called with
        def __call__(self, inputs, training=False):
            lengths.append(int(inputs["input_ids"].shape[1]))
            return model(inputs, training=training)

    from albert_tf.checkpoints.task_kinds.squad import SquadFields
    from albert_tf.serving.text_tokenizer import TextTokenizer
    from data_pipeline.tokenization.spec import TokenizerSpec

    info = SquadFields(version_2_with_negative=True, doc_stride=48, max_query_length=24)
    text = TextTokenizer(TokenizerSpec.from_files(spm))
    modules = {
        aware: SquadServing(Spy(), text, 128, info, length_aware=aware) for aware in (False, True)
    }
    questions = [e.question for e in examples]
    short = ["Ada Lovelace wrote the first program.", "Paris is the capital of France."]
    requests = [  # short paragraphs only; SQuAD paragraphs (several windows of 128)
        (tf.constant(["who wrote it?", "what is Paris?"]), tf.constant(short)),
        (tf.constant(questions), tf.constant([e.context for e in examples])),
    ]
    for question, context in requests:
        lengths.clear()
        padded = modules[False].answer(question, context)
        bucketed = modules[True].answer(question, context)
        assert lengths[0] == 128 and lengths[1] in bucket_sizes(128)
        for key in ("answer", "start", "end"):
            np.testing.assert_array_equal(bucketed[key].numpy(), padded[key].numpy())
        for key in ("score", "null_odds", "no_answer_probability"):
            np.testing.assert_allclose(bucketed[key].numpy(), padded[key].numpy(), atol=1e-5)
    assert lengths[1] == 128 and bucketed["answer"].shape == (10,)
    lengths.clear()
    modules[True].answer(*requests[0])
    assert lengths[0] < 64  # two sentences: a short bucket
    path = str(tmp_path / "served")
    module = SquadServing(model, text, 128, info)
    tf.saved_model.save(module, path, signatures=module.signatures())
    served = tf.saved_model.load(path).signatures["serving_default"]
    for question, context in requests:
        got = served(question=question, context=context)
        want = modules[False].answer(question, context)
        np.testing.assert_array_equal(got["answer"].numpy(), want["answer"].numpy())
        np.testing.assert_allclose(got["null_odds"].numpy(), want["null_odds"].numpy(), atol=1e-5)
