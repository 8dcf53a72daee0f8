"""bench/model.py's GEMM floor does exactly the encoder forward pass's matrix products, so
that "% of floor" and the floor's ratio to a peer mean what the bench says they mean."""

import numpy as np
import pytest
import tensorflow as tf

from bench import model as bench_model
from tests.support.harness import tiny_config


def matmul_flops(graph) -> int:
    """2·M·N·K summed over the MatMul/BatchMatMul ops of a traced graph (static shapes)."""
    total = 0
    for op in graph.get_operations():
        if op.type == "MatMul":
            k = op.inputs[0].shape[-2 if op.get_attr("transpose_a") else -1]
        elif op.type in ("BatchMatMulV2", "BatchMatMulV3"):
            k = op.inputs[0].shape[-2 if op.get_attr("adj_x") else -1]
        else:
            continue
        total += 2 * int(np.prod(op.outputs[0].shape)) * int(k)
    return total


@pytest.mark.parametrize(
    "config",
    [
        "base",
        tiny_config(),  # E != H, 4 layers
        tiny_config(embedding_size=32, num_hidden_groups=2, inner_group_num=2),  # E == H
    ],
    ids=["base", "tiny", "tiny-E=H-groups"],
)
def test_gemm_floor_has_the_encoders_matmul_flops(config):
    from albert_tf import AlbertConfig, AlbertEncoder

    if config == "base":
        config = AlbertConfig.preset("base")
    batch, seq = 3, 16
    floor = tf.function(bench_model.gemm_floor(tf, config, batch, seq, tf.float32))
    floor_flops = matmul_flops(floor.get_concrete_function().graph)

    encoder = AlbertEncoder(config)
    encoder.build()
    spec = {
        k: tf.TensorSpec([batch, seq], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")
    }
    forward = tf.function(lambda x: encoder(x)["sequence_output"])
    encoder_flops = matmul_flops(forward.get_concrete_function(spec).graph)

    h, s = config.hidden_size, seq
    per_layer = 2 * batch * s * h * (4 * h + 2 * config.intermediate_size) + 4 * batch * s * s * h
    blocks = config.num_hidden_layers * config.inner_group_num
    assert encoder_flops >= blocks * per_layer  # shapes were all static
    assert floor_flops == encoder_flops
    x, pooled = floor()
    assert x.shape == (batch * seq, h) and pooled.shape == (batch, h)


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_gemm_floor_values_stay_near_unit_size(dtype):
    """Through 24 blocks (ALBERT-large's depth) nothing overflows or decays to denormals,
    which would change what the floor measures."""
    config = tiny_config(
        num_hidden_layers=24, hidden_size=64, num_attention_heads=4, intermediate_size=128
    )
    x, pooled = bench_model.gemm_floor(tf, config, 2, 32, dtype)()
    rms = float(tf.sqrt(tf.reduce_mean(tf.square(tf.cast(x, tf.float32)))))
    assert 0.1 < rms < 10, rms
    assert np.isfinite(tf.cast(pooled, tf.float32).numpy()).all()
