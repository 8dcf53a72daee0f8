"""The shared layer as one while loop in LiteRT files (albert_tf.modeling.layer_loop): the
file's structure (one WHILE, a body of one block), its outputs against the unrolled file's
and the Keras model's, and the layouts that stay unrolled (parameter groups, fixed_length)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.harness import litert_ops, random_batch, tiny_config

LAYERS = 4
BLOCK_MATMULS = 4  # Q|K|V, the attention output, the FFN's two


def _logits(data: bytes, batch: dict) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_content=data, num_threads=1).get_signature_runner()
    return runner(**{k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")})["logits"]


@pytest.fixture(scope="module")
def files():
    """{groups: (Keras logits, looped file, unrolled file)} of a tiny 4-layer classifier
    with one parameter group (one shared block) and with two."""
    import keras

    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.serving.base import LiteWindows
    from albert_tf.serving.litert import convert

    out = {}
    batch = random_batch(seq=11)
    for groups in (1, 2):
        keras.utils.set_random_seed(groups)
        config = tiny_config(num_hidden_layers=LAYERS, num_hidden_groups=groups)
        model = AlbertClassifier(config, 3, dropout=0.0)
        model.build()
        want = model(
            {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=False
        )["logits"]
        # (fresh functions for each: a tf.function keeps its first trace)
        looped = convert(LiteWindows(model, 16).functions(), loop=True)
        out[groups] = (
            np.asarray(want),
            looped,
            convert(LiteWindows(model, 16).functions(), loop=False),
        )
    return batch, out


def test_one_shared_block_is_one_while_loop_with_one_block_of_matmuls(files):
    """One WHILE in the file, its body one block's four matmuls: the first L-1 layers
    looped (the last runs at [CLS] only, outside the loop), so the file holds 4 × (L - 2)
    fewer FULLY_CONNECTED nodes than the unrolled one, each a copy XNNPack would pack."""
    _, out = files
    looped, unrolled = litert_ops(out[1][1]), litert_ops(out[1][2])
    assert sum(c["WHILE"] for c in looped.values()) == 1
    assert sum(c["WHILE"] for c in unrolled.values()) == 0
    bodies = [c for name, c in looped.items() if name.endswith("_body")]
    assert len(bodies) == 1 and bodies[0]["FULLY_CONNECTED"] == BLOCK_MATMULS
    matmuls = [sum(c["FULLY_CONNECTED"] for c in ops.values()) for ops in (looped, unrolled)]
    assert matmuls[0] == matmuls[1] - BLOCK_MATMULS * (LAYERS - 2)


def test_the_looped_file_answers_as_the_unrolled_one_and_the_model(files):
    batch, out = files
    for groups, (want, looped, unrolled) in out.items():
        got = _logits(looped, batch)
        np.testing.assert_allclose(got, _logits(unrolled, batch), atol=1e-6, err_msg=groups)
        np.testing.assert_allclose(got, want, atol=1e-5, err_msg=groups)


def test_parameter_groups_stay_unrolled(files):
    """Two groups: two different blocks, so no single body; the file is the unrolled one."""
    _, out = files
    assert litert_ops(out[2][1]) == litert_ops(out[2][2])
