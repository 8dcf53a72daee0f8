"""SavedModels that take raw text (albert_tf.serving.export), used as a serving client
would: a fresh process that imports only tensorflow and tensorflow_text, saved_model_cli,
bad input."""

import json
import os
import re

import numpy as np
import pytest

from tests.support.harness import ROOT as HARNESS_ROOT
from tests.support.harness import tiny_config
from tests.support.in_process import run_command
from tests.support.serving_client import client
from tests.support.tf_serving_ops import SENTENCEPIECE_OPS, assert_stock_server_links

ROOT = str(HARNESS_ROOT)


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    import pathlib

    path = pathlib.Path(ROOT).parent / "shared" / "data" / "spm" / "de-30k-clean.model"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/data)")
    return str(path)


def _config(positions=64):
    return tiny_config(vocab_size=30000, max_position_embeddings=positions)


def _finetuned(tmp_path, spm, kind="classifier", positions=64, **task):
    import keras

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.models import (
        AlbertClassifier,
        AlbertMultipleChoice,
        AlbertQuestionAnswering,
    )
    from data_pipeline.tokenization.spec import TokenizerSpec

    keras.utils.set_random_seed(3)
    if kind == "multiple_choice":
        model = AlbertMultipleChoice(_config(), dropout=0.0)
    elif kind == "squad":
        model = AlbertQuestionAnswering(_config())
    else:
        model = AlbertClassifier(
            _config(positions), 1 if task.get("regression") else 2, dropout=0.0
        )
    model.build()
    info = {
        "kind": kind,
        "labels": ["negative", "positive"],
        "regression": False,
        "max_seq_length": 48,
        "do_lower_case": True,
        "text_pair": False,
        **task,
    }
    directory = save_finetuned(
        model, str(tmp_path / "finetuned"), TaskInfo.build(**info), TokenizerSpec.from_files(spm)
    )
    return model, directory


