"""Token classification served from raw text: the SavedModel (loaded as a client loads it;
tests/support/serving_client.py) and the LiteRT file with its runner give the tags of
the Python path (data_pipeline.tagging features → model → predictions) on real CoNLL-2003
and resume_zh dev sentences, windowed ones included, and entities whose character spans
are the right text; the in-graph word split and entity reading equal their Python
references."""

import random

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, tiny_config
from tests.support.serving_client import served
from tests.support.tf_serving_ops import SENTENCEPIECE_OPS, assert_stock_server_links

MAX_SEQ_LENGTH, DOC_STRIDE = 24, 7  # many dev sentences need several windows


def _dev(name, count):
    from data_pipeline.tagging.data import discover_labels, read_conll

    folder = SHARED_DATA / "ner" / name
    if not (folder / "dev.txt").exists():
        pytest.skip(f"real data not available: {folder} is absent")
    labels = discover_labels(read_conll(str(folder / "train.txt")))
    return read_conll(str(folder / "dev.txt"))[:count], labels


def _finetuned(directory, labels, spec, vocab_size, scheme=None):
    """A tiny token classifier whose head is large enough that its tags vary by word."""
    import keras

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo

    info = TaskInfo.build(
        "token_classifier",
        labels=labels,
        max_seq_length=MAX_SEQ_LENGTH,
        doc_stride=DOC_STRIDE,
        do_lower_case=True,
        scheme=scheme,
    )
    keras.utils.set_random_seed(0)
    model = info.model(tiny_config(vocab_size=vocab_size, max_position_embeddings=64))
    model.build()
    rng = np.random.default_rng(0)
    for w in model.weights:  # (a random encoder of larger weights tags every word alike)
        if "classifier_head" in w.path:
            scale = 0.0 if "bias" in w.path else 4.0
            w.assign(rng.normal(0.0, scale, w.shape).astype(np.float32))
    return model, save_finetuned(model, str(directory), info, spec)


