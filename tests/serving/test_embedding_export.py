"""The encoder export's sentence embedding (`embed`, `vectors`, `similarity`,
`encoder_outputs`) with the pooling and normalization chosen at export: answered in a fresh
process (SavedModel: tensorflow + tensorflow_text only; LiteRT: the runner) as the Python
`AlbertEmbedder` answers, on real STS-B sentences, padding never counted."""

import json
import os

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, tiny_config
from tests.support.serving_client import lite_client, served

STSB = SHARED_DATA / "glue" / "STS-B" / "dev.tsv"
SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
LENGTH = 64


def _sentences(count=24):
    """The first `count` STS-B dev pairs (sentence1, sentence2), skipping without the data."""
    if not STSB.exists() or not SPM.exists():
        pytest.skip(f"{STSB} or {SPM} is absent (../shared/data)")
    rows = [line.split("\t") for line in STSB.read_text(encoding="utf-8").splitlines()[1:]]
    return [r[7] for r in rows[:count]], [r[8] for r in rows[:count]]


@pytest.fixture(scope="module")
def encoder_checkpoint(tmp_path_factory):
    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.encoder import AlbertEncoder

    _sentences()
    encoder = AlbertEncoder(tiny_config(vocab_size=30000, max_position_embeddings=LENGTH))
    encoder.build()
    path = str(tmp_path_factory.mktemp("enc") / "enc")
    save_checkpoint(encoder, path)
    return encoder, path


@pytest.fixture(scope="module")
def exported(tmp_path_factory, encoder_checkpoint):
    """One export (SavedModel + LiteRT float32): mean pooling, normalized, all layers."""
    from albert_tf.serving.export import export_formats
    from data_pipeline.tokenization.spec import TokenizerSpec

    out = str(tmp_path_factory.mktemp("export") / "serving")
    paths = export_formats(
        "encoder",
        encoder_checkpoint[1],
        out,
        ("savedmodel", "tflite"),
        tokenizer=TokenizerSpec.from_files(str(SPM)),
        max_seq_length=LENGTH,
        pooling="mean",
        normalize=True,
        encoder_outputs=True,
    )
    return paths[0], paths[1]


def _python(encoder, texts, pooling, normalize, hidden=False):
    """AlbertEmbedder on the texts packed to the full LENGTH (padding beyond each row)."""
    from albert_tf.modeling.pooling import AlbertEmbedder
    from albert_tf.training.sentence_similarity import single_sentence_features
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    features = single_sentence_features(texts, AlbertTokenizer(str(SPM)), LENGTH)
    embedder = AlbertEmbedder(encoder.config, encoder, pooling=pooling, normalize=normalize)
    out = embedder(features, training=False, output_hidden_states=hidden)
    return {k: np.asarray(v) if k != "encoder_outputs" else v for k, v in out.items()}, features


def test_savedmodel_in_a_fresh_process_equals_the_python_embedder(
    tmp_path, exported, encoder_checkpoint
):
    first, second = _sentences()
    encoder = encoder_checkpoint[0]
    want, features = _python(encoder, first, "mean", True, hidden=True)
    got = served(exported[0], {"text": first}, signature="embed")
    np.testing.assert_allclose(got["embeddings"], want["embeddings"], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got["embeddings"], axis=-1), 1.0, atol=1e-5)
    # Every block's output, as the Python model's at the real positions, zero elsewhere.
    layers = np.stack([np.asarray(h) for h in want["encoder_outputs"]], 1)  # [B, N, S, H]
    assert got["encoder_outputs"].shape == layers.shape
    real = features["input_mask"][:, None, :, None].astype(bool)
    np.testing.assert_allclose(
        np.where(real, got["encoder_outputs"], 0), np.where(real, layers, 0), atol=1e-5
    )
    assert not np.where(real, 0, got["encoder_outputs"]).any()
    np.testing.assert_allclose(got["encoder_outputs"][:, -1], got["sequence_output"], atol=1e-6)
    # similarity: the cosine of the Python embeddings of each pair.
    other, _ = _python(encoder, second, "mean", True)
    sim = served(exported[0], {"text_a": first, "text_b": second}, "similarity")
    expected = np.sum(want["embeddings"] * other["embeddings"], axis=-1)
    np.testing.assert_allclose(sim["similarity"], expected, atol=1e-5)
    task = json.loads(open(os.path.join(exported[0], "assets.extra", "task.json")).read())
    assert (task["kind"], task["pooling"], task["normalize"]) == ("encoder", "mean", True)
    assert task["encoder_outputs"] is True and task["max_seq_length"] == LENGTH