def _in_memory(model, spm, texts_a, texts_b=None, max_seq_length=48):
    from data_pipeline.classification.examples import Example
    from data_pipeline.classification.features import convert_examples
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(spm)
    examples = [
        Example(str(i), a, texts_b[i] if texts_b else None, None) for i, a in enumerate(texts_a)
    ]
    f = convert_examples(examples, tok, max_seq_length, ["negative", "positive"])
    inputs = {k: f[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    return model(inputs, training=False)["logits"].numpy(), inputs


@pytest.fixture(scope="module")
def sst2_export(tmp_path_factory, spm):
    """(model, fine-tuned directory, SavedModel version, its directory): the single-text
    classifier exported once."""
    from albert_tf.serving.export import export

    tmp_path = tmp_path_factory.mktemp("sst2-export")
    model, directory = _finetuned(tmp_path, spm)
    version = export("classifier", directory, str(tmp_path / "serving"))
    assert version == str(tmp_path / "serving" / "1")
    return model, directory, version, tmp_path


@pytest.mark.slow
def test_classifier_serves_sst2_dev_like_the_model_in_memory(sst2_export, spm, shared_data):
    from albert_tf.serving.export import export

    model, directory, version, tmp_path = sst2_export
    lines = (shared_data / "glue" / "SST-2" / "dev.tsv").read_text().splitlines()[1:]
    sentences = [line.split("\t")[0] for line in lines]
    out = client(tmp_path, version, {"text_a": sentences})
    logits, _ = _in_memory(model, spm, sentences)
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(out["probabilities"], probs, atol=1e-5)
    assert [x.decode() for x in out["label"]] == [
        ["negative", "positive"][i] for i in logits.argmax(-1)
    ]
    # saved_model_cli lists the signatures with their string inputs.
    cli = run_command(
        "-m", "tensorflow.python.tools.saved_model_cli", "show", "--dir", version, "--all"
    )
    assert cli.returncode == 0, cli.report()
    assert "signature_def['serving_default']" in cli.stdout
    assert "inputs['text_a'] tensor_info:\n        dtype: DT_STRING" in cli.stdout
    assert "signature_def['tokenize']" in cli.stdout
    # The vocabulary is an asset of the version; a second export is version 2.
    assert (tmp_path / "serving" / "1" / "assets" / "spm.model").read_bytes() == open(
        spm, "rb"
    ).read()
    assert (tmp_path / "serving" / "1" / "assets.extra" / "finetuned" / "task.json").exists()
    # Every op is one the stock TF Serving model server links.
    assert SENTENCEPIECE_OPS <= assert_stock_server_links(version)
    assert export("classifier", directory, str(tmp_path / "serving")).endswith("2")


def _readme_rest_example():
    """(request body, response body) of the README's TF Serving curl example."""
    text = (HARNESS_ROOT / "README.md").read_text(encoding="utf-8")
    request = re.search(r"curl [^\n]*:predict[^\n]*\\\n\s*-d '(\{.*?\})'", text, re.S)
    response = re.search(r"# →\s*(\{\"predictions\".*?\})\n", text, re.S)
    assert request and response, "README has no TF Serving REST example"
    return json.loads(request.group(1)), json.loads(response.group(1))


def test_readme_rest_example_fits_the_classifier_signature(sst2_export):
    """The README's TF Serving REST request body, as the server reads it (the "instances"
    row format: one object a row, keyed by the signature's input names, stacked along the
    batch), goes through the signature; the README's response has that signature's outputs
    with their shapes."""
    import tensorflow as tf

    from albert_tf.serving.compute_dtype import load_saved_model

    request, response = _readme_rest_example()
    fn = load_saved_model(sst2_export[2]).signatures[request["signature_name"]]
    inputs = fn.structured_input_signature[1]
    rows = request["instances"]
    assert all(set(row) == set(inputs) for row in rows), (rows, sorted(inputs))
    out = fn(**{k: tf.constant([row[k] for row in rows]) for k in inputs})
    (shown,) = response["predictions"]  # (one row asked, one answered)
    assert set(shown) == set(out)
    for name, value in out.items():
        row = value.numpy()[0]
        if value.dtype == tf.string:
            assert isinstance(shown[name], str) and row.decode() in ("negative", "positive")
        else:
            assert np.shape(shown[name]) == row.shape, name
    assert np.isclose(sum(shown["probabilities"]), 1.0, atol=0.01)


def test_bad_input_has_defined_behaviour(tmp_path, spm):
    """Empty strings, a 20,000-word text, invalid UTF-8 and mixed lengths in one batch:
    no crash; long text is truncated exactly as training truncates it."""
    import tensorflow as tf

    from albert_tf.serving.export import build_module

    model, directory = _finetuned(tmp_path, spm, text_pair=True)
    module = build_module("classifier", directory)
    long_text = " ".join(["word"] * 20000)
    a = ["", long_text, "a short one", "caf\udcff"]
    raw_a = tf.constant([x.encode("utf-8", "surrogateescape") for x in a])
    b = tf.constant(["", "", "second sentence", b"bad \xff\xfe bytes"])
    out = module.classify(raw_a, b)
    assert out["probabilities"].shape == (4, 2)
    np.testing.assert_allclose(out["probabilities"].numpy().sum(-1), 1.0, atol=1e-6)
    ids = module.tokenize(raw_a, b)
    expected_logits, expected = _in_memory(
        model,
        spm,
        ["", long_text, "a short one", "caf\ufffd"],
        ["", "", "second sentence", "bad \ufffd\ufffd bytes"],
    )
    for key in expected:
        np.testing.assert_array_equal(ids[key].numpy(), expected[key])
    np.testing.assert_allclose(out["logits"].numpy(), expected_logits, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["wikitext-2/valid.txt", "zh_news/news_zh_1.txt"])
def test_in_graph_ids_equal_python_on_a_corpus_file(tmp_path, spm, shared_data, corpus):
    """Every line of a real corpus file, English and Chinese, through the exported
    `tokenize` signature: the same ids, mask and segments as training's packing."""
    import tensorflow as tf

    from albert_tf.serving.export import build_module
    from data_pipeline.classification.features import _pack
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    path = shared_data / "corpus" / corpus
    lines = [line for line in open(path, encoding="utf-8").read().splitlines() if line.strip()]
    assert len(lines) > 20
    _, directory = _finetuned(tmp_path, spm, positions=128)  # (packs of 128 need 128 positions)
    module = build_module("encoder", directory, max_seq_length=128)
    tok = AlbertTokenizer(spm)
    got = module.tokenize(tf.constant(lines), tf.constant([""] * len(lines)))
    for i, (line, ids) in enumerate(zip(lines, tok.encode_batch(lines))):
        x, m, s = _pack(tok, list(ids), [], 128)
        assert got["input_ids"][i].numpy().tolist() == x, line
        assert got["input_mask"][i].numpy().tolist() == m


def _xla_functions(version):
    """Names of the SavedModel's functions marked for XLA compilation."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(version, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    library = proto.meta_graphs[0].graph_def.library
    return [f.signature.name for f in library.function if f.attr["_XlaMustCompile"].b]


def test_encoder_embed_and_encode(tmp_path, spm):
    import tensorflow as tf

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.encoder import AlbertEncoder
    from albert_tf.serving.export import export
    from data_pipeline.tokenization.spec import TokenizerSpec

    encoder = AlbertEncoder(_config())
    encoder.build()
    save_checkpoint(encoder, str(tmp_path / "enc"))
    version = export(
        "encoder",
        str(tmp_path / "enc"),
        str(tmp_path / "serving"),
        tokenizer=TokenizerSpec.from_files(spm),
        max_seq_length=32,
    )
    assert _xla_functions(version) == []  # portable: no XLA-compiled kernels inside
    loaded = tf.saved_model.load(version)
    texts = ["The quick brown fox.", "", "Ein zweiter Satz, etwas länger als der erste."]
    out = loaded.signatures["embed"](text=tf.constant(texts))
    from data_pipeline.classification.features import _pack
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(spm)
    packed = [_pack(tok, tok.encode(t), [], 32) for t in texts]
    inputs = {
        k: np.array([p[i] for p in packed], np.int32)
        for i, k in enumerate(("input_ids", "input_mask", "segment_ids"))
    }
    want = encoder(inputs, training=False)
    np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-5)
    # Computed at the request's bucket (16 here, not 32): the real positions are the padded
    # path's, every padding position is zero.
    real = inputs["input_mask"][:, :, None].astype(bool)
    got, expected = out["sequence_output"].numpy(), want["sequence_output"].numpy()
    assert got.shape == expected.shape == (3, 32, expected.shape[-1])
    np.testing.assert_allclose(np.where(real, got, 0), np.where(real, expected, 0), atol=1e-5)
    assert not np.where(real, 0, got).any()
    np.testing.assert_array_equal(out["input_mask"], inputs["input_mask"])
    again = loaded.signatures["encode"](**{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_allclose(again["pooled_output"], want["pooled_output"], atol=1e-5)


def test_multiple_choice_serving(tmp_path, spm):
    import tensorflow as tf

    from albert_tf.serving.export import build_module
    from data_pipeline.classification.examples import MultipleChoiceExample
    from data_pipeline.classification.features import convert_multiple_choice
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    model, directory = _finetuned(
        tmp_path, spm, kind="multiple_choice", labels=None, num_choices=3, text_pair=True
    )
    module = build_module("multiple_choice", directory)
    passage = ["Tom has a red ball. He plays in the park.", "Es regnet."]
    question = ["What colour is the ball?", "The weather is _ today."]
    options = [["red", "blue", "green"], ["rainy", "sunny", ""]]
    out = module.choose(tf.constant(passage), tf.constant(question), tf.constant(options))
    examples = [
        MultipleChoiceExample(str(i), passage[i], question[i], tuple(o for o in options[i] if o), 0)
        for i in range(2)
    ]
    f = convert_multiple_choice(examples, AlbertTokenizer(spm), 48, 3)
    want = model({k: f[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")})[
        "logits"
    ].numpy()
    probs = out["probabilities"].numpy()
    np.testing.assert_allclose(out["logits"].numpy()[:, :2], want[:, :2], atol=1e-5)
    assert probs[1, 2] < 1e-6 and abs(probs.sum(-1) - 1).max() < 1e-6


def test_export_command_line_errors(tmp_path, spm):
    _, directory = _finetuned(tmp_path, spm)
    run = run_command(
        "-m",
        "albert_tf.serving.export",
        "--task=squad",
        f"--init_checkpoint={directory}",
        f"--export_dir={tmp_path / 'out'}",
    )
    assert run.returncode == 1
    assert f"error: {directory} holds a classifier model, not squad" in run.stderr
    assert not (tmp_path / "out" / "1").exists()
    run = run_command(
        "-m",
        "albert_tf.serving.export",
        "--task=classifier",
        f"--init_checkpoint={tmp_path / 'nowhere'}",
        f"--export_dir={tmp_path / 'out'}",
    )
    assert run.returncode == 1 and "is not a fine-tuned model directory" in run.stderr


def test_pack_pads_a_request_to_its_bucket_not_to_max_seq_length():
    """The SavedModels compute a request at its longest row rounded up to a bucket; the
    ids are the max_seq_length packing's first columns, and the rest was padding."""
    import tensorflow as tf

    from albert_tf.serving.text_ops import bucket_length, pack

    for longest, max_len, want in [
        (1, 128, 16),
        (16, 128, 16),
        (17, 128, 32),
        (100, 128, 112),
        (113, 128, 128),
        (128, 128, 128),
        (300, 384, 320),
        (321, 384, 384),
        (385, 512, 448),
        (20, 24, 24),
        (10, 12, 12),
    ]:
        assert int(bucket_length(longest, max_len)) == want, (longest, max_len)
    ids_a = tf.ragged.constant([[5, 6, 7], list(range(10, 50))], tf.int32)
    ids_b = tf.ragged.constant([[], [9, 9]], tf.int32)
    short = pack(ids_a[:1], ids_b[:1], 128, 2, 3, length_aware=True)
    assert tuple(short[0].numpy().shape) == (1, 16)
    both = pack(ids_a, ids_b, 128, 2, 3, length_aware=True)
    full = pack(ids_a, ids_b, 128, 2, 3)
    assert full[0].shape.as_list() == [2, 128]
    assert both[0].numpy().shape == (2, 48)  # 40 + 2 + 3 special = 45 → 48
    for got, padded in zip(both, full):
        np.testing.assert_array_equal(got.numpy(), padded.numpy()[:, :48])
        assert not padded.numpy()[:, 48:].any()


def test_by_length_groups_sorted_rows_and_returns_them_in_order():
    """A request's rows are computed in length-sorted groups (at most `group` rows and
    `positions` grid positions each, one row at least), each cut to its bucket, and the
    results come back in the request's order; for multiple choice a row's length is its
    longest choice and it counts C times."""
    import tensorflow as tf

    from albert_tf.serving.text_ops import GROUP_POSITIONS, LENGTH_GROUP, by_length
    from data_pipeline.length_buckets import bucket_sizes

    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 128, 21)
    mask = (np.arange(128)[None, :] < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, 99, (21, 128)).astype(np.int32) * mask
    seen = []

    def forward(input_ids, input_mask, segment_ids):  # eager: a Python loop, shapes visible
        seen.append(tuple(input_ids.shape))
        per_row = tf.reduce_sum(input_ids * input_mask, axis=-1, keepdims=True)
        return tf.cast(
            tf.concat([per_row, tf.reduce_sum(input_mask, -1, keepdims=True)], 1), tf.float32
        )

    def run(**kw):
        seen.clear()
        out = by_length(
            forward, tf.constant(ids), tf.constant(mask), tf.zeros_like(mask), 128, **kw
        )
        np.testing.assert_array_equal(out.numpy()[:, 0], (ids * mask).sum(-1))
        np.testing.assert_array_equal(out.numpy()[:, 1], lengths)
        return list(seen)

    sizes = bucket_sizes(128)
    sorted_lengths = np.sort(lengths)

    def expected(group, positions, exact=False):
        """The greedy groups written out: (rows, cut length) of each."""
        cut = (lambda n: n) if exact else (lambda n: min(b for b in sizes if b >= n))
        out, start = [], 0
        while start < len(sorted_lengths):
            end = start + 1
            while (
                end < len(sorted_lengths)
                and end - start < group
                and (end + 1 - start) * cut(sorted_lengths[end]) <= positions
            ):
                end += 1
            out.append((end - start, cut(sorted_lengths[end - 1])))
            start = end
        return out

    got = run(group=8, positions=10**6)
    assert got == expected(8, 10**6) and [r for r, _ in got] == [8, 8, 5]
    # exact (the encoder's vectors): each group cut to its own longest row, same outputs.
    groups = [sorted_lengths[i : i + 8].max() for i in (0, 8, 16)]
    assert run(group=8, positions=10**6, exact=True) == [(8, g) for g in groups[:2]] + [
        (5, groups[2])
    ]
    # The defaults: up to LENGTH_GROUP rows and GROUP_POSITIONS positions.
    assert run() == expected(LENGTH_GROUP, GROUP_POSITIONS)
    assert all(rows * width <= GROUP_POSITIONS for rows, width in seen)
    got = run(positions=100)
    assert got == expected(32, 100) and all(r == 1 for r, w in got if w > 50)
    # Multiple choice: [B, C, L], a row's length its longest choice.
    mc_mask = np.stack([mask[:6], mask[6:12]], axis=1)  # [6, 2, 128]
    mc_ids = np.stack([ids[:6], ids[6:12]], axis=1)
    seen.clear()

    def choices(i, m, s):
        seen.append(tuple(i.shape))
        return tf.cast(tf.reduce_sum(i * m, -1), tf.float32)

    out = by_length(
        choices,
        tf.constant(mc_ids),
        tf.constant(mc_mask),
        tf.zeros_like(mc_mask),
        128,
        positions=512,
    )
    np.testing.assert_array_equal(out.numpy(), (mc_ids * mc_mask).sum(-1))
    assert sum(r for r, _, _ in seen) == 6 and all(r * 2 * w <= 512 or r == 1 for r, _, w in seen)
