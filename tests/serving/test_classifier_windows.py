"""The long-document classifier's SavedModel (albert_tf.serving.tasks.classifier.modules): raw
movie reviews in, the windows of run_classifier's --doc_stride cut in the graph, outputs
per document equal to the Python path (features → model → aggregate), loaded as a client loads it;
a request beyond its window limit is one clear error."""

import json

import numpy as np
import pytest

from tests.serving.test_export import _finetuned, spm  # noqa: F401 (fixture)
from tests.support.serving_client import served

S, STRIDE = 48, 20


def _texts(shared_data):
    path = shared_data / "long_documents" / "movie_reviews" / "dev.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    texts = [r["text"] for r in rows[:3]] + [r["text"] for r in rows[-3:]]
    return texts + ["a short one .", ""]  # one window each (an empty text too)


def _python_path(model, spm_path, texts, windows):
    from data_pipeline.classification.examples import Example
    from data_pipeline.classification.long_documents import aggregate_logits, convert_windowed
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    examples = [Example(str(i), t, None, None) for i, t in enumerate(texts)]
    stats = {}
    f = convert_windowed(
        examples, AlbertTokenizer(spm_path), S, ["negative", "positive"], windows, stats
    )
    inputs = {k: f[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    logits = model(inputs, training=False)["logits"].numpy()
    return aggregate_logits(logits, stats["document_windows"], windows.aggregate), stats


@pytest.mark.slow  # an export
def test_windowed_savedmodel_equals_the_python_path_on_movie_reviews(tmp_path, spm, shared_data):  # noqa: F811
    import tensorflow as tf

    from albert_tf.serving.export import build_module, export
    from data_pipeline.classification.long_documents import DocumentWindows

    model, directory = _finetuned(tmp_path, spm, max_seq_length=S, doc_stride=STRIDE)
    texts = _texts(shared_data)
    expected, stats = _python_path(model, spm, texts, DocumentWindows(STRIDE))
    assert max(stats["document_windows"]) > 20 and stats["document_windows"][-1] == 1
    version = export("classifier", directory, str(tmp_path / "serving"))
    out = served(version, {"text_a": texts})
    probs = np.exp(expected) / np.exp(expected).sum(-1, keepdims=True)
    np.testing.assert_allclose(out["logits"], expected, atol=1e-5)
    np.testing.assert_allclose(out["probabilities"], probs, atol=1e-5)
    labels = [x.decode() for x in out["label"]]
    assert labels == [["negative", "positive"][i] for i in expected.argmax(-1)]
    # max_prob, the first 4 windows of a document, in the same module (no export needed).
    windows = DocumentWindows(STRIDE, 4, "max_prob")
    module = build_module("classifier", directory)
    module.windows = windows
    got = module.classify_windows(tf.constant(texts)).numpy()
    want, capped = _python_path(model, spm, texts, windows)
    assert capped["truncated"] == 6
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_window_counts_equal_the_runners_spans():
    import tensorflow as tf

    from albert_tf.serving.request_windows import window_counts
    from data_pipeline.classification.long_documents import document_spans

    pieces = np.arange(0, 300, 7)
    for room, stride, cap in ((46, 20, 0), (46, 46, 0), (30, 64, 0), (62, 32, 3)):
        got = window_counts(tf.constant(pieces, tf.int32), room, stride, cap).numpy()
        want = [len(document_spans(int(p), room + 2, stride, cap)) for p in pieces]
        assert list(got) == want, (room, stride, cap)


def test_a_request_beyond_its_window_limit_is_one_error(tmp_path, spm, shared_data):  # noqa: F811
    import tensorflow as tf

    from albert_tf.serving.export import build_module

    _, directory = _finetuned(tmp_path, spm, max_seq_length=S, doc_stride=STRIDE, max_windows=12)
    module = build_module("classifier", directory)
    texts = _texts(shared_data)
    out = module.classify(tf.constant(texts[-2:]), tf.constant(["", ""]))  # 2 windows
    assert out["probabilities"].shape == (2, 2)
    assert module.classify(tf.constant([], tf.string), tf.constant([], tf.string))[
        "logits"
    ].shape == (0, 2)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"needs \d+ windows .* for its 1 texts; this classifier reads at most max_windows=12",
    ):
        module.classify(tf.constant(texts[:1]), tf.constant([""]))
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="bytes of text; this classifier reads at most 4,608"
    ):
        module.classify(tf.constant(["x" * 5000]), tf.constant([""]))


@pytest.mark.slow  # a LiteRT conversion
def test_litert_runner_windows_as_the_python_path(tmp_path, spm, shared_data):  # noqa: F811
    """The on-device file takes the windows' ids; tflite_predict cuts the windows (the
    runner's Python code) and combines them: equal to the Python path, limits one line."""
    from albert_tf.serving.export import export_tflite
    from albert_tf.serving.tflite_predict import LiteModel, answer_lines
    from data_pipeline.classification.long_documents import DocumentWindows

    windows = DocumentWindows(STRIDE, 0, "max_prob")
    model, directory = _finetuned(
        tmp_path, spm, max_seq_length=S, doc_stride=STRIDE, aggregate="max_prob", max_windows=200
    )
    (path,) = export_tflite("classifier", directory, str(tmp_path / "lite"))
    lite = LiteModel(path, num_threads=1)
    assert lite.metadata["doc_stride"] == STRIDE and lite.metadata["max_windows"] == 200
    texts = _texts(shared_data)[-4:]  # two long reviews (142 windows), two short texts
    expected, _ = _python_path(model, spm, texts, windows)
    out = lite.classify(texts)
    np.testing.assert_allclose(out["logits"], expected, atol=1e-4)
    assert list(out["label"]) == [["negative", "positive"][i] for i in expected.argmax(-1)]
    lines = list(answer_lines(lite, texts[-2:], 2, "in.txt"))
    assert [r["line"] for r in lines] == [1, 2] and lines[0]["label"] in ("negative", "positive")
    with pytest.raises(
        ValueError, match=r"in.txt:1-4: the request needs \d+ windows .* max_windows=200"
    ):
        list(answer_lines(lite, _texts(shared_data)[:4], 4, "in.txt"))