def test_vectors_equal_the_python_embedder(exported, encoder_checkpoint):
    """The SavedModel's `vectors`: the embeddings alone, rows computed in length-sorted
    groups (`text_ops.by_length`), each padded to its own longest row and packed, returned
    in the request's order. 49 rows of mixed lengths (one fills LENGTH): 2 groups. (In this
    process; `similarity`, which runs on `vectors`, is checked in a fresh one above.)"""
    import tensorflow as tf

    first, second = _sentences()
    texts = first + [" ".join(second * 3)] + second
    want, features = _python(encoder_checkpoint[0], texts, "mean", True)
    lengths = features["input_mask"].sum(1)
    assert lengths.max() == LENGTH and len(set(lengths)) > 10
    vectors = tf.saved_model.load(exported[0]).signatures["vectors"]
    got = {k: v.numpy() for k, v in vectors(text=tf.constant(texts)).items()}
    assert set(got) == {"embeddings"}
    np.testing.assert_allclose(got["embeddings"], want["embeddings"], atol=1e-5)


def test_litert_runner_in_a_fresh_process_answers_as_the_savedmodel(
    tmp_path, exported, encoder_checkpoint
):
    first, _ = _sentences()
    want, _ = _python(encoder_checkpoint[0], first, "mean", True)
    got = lite_client(tmp_path, {"e": {"model": exported[1], "method": "embed", "args": [first]}})
    np.testing.assert_allclose(got["e/embeddings"], want["embeddings"], atol=1e-5)
    meta = json.loads(open(exported[1] + ".json").read())
    assert (meta["pooling"], meta["normalize"], meta["encoder_outputs"]) == ("mean", True, True)


def test_litert_vectors_compute_length_sorted_groups_and_equal_the_python_embedder(
    exported, encoder_checkpoint
):
    """`LiteModel.vectors` (albert_tf.serving.tasks.encoder.lite_runner): the same 49
    mixed-length rows as the SavedModel's `vectors` above give the Python embeddings in the
    request's order, the file called on groups of 8 sorted by token count (so each group is
    padded to its own longest row); a request of 8 rows or fewer is one call, and 0 rows
    give [0, H]."""
    from albert_tf.serving.tflite_predict import LiteModel

    first, second = _sentences()
    texts = first + [" ".join(second * 3)] + second
    want, features = _python(encoder_checkpoint[0], texts, "mean", True)
    lite = LiteModel(exported[1])
    calls, run = [], lite.run

    def recording(signature="serving_default", **inputs):
        out = run(signature, **inputs)
        calls.append((signature, out["input_mask"].sum(-1) if signature == "embed" else None))
        return out

    lite.run = recording
    got = lite.vectors(texts)
    np.testing.assert_allclose(got, want["embeddings"], atol=1e-5)
    assert [c[0] for c in calls] == ["tokenize"] + ["embed"] * 7
    groups = [c[1] for c in calls[1:]]
    assert [len(g) for g in groups] == [8] * 6 + [1]
    flat = np.concatenate(groups)
    assert (np.diff(flat) >= 0).all()  # ascending token counts, group after group
    np.testing.assert_array_equal(np.sort(flat), np.sort(features["input_mask"].sum(1)))
    calls.clear()
    np.testing.assert_allclose(lite.vectors(texts[:5]), want["embeddings"][:5], atol=1e-5)
    assert [c[0] for c in calls] == ["embed"]
    assert lite.vectors([]).shape == (0, want["embeddings"].shape[-1])


@pytest.mark.parametrize("pooling", ["pooler", "cls", "max"])
def test_each_pooling_ignores_padding(encoder_checkpoint, pooling):
    """Each pooling, unnormalized: a sentence alone (bucket length) and beside a long one
    (padded further) answers as the Python embedder with the full-length padding."""
    import tensorflow as tf

    from albert_tf.serving.export import build_module
    from data_pipeline.tokenization.spec import TokenizerSpec

    first, second = _sentences(8)
    texts = [first[0], " ".join(second * 3)]  # the second row fills LENGTH
    module = build_module(
        "encoder",
        encoder_checkpoint[1],
        tokenizer=TokenizerSpec.from_files(str(SPM)),
        max_seq_length=LENGTH,
        pooling=pooling,
    )
    want, _ = _python(encoder_checkpoint[0], texts, pooling, False)
    for signature in (module.embed, module.vectors):
        alone = signature(tf.constant(texts[:1]))["embeddings"].numpy()
        beside = signature(tf.constant(texts))["embeddings"].numpy()
        np.testing.assert_allclose(alone[0], want["embeddings"][0], atol=1e-5)
        np.testing.assert_allclose(beside, want["embeddings"], atol=1e-5)
        assert not np.allclose(np.linalg.norm(beside, axis=-1), 1.0)  # not normalized


def test_pooling_flag_and_task_fields_are_checked():
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.pooling import POOLINGS
    from albert_tf.serving.export_command import POOLING_CHOICES

    assert POOLING_CHOICES == POOLINGS
    with pytest.raises(ValueError, match="pooling 'sum'") as e:
        TaskInfo.build("encoder", pooling="sum")
    assert "\n" not in str(e.value)
    info = TaskInfo.build("encoder", max_seq_length=8)
    assert (info.details.pooling, info.details.normalize) == ("mean", False)