def _python_tags(model, sentences, tokenizer, labels):
    from data_pipeline.tagging.features import convert_sentences
    from data_pipeline.tagging.predictions import word_predictions

    f = convert_sentences(sentences, tokenizer, MAX_SEQ_LENGTH, DOC_STRIDE, None)
    inputs = {k: f[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    logits = model(inputs, training=False)["logits"].numpy()
    lengths = [len(s.tokens) for s in sentences]
    windowed = int((np.bincount(f["sentence_index"]) > 1).sum())
    ids = word_predictions(f["word_index"], f["sentence_index"], logits.argmax(-1), lengths)
    return [[labels[i] for i in row] for row in ids], windowed


def _rows(out, i):
    """Row i of the signature's padded outputs as Python values."""
    text = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    n, e = int(out["num_words"][i]), int(out["num_entities"][i])
    entities = [
        (
            text(out["entity_type"][i][k]),
            text(out["entity_text"][i][k]),
            int(out["entity_start"][i][k]),
            int(out["entity_end"][i][k]),
            float(out["entity_score"][i][k]),
        )
        for k in range(e)
    ]
    words = [text(w) for w in out["words"][i][:n]]
    tags = [text(t) for t in out["tags"][i][:n]]
    return words, tags, [float(s) for s in out["tag_scores"][i][:n]], entities


def _check_entities(text, words, tags, scores, entities, scheme=None):
    """The entities are metrics.entities of the tags, at the words' characters, with the
    mean of their words' scores."""
    from data_pipeline.tagging.metrics import entities as reference
    from data_pipeline.tagging.text_words import split_words

    spans = split_words(text)
    assert [w for w, _, _ in spans] == words
    want = [
        (kind, text[spans[a][1] : spans[b - 1][2]], spans[a][1], spans[b - 1][2])
        for kind, a, b in reference([tags], scheme)
    ]
    assert [e[:4] for e in entities] == want
    for (_, span, start, end, score), (_, a, b) in zip(entities, reference([tags], scheme)):
        assert span == text[start:end]
        assert score == pytest.approx(np.mean(scores[a:b]), abs=1e-5)


@pytest.fixture(scope="module")
def conll(tmp_path_factory, tok):
    from albert_tf.serving.export import export_formats
    from data_pipeline.tokenization.spec import TokenizerSpec

    sentences, labels = _dev("conll2003", 16)
    root = tmp_path_factory.mktemp("ner-conll")
    spec = TokenizerSpec.from_files(str(SHARED_DATA / "spm" / "de-30k-clean.model"))
    model, directory = _finetuned(root / "finetuned", labels, spec, 30000)
    paths = export_formats(
        "token_classifier",
        directory,
        str(root / "serving"),
        ("savedmodel", "tflite"),
        ("float32",),
    )
    texts = [" ".join(s.tokens) for s in sentences]
    want, windowed = _python_tags(model, sentences, tok, labels)
    assert windowed >= 4  # the windows are exercised
    return dict(root=root, paths=paths, texts=texts, sentences=sentences, want=want)


def test_savedmodel_tags_conll_dev_as_the_python_path_in_a_fresh_process(conll, tmp_path):
    assert SENTENCEPIECE_OPS <= assert_stock_server_links(conll["paths"][0])  # (TF Serving's)
    texts = conll["texts"]
    out = served(conll["paths"][0], {"text": texts})
    assert out["words"].shape == out["tags"].shape == out["word_start"].shape
    tagged = 0
    for i, (text, sentence, want) in enumerate(zip(texts, conll["sentences"], conll["want"])):
        words, tags, scores, entities = _rows(out, i)
        assert words == list(sentence.tokens) and tags == want, i
        starts, ends = out["word_start"][i][: len(words)], out["word_end"][i][: len(words)]
        assert [text[a:b] for a, b in zip(starts, ends)] == words
        _check_entities(text, words, tags, scores, entities)
        tagged += len(entities)
    assert tagged >= 20 and len(set(t for row in conll["want"] for t in row)) >= 4
    # padding beyond a row's words and entities
    n = int(out["num_words"][0])
    if n < out["words"].shape[1]:
        assert out["words"][0][n] == b"" and out["word_start"][0][n] == -1


def test_litert_runner_answers_the_savedmodel_tags(conll):
    """The runner's tags are the Python path's, which the SavedModel's equal (above), and
    its entities are the same reading of them at the same characters."""
    from albert_tf.serving.tflite_predict import LiteModel, answer_lines

    lite = LiteModel(conll["paths"][1])
    assert lite.task == "token_classifier" and lite.metadata["doc_stride"] == DOC_STRIDE
    assert lite.metadata["max_windows"] == 4096  # (request_windows.DEFAULT_MAX_WINDOWS)
    got = lite.tag(conll["texts"], batch_size=5)
    found = 0
    for text, sentence, want, row in zip(conll["texts"], conll["sentences"], conll["want"], got):
        assert row["words"] == list(sentence.tokens) and row["tags"] == want
        entities = [tuple(e.values()) for e in row["entities"]]
        _check_entities(text, row["words"], row["tags"], row["tag_scores"], entities)
        found += len(entities)
    assert found >= 20
    # the command line's path: one JSON answer per input line, blank lines kept
    lines = [conll["texts"][0], "  ", conll["texts"][1]]
    answers = list(answer_lines(lite, lines, 2, "stdin"))
    assert [a["line"] for a in answers] == [1, 2, 3] and answers[1] == {"line": 2}
    assert answers[0]["tags"] == conll["want"][0] and answers[2]["tags"] == conll["want"][1]


def test_the_file_loops_its_shared_layer_and_resizes_both_ways(conll):
    """The NER file traces the shared layer as one while loop (albert_tf.modeling.
    layer_loop: XNNPack packs its weights once); one interpreter resized at each batch and
    length, up, down and back, gives the logits of a fresh interpreter at that shape bit
    for bit (the loop body is resized with the file's inputs)."""
    from ai_edge_litert.interpreter import Interpreter

    from tests.support.harness import litert_ops

    path = conll["paths"][1]
    with open(path, "rb") as f:
        assert sum(ops["WHILE"] for ops in litert_ops(f.read()).values()) == 1
    reused = Interpreter(model_path=path, num_threads=1).get_signature_runner()
    rng = np.random.default_rng(3)
    for rows, length in [(1, 5), (3, 17), (3, 17), (1, 2), (4, MAX_SEQ_LENGTH), (2, 9)]:
        ids = rng.integers(5, 30000, [rows, length]).astype(np.int32)
        mask = (np.arange(length) < rng.integers(1, length + 1, [rows, 1])).astype(np.int32)
        inputs = dict(input_ids=ids * mask, input_mask=mask, segment_ids=0 * ids)
        fresh = Interpreter(model_path=path, num_threads=1).get_signature_runner()
        got, want = reused(**inputs)["logits"], fresh(**inputs)["logits"]
        assert got.shape == (rows, length, 9) and np.array_equal(got, want), (rows, length)


LIMIT = 2  # windows: conll texts 1 and 15 need one each, text 0 needs three


@pytest.fixture(scope="module")
def limited(conll, tmp_path_factory):
    """The conll model exported by the command line with --max_windows 2: the SavedModel
    (loaded) and the LiteRT runner, and the limits' errors (request_windows)."""
    import tensorflow as tf

    from albert_tf.serving.export import main
    from albert_tf.serving.tflite_predict import LiteModel

    root = tmp_path_factory.mktemp("ner-limited")
    argv = [
        "export",
        "--task=token_classifier",
        f"--init_checkpoint={conll['root'] / 'finetuned'}",
        f"--export_dir={root}",
        f"--max_windows={LIMIT}",
        "--export_format=savedmodel",
        "--export_format=tflite",
        "--export_quantize=float32",
    ]
    assert main(argv) == 0
    noun, S = "this token classifier reads at most", MAX_SEQ_LENGTH
    return dict(
        root=root,
        serve=tf.saved_model.load(str(root / "1")).signatures["serving_default"],
        lite=LiteModel(str(root / "litert" / "token_classifier-float32.tflite")),
        windows=lambda n, rows: (
            f"the request needs {n} windows of {S} tokens for its {rows} texts; {noun} "
            f"max_windows={LIMIT} windows per request; send fewer or shorter texts"
        ),
        bytes=lambda n: (
            f"the request holds {n} bytes of text; {noun} {LIMIT * S * 8:,} per request (8 per "
            f"position of its max_windows={LIMIT} windows of {S} tokens); send fewer or "
            "shorter texts"
        ),
    )


def test_export_max_windows_bounds_the_savedmodel_request(conll, limited):
    """Within --max_windows and the bytes it allows: the tags of the Python path; beyond
    either: one error naming the limit and the request's size, windows summed over rows;
    the limit is recorded in the export's task.json."""
    import json

    import tensorflow as tf

    texts, want, serve = conll["texts"], conll["want"], limited["serve"]
    out = {k: v.numpy() for k, v in serve(text=tf.constant([texts[1], texts[15]])).items()}
    for i, n in enumerate((1, 15)):
        words, tags, scores, entities = _rows(out, i)
        assert tags == want[n]
        _check_entities(texts[n], words, tags, scores, entities)
    at_limit = "a" + " " * (LIMIT * MAX_SEQ_LENGTH * 8 - 2) + "b"  # 2 words, 1 window
    assert list(serve(text=tf.constant([at_limit]))["num_words"].numpy()) == [2]
    refused = [
        ([texts[0]], limited["windows"](3, 1)),
        ([texts[1], texts[15], texts[1]], limited["windows"](3, 3)),
        ([at_limit + " "], limited["bytes"](LIMIT * MAX_SEQ_LENGTH * 8 + 1)),
        (texts[2:4], limited["bytes"](sum(len(t.encode()) for t in texts[2:4]))),  # (21 windows)
    ]
    for request, message in refused:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            serve(text=tf.constant(request))
        assert message in e.value.message, e.value.message
        assert sum("max_windows" in line for line in e.value.message.splitlines()) == 1
    kept = limited["root"] / "1" / "assets.extra" / "finetuned" / "task.json"
    assert json.loads(kept.read_text())["max_windows"] == LIMIT


def test_export_max_windows_bounds_the_litert_runner(conll, limited, monkeypatch):
    """The runner refuses what the SavedModel refuses, with its messages, before any
    feature is built (the command line's: naming the input lines); within the limit it
    answers the Python path's tags; a file of before the limit reads 4096."""
    import data_pipeline.tagging.features as features
    from albert_tf.serving.tasks.token_classifier.lite_runner import tag_texts
    from albert_tf.serving.tflite_predict import answer_lines

    texts, want, lite = conll["texts"], conll["want"], limited["lite"]
    assert lite.metadata["max_windows"] == LIMIT
    assert [r["tags"] for r in lite.tag([texts[1], texts[15]])] == [want[1], want[15]]
    old = {k: v for k, v in lite.metadata.items() if k != "max_windows"}
    (row,) = tag_texts(lite.run, old, lite.sentencepiece(), [texts[0]])
    assert row["tags"] == want[0]
    build = features.convert_sentences
    monkeypatch.setattr(features, "convert_sentences", lambda *a, **k: pytest.fail("built"))
    at_limit = "a" + " " * (LIMIT * MAX_SEQ_LENGTH * 8 - 2) + "b"
    for request, message in (
        ([texts[0]], limited["windows"](3, 1)),
        ([texts[1], texts[15], texts[1]], limited["windows"](3, 3)),
        ([at_limit + " "], limited["bytes"](f"{LIMIT * MAX_SEQ_LENGTH * 8 + 1:,}")),
        (texts[2:4], limited["bytes"](sum(len(t.encode()) for t in texts[2:4]))),
    ):
        with pytest.raises(ValueError) as e:
            lite.tag(request)
        assert str(e.value) == message
    with pytest.raises(ValueError) as e:
        list(answer_lines(lite, [texts[1], "", texts[0]], 4, "in.txt"))
    assert str(e.value) == f"in.txt:1-3: {limited['windows'](4, 2)}"
    monkeypatch.setattr(features, "convert_sentences", build)
    assert lite.tag([at_limit])[0]["words"] == ["a", "b"]


def test_a_task_json_of_before_max_windows_still_loads_and_exports(conll, tmp_path):
    import json
    import shutil

    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.serving.export import build_module

    directory = tmp_path / "old"
    shutil.copytree(conll["root"] / "finetuned", directory)
    task = json.loads((directory / "task.json").read_text())
    assert task.pop("max_windows") is None
    (directory / "task.json").write_text(json.dumps(task))
    assert TaskInfo.read(str(directory)).details.max_windows is None
    assert build_module("token_classifier", str(directory)).max_windows == 4096
    limited = build_module("token_classifier", str(directory), max_windows=3)
    assert limited.max_windows == 3
    with pytest.raises(ValueError, match="task.json: 'max_windows' must be ≥ 1, not 0"):
        TaskInfo.build("token_classifier", labels=["O"], max_windows=0)


@pytest.mark.slow
def test_savedmodel_tags_resume_zh_dev_character_by_character(tmp_path, wordpiece_vocab):
    import tensorflow as tf

    from albert_tf.serving.export import export, export_tflite
    from data_pipeline.tokenization.spec import TokenizerSpec

    sentences, labels = _dev("resume_zh", 12)
    spec = TokenizerSpec.from_files(vocab_file=wordpiece_vocab)
    model, directory = _finetuned(tmp_path / "finetuned", labels, spec, 21128, scheme="BMES")
    want, windowed = _python_tags(model, sentences, spec.build(), labels)
    assert windowed >= 4
    texts = ["".join(s.tokens) for s in sentences]  # a Chinese text: no spaces at all
    fn = tf.saved_model.load(export("token_classifier", directory, str(tmp_path / "sm")))
    out = {
        k: v.numpy() for k, v in fn.signatures["serving_default"](text=tf.constant(texts)).items()
    }
    found = 0
    for i, (text, sentence) in enumerate(zip(texts, sentences)):
        words, tags, scores, entities = _rows(out, i)
        assert words == list(sentence.tokens) and tags == want[i], i
        _check_entities(text, words, tags, scores, entities, scheme="BMES")
        found += len(entities)
    assert found >= 5
    # An empty request is answered with no rows; the on-device file is refused for vocab.txt.
    empty = fn.signatures["serving_default"](text=tf.constant([], tf.string))
    assert empty["tags"].shape[0] == 0 and empty["num_entities"].shape == (0,)
    with pytest.raises(ValueError, match="WordPiece model.*on-device token classifier"):
        export_tflite("token_classifier", directory, str(tmp_path / "lite"))


def test_a_scheme_the_labels_do_not_fit_is_refused_naming_the_label():
    from albert_tf.serving.tasks.token_classifier.entity_spans import label_codes

    with pytest.raises(ValueError, match="label 'M-PER' is not a IOB2 tag"):
        label_codes(["O", "B-PER", "M-PER"], "IOB2")


def test_graph_word_split_is_the_python_rule():
    import tensorflow as tf

    from albert_tf.serving.tasks.token_classifier.word_split import split_words
    from data_pipeline.tagging.text_words import split_words as reference

    texts = [
        "EU rejects German call",
        "吴重阳，2009年毕业于MIT大学 ok",
        "",
        "  a\x00b  ü\tnaïve   中 x",
        "单",
        "tab\tand\u3000ideographic\u00a0space",
        "😀 emoji,𠀀x",
    ]
    w = split_words(tf.constant(texts))
    for i, text in enumerate(texts):
        words = [x.decode() for x in w.text[i].numpy()]
        got = list(zip(words, w.char_start[i].numpy().tolist(), w.char_end[i].numpy().tolist()))
        assert got == reference(text), text
        raw = text.encode()
        spans = zip(w.byte_start[i].numpy(), w.byte_end[i].numpy())
        assert [raw[a:b].decode() for a, b in spans] == words


SCHEME_LABELS = {
    None: ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "M-LOC", "E-LOC", "I-", "B-A-B"],
    "IOB2": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "IOE2": ["O", "I-PER", "E-PER", "I-LOC", "E-LOC"],
    "IOBES": ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"],
    "BMES": ["O", "B-PER", "M-PER", "E-PER", "S-PER", "B-LOC", "M-LOC", "E-LOC", "S-LOC"],
    "BILOU": ["O", "B-PER", "I-PER", "L-PER", "U-PER", "B-LOC", "U-LOC", "L-LOC", "I-LOC"],
}


@pytest.mark.parametrize("scheme", list(SCHEME_LABELS), ids=lambda s: str(s))
def test_graph_entities_are_metrics_entities_on_random_tags(scheme):
    import tensorflow as tf

    from albert_tf.serving.tasks.token_classifier.entity_spans import entity_spans, label_codes
    from data_pipeline.tagging.metrics import entities

    labels, rng = SCHEME_LABELS[scheme], random.Random(0)
    codes = label_codes(labels, scheme)
    for _ in range(25):
        lengths = [rng.randint(0, 9) for _ in range(rng.randint(1, 6))]
        ids = [[rng.randrange(len(labels)) for _ in range(n)] for n in lengths]
        rows = [b for b, r in enumerate(ids) for _ in r]
        first, last, kind = entity_spans(
            tf.constant([i for r in ids for i in r], tf.int32),
            tf.constant(rows, tf.int32),
            tf.constant(lengths, tf.int32),
            codes,
            scheme,
        )
        got = list(zip([codes.names[k] for k in kind.numpy()], first.numpy(), last.numpy()))
        # the reference lays sentences end to end with one slot between them
        want, offset, words = [], 0, 0
        starts = {}
        for n in lengths:
            starts[offset] = words
            offset, words = offset + n + 1, words + n
        for kind_name, a, b in entities([[labels[i] for i in r] for r in ids], scheme):
            base = max(s for s in starts if s <= a)
            want.append((kind_name, starts[base] + a - base, starts[base] + b - 1 - base))
        assert got == want, [[labels[i] for i in r] for r in ids]
