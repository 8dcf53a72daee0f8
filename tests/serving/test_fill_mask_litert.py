"""The fill-mask LiteRT file (SentencePiece), written by the export command line beside
the SavedModel from one checkpoint: run in a fresh process that imports only the LiteRT
interpreter and the runner (no Keras, no model code), it answers as the SavedModel (same
ids, pieces and filled texts, scores within 1e-5) on real sentences with several masks and
masks inside words; the runner's command line answers one JSON line per input line and a
line without "[MASK]" is a one-line error naming it. (The WordPiece file: tests/serving/
test_fill_mask_export.py.)"""

import json
import re

import numpy as np
import pytest

from tests.serving.test_fill_mask_export import LENGTH, SPM, TOP_K, _texts
from tests.support.harness import tiny_config
from tests.support.in_process import run_command
from tests.support.serving_client import HEAVY, lite_client


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(SavedModel version, .tflite): `python -m albert_tf.serving.export --task=fill_mask
    --export_format=savedmodel --export_format=tflite` on a tiny pretrained checkpoint
    with peaked probabilities (weights of a trained model's spread)."""
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.models import AlbertPretrainer

    _texts()  # (skips without the real data)
    tmp = tmp_path_factory.mktemp("fill-litert")
    keras.utils.set_random_seed(1)
    config = tiny_config(vocab_size=30000, max_position_embeddings=LENGTH, initializer_range=0.3)
    model = AlbertPretrainer(config)
    model.build()
    save_checkpoint(model, str(tmp / "pre"))
    out = tmp / "export"
    run = run_command(
        "-m",
        "albert_tf.serving.export",
        "--task=fill_mask",
        f"--spm_model_file={SPM}",
        f"--init_checkpoint={tmp / 'pre'}",
        f"--export_dir={out}",
        "--export_format=savedmodel",
        "--export_format=tflite",
        f"--max_seq_length={LENGTH}",
        f"--top_k={TOP_K}",
    )
    assert run.returncode == 0, run.report()
    return str(out / "1"), str(out / "litert" / "fill_mask-float32.tflite")


def test_litert_in_a_fresh_process_answers_as_the_savedmodel(tmp_path, exported):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, for the SavedModel)

    version, lite = exported
    texts = _texts()
    request = {"model": lite, "method": "fill", "args": [texts], "kwargs": {"batch_size": 4}}
    # (the fill-mask runner imports no Keras either)
    answers = lite_client(tmp_path, {"fill": request}, heavy=(*HEAVY, "keras"))["fill/answers"]
    got = json.loads(str(answers))
    want = tf.saved_model.load(version).signatures["fill_mask"](text=tf.constant(texts))
    want = {k: v.numpy() for k, v in want.items()}
    several = glued = 0
    for i, text in enumerate(texts):
        assert len(got[i]) == want["mask_count"][i], text
        several += len(got[i]) > 1
        glued += bool(re.search(r"\w\[MASK\]|\[MASK\]\w", text))  # a mask inside a word
        for m, candidates in enumerate(got[i]):
            assert [c["token_id"] for c in candidates] == want["token_ids"][i, m].tolist(), text
            assert [c["token"] for c in candidates] == [t.decode() for t in want["tokens"][i, m]]
            assert [c["sequence"] for c in candidates] == [
                t.decode() for t in want["sequences"][i, m]
            ]
            np.testing.assert_allclose(
                [c["score"] for c in candidates], want["scores"][i, m], atol=1e-5, rtol=0
            )
    assert several >= 3 and glued >= 3
    assert want["scores"][:, :, 0].max() > 10 / 30000  # (peaked: not a uniform tie)


def test_runner_answers_each_line_and_a_line_without_mask_is_one_line(tmp_path, exported):
    _, lite = exported
    good = tmp_path / "good.txt"
    good.write_text("Die Hauptstadt von Frankreich ist [MASK].\n\nDer [MASK] ist [MASK]gil.\n")
    run = run_command("-m", "albert_tf.serving.tflite_predict", "--model", lite, "--input", good)
    assert run.returncode == 0, run.report()
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [x["line"] for x in lines] == [1, 2, 3] and "masks" not in lines[1]
    assert [len(x["masks"]) for x in (lines[0], lines[2])] == [1, 2]
    assert all(len(candidates) == TOP_K for candidates in lines[2]["masks"])
    first = lines[0]["masks"][0][0]
    assert first["sequence"].startswith("Die Hauptstadt von Frankreich ist ")
    path = tmp_path / "in.txt"
    path.write_text("Ein [MASK] Satz.\nkeine Maske hier\n", encoding="utf-8")
    run = run_command("-m", "albert_tf.serving.tflite_predict", "--model", lite, "--input", path)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        f"error: {path}:2: no [MASK] in the text to fill: 'keine Maske hier'"
    )
    assert json.loads(run.stdout.splitlines()[0])["line"] == 1  # the lines before: answered
