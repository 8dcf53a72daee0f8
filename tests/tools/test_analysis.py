"""albert_tf.tools.analysis (paper Figure 2): per-layer L2 distance and cosine similarity equal a
direct numpy computation over real tokens; CSV and PNG for a shared and an unshared model."""

import ast
import csv
import json
import os
import struct

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertEncoder, AlbertPretrainer, save_checkpoint
from albert_tf.tools.analysis import CSV_COLUMNS, layer_similarity, main, pretraining_batches
from data_pipeline.records import AtomicRecordWriter, encode_examples, feature_lengths
from tests.support.harness import ROOT, tiny_config

SEQ, PREDS = 12, 3


def make_records(rows=7, seed=0, pad_seed=None):
    """Pretraining features with padding of varied length; `pad_seed` fills the padded
    positions' ids and segment ids with random values instead of 0."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, SEQ + 1, rows)
    lengths[0] = SEQ
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int64)
    ids = rng.integers(5, 99, (rows, SEQ)) * mask
    segments = (np.arange(SEQ)[None, :] >= (lengths[:, None] // 2)).astype(np.int64) * mask
    if pad_seed is not None:
        pad = np.random.default_rng(pad_seed)
        ids = np.where(mask == 1, ids, pad.integers(1, 99, ids.shape))
        segments = np.where(mask == 1, segments, pad.integers(0, 2, ids.shape))
    features = {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": segments,
        "token_boundary": np.ones_like(ids),
        "masked_lm_positions": np.tile(np.arange(1, PREDS + 1), (rows, 1)),
        "masked_lm_ids": rng.integers(5, 99, (rows, PREDS)),
        "masked_lm_weights": np.ones((rows, PREDS), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (rows, 1)),
    }
    assert set(features) == set(feature_lengths(SEQ, PREDS))
    return features


def write_records(path, features):
    writer = AtomicRecordWriter(str(path))
    writer.write_all(encode_examples(features))
    writer.commit()
    return str(path)


def numpy_figure2(encoder, features):
    """The reference: hidden states from the encoder, measures in float64 numpy."""
    out = encoder(
        {k: features[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")},
        output_hidden_states=True,
    )
    inner = encoder.config.inner_group_num
    blocks = [np.asarray(t, np.float64) for t in out["encoder_outputs"]]
    assert len(blocks) == encoder.config.num_hidden_layers * inner
    states = [np.asarray(out["embedding_output"], np.float64)] + blocks[inner - 1 :: inner]
    assert states[0].shape[-1] == encoder.config.hidden_size
    real = features["input_mask"].astype(bool)
    l2, cos, angle = [], [], []
    for x, y in zip(states[:-1], states[1:]):
        x, y = x[real], y[real]  # [tokens, H]
        c = (x * y).sum(-1) / (np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1))
        l2.append(np.linalg.norm(y - x, axis=-1).mean())
        cos.append(c.mean())
        angle.append(np.degrees(np.arccos(np.clip(c, -1, 1))).mean())
    return np.array(l2), np.array(cos), np.array(angle), int(real.sum())


@pytest.mark.integration  # Figure 2's analyses of an encoder: over the unit tier's 5 s
@pytest.mark.parametrize(
    "overrides", [dict(), dict(sharing="none", inner_group_num=2, num_hidden_layers=3)]
)
def test_numbers_equal_numpy(tmp_path, overrides):
    keras.utils.set_random_seed(1)
    encoder = AlbertEncoder(tiny_config(**overrides))
    features = make_records()
    path = write_records(tmp_path / "a.tfrecord", features)
    # Batches of 3, 3, 1: the partial last batch counts too.
    got = layer_similarity(encoder, pretraining_batches(path, batch_size=3))
    l2, cos, angle, tokens = numpy_figure2(encoder, features)
    assert got.tokens == tokens == features["input_mask"].sum()
    assert got.l2_distance.shape == (encoder.config.num_hidden_layers,)
    np.testing.assert_allclose(got.l2_distance, l2, rtol=1e-5)
    np.testing.assert_allclose(got.cosine_similarity, cos, rtol=1e-5)
    np.testing.assert_allclose(got.angle_degrees, angle, rtol=1e-4, atol=1e-3)
    # max_batches: the first 3 records only.
    first = layer_similarity(encoder, pretraining_batches(path, batch_size=3), max_batches=1)
    head = {k: v[:3] for k, v in features.items()}
    np.testing.assert_allclose(first.l2_distance, numpy_figure2(encoder, head)[0], rtol=1e-5)


def test_padding_is_excluded(tmp_path):
    keras.utils.set_random_seed(2)
    encoder = AlbertEncoder(tiny_config(num_hidden_layers=3))
    a = write_records(tmp_path / "a.tfrecord", make_records())
    b = write_records(tmp_path / "b.tfrecord", make_records(pad_seed=7))
    assert open(a, "rb").read() != open(b, "rb").read()
    got_a = layer_similarity(encoder, pretraining_batches(a, 4))
    got_b = layer_similarity(encoder, pretraining_batches(b, 4))
    for field in ("l2_distance", "cosine_similarity", "angle_degrees"):
        np.testing.assert_allclose(getattr(got_b, field), getattr(got_a, field), rtol=1e-6)

    # Not vacuous: the padded positions' states (which the figures would average if they
    # counted padding) do change.
    states = [
        encoder(
            {k: f[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")},
            output_hidden_states=True,
        )["encoder_outputs"][0].numpy()
        for f in (make_records(), make_records(pad_seed=7))
    ]
    pad = make_records()["input_mask"] == 0
    assert pad.any() and np.abs(states[0][pad] - states[1][pad]).max() > 1e-2


def _png_size(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_cli_shared_and_unshared(tmp_path, capsys):
    # ALBERT as a run leaves it (run_config.json in the parent), the unshared model as
    # export_encoder / save_checkpoint leave it (albert_config.json beside).
    shared = tiny_config(num_hidden_layers=4)
    keras.utils.set_random_seed(3)
    model = AlbertPretrainer(shared)
    model.build()
    tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model), str(tmp_path / "run" / "checkpoints"), 1
    ).save()
    (tmp_path / "run" / "run_config.json").write_text(
        json.dumps({"albert_config": shared.to_dict()})
    )
    unshared = AlbertEncoder(shared.replace(sharing="none"))
    unshared.build()
    save_checkpoint(unshared, str(tmp_path / "none"))
    records = tmp_path / "records"
    records.mkdir()
    write_records(records / "part-0.tfrecord", make_records(5, seed=0))
    write_records(records / "part-1.tfrecord", make_records(4, seed=1))

    out = tmp_path / "fig"
    run_ckpt = str(tmp_path / "run" / "checkpoints")
    assert (
        main(
            [
                "analysis",
                "--init_checkpoint",
                run_ckpt,
                "--compare_checkpoint",
                str(tmp_path / "none"),
                "--input_file",
                str(records / "*.tfrecord"),
                "--output_dir",
                str(out),
                "--batch_size",
                "2",
                "--max_batches",
                "3",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "sharing=all" in printed and "sharing=none" in printed
    assert f"wrote {out / 'figure2.csv'} and {out / 'figure2.png'}" in printed

    with open(out / "figure2.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [(r["model"], r["sharing"], int(r["layer"])) for r in rows] == (
        [(run_ckpt, "all", layer) for layer in range(1, 5)]
        + [(str(tmp_path / "none"), "none", layer) for layer in range(1, 5)]
    )
    # The CLI's numbers are the library's on the same 3 batches of 2 (5 + 1 records).
    direct = layer_similarity(
        model.encoder, pretraining_batches(str(records / "*.tfrecord"), 2), max_batches=3
    )
    np.testing.assert_allclose(
        [float(r["l2_distance"]) for r in rows[:4]], direct.l2_distance, rtol=1e-6
    )
    np.testing.assert_allclose(
        [float(r["cosine_similarity"]) for r in rows[:4]], direct.cosine_similarity, rtol=1e-6
    )

    assert _png_size(out / "figure2.png") == (1320, 504)
    import matplotlib.image

    pixels = (matplotlib.image.imread(out / "figure2.png")[..., :3] * 255).round()
    for color in ((0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)):  # the first two lines' colors
        assert (np.abs(pixels - color).max(-1) <= 2).sum() > 100, color
    assert not any(".tmp" in n for n in os.listdir(out))


def test_errors(tmp_path, capsys):
    encoder = AlbertEncoder(tiny_config(num_hidden_layers=2))
    encoder.build()
    save_checkpoint(encoder, str(tmp_path / "m"))
    records = write_records(tmp_path / "r.tfrecord", make_records(3))
    base = [
        "analysis",
        "--init_checkpoint",
        str(tmp_path / "m"),
        "--output_dir",
        str(tmp_path / "out"),
    ]
    assert main(base + ["--input_file", str(tmp_path / "none*.tfrecord")]) == 1
    assert "matches no file" in capsys.readouterr().err
    assert main(base + ["--input_file", records, "--max_seq_length", "16"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: reading {records} (max_seq_length=16)") and err.count("\n") == 1
    os.remove(tmp_path / "m" / "albert_config.json")
    assert main(base + ["--input_file", records]) == 1
    assert "error: no config for checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_albert_tf_imports_matplotlib_only_to_plot():
    # Importing albert_tf must not need matplotlib (Keras itself imports it when it can, so
    # sys.modules cannot tell): no module-level matplotlib import in the package.
    for path in sorted((ROOT / "albert_tf").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.split(".")[0] == "matplotlib" for n in names), path
    source = (ROOT / "albert_tf" / "tools" / "analysis.py").read_text(encoding="utf-8")
    assert "from matplotlib" in source  # the check above looks at the right thing
