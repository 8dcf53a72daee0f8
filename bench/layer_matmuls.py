"""One ALBERT layer's four float32 matmuls at M rows, in each library our benches compare:
the rate that bounds the float32 serving ratios (docs/performance-history.md, "What
bounds the float32 ratios").

    python -m bench.layer_matmuls [--config base] [--rows 24,128,534,2048] [--rounds 3]

A layer multiplies its [M, H] input by the fused q/k/v kernel [H, 3H], the attention output
[H, H], the FFN's [H, I] and [I, H] (with their biases): 2·M·H·(5H + 2I) FLOPs, and
H·(5H + 2I) float32 weights (28 MB for ALBERT-base, the same matrices at every layer). M is
a request's token count: ~24 for one CoNLL-2003 sentence (NER at batch 1), ~534 for 32 STS-B
sentences packed (embeddings at batch 32).

Rows of the table, each the best of `--rounds` interleaved rounds (each round times every
system once, in turn):
  tensorflow  tf.matmul + bias in a tf.function on tf.Variables (what a SavedModel runs:
              oneDNN's fused matmul);
  torch       torch.nn.Linear under inference_mode (what Hugging Face runs: MKL/oneDNN);
  litert      a LiteRT file of the same four fully-connected layers (XNNPack, weights
              packed once when the interpreter is built), 2 threads;
  read        reading the layer's weights once (torch sum over a 28 MB buffer): the memory
              bound, printed as the GB/s reached and the time it takes.
"""

from __future__ import annotations

import argparse
import os
import time


def _best(fn, rounds: int, calls: int) -> float:
    """Seconds per call: the best mean of `calls` calls over `rounds` rounds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _time_layer(m, shapes, kernels, biases, tf_w, tf_b, linears, buffer, args, rng) -> dict:
    """Seconds per call of each system at M = m rows (see the module docstring)."""
    import numpy as np
    import tensorflow as tf
    import torch
    from ai_edge_litert.interpreter import Interpreter

    flops = 2.0 * m * sum(k * n for k, n in shapes)
    x_np = [rng.standard_normal((m, k)).astype("float32") for k, _ in shapes]
    x_tf = [tf.constant(x) for x in x_np]
    x_torch = [torch.from_numpy(x) for x in x_np]

    @tf.function
    def tf_layer():
        return [tf.nn.bias_add(tf.matmul(x, w), b) for x, w, b in zip(x_tf, tf_w, tf_b)]

    class Layer(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([m, k], tf.float32) for k, _ in shapes])
        def __call__(self, *xs):
            return [tf.matmul(x, w) + b for x, w, b in zip(xs, kernels, biases)]

    module = Layer()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.__call__.get_concrete_function()], module
    )
    interpreter = Interpreter(model_content=converter.convert(), num_threads=args.threads)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():  # its own input order
        interpreter.set_tensor(
            detail["index"], np.asarray(rng.standard_normal(detail["shape"]), "float32")
        )

    def torch_layer():
        with torch.inference_mode():
            return [lin(x) for lin, x in zip(linears, x_torch)]

    systems = {
        "tensorflow": tf_layer,
        "torch": torch_layer,
        "litert": interpreter.invoke,
        "read": lambda: buffer.sum(),
    }
    calls = max(3, int(2e10 / flops))  # about a second a round at M = 24
    for fn in systems.values():
        fn()  # warm up: traces, primitives, packed weights
    times = {name: float("inf") for name in systems}
    for _ in range(args.rounds):
        for name, fn in systems.items():
            times[name] = min(times[name], _best(fn, 1, calls))
    return times


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="base", help="an AlbertConfig preset (base, large...)")
    p.add_argument("--rows", default="24,128,534,2048", help="comma-separated M values")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="threads for every library")
    args = p.parse_args()
    rows = [int(m) for m in args.rows.split(",") if m]
    if not rows or min(rows) < 1 or args.rounds < 1 or args.threads < 1:
        p.error("--rows must be positive integers; --rounds and --threads >= 1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import numpy as np
    import tensorflow as tf
    import torch

    from albert_tf.modeling.config import AlbertConfig

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    torch.set_num_threads(args.threads)
    config = AlbertConfig.preset(args.config)
    h, i = config.hidden_size, config.intermediate_size
    shapes = [(h, 3 * h), (h, h), (h, i), (i, h)]
    weights = sum(k * n for k, n in shapes)
    rng = np.random.default_rng(0)
    kernels = [(rng.standard_normal((k, n)) * 0.02).astype("float32") for k, n in shapes]
    biases = [np.zeros(n, "float32") for _, n in shapes]

    tf_w = [tf.Variable(w) for w in kernels]
    tf_b = [tf.Variable(b) for b in biases]
    linears = []
    for w, b in zip(kernels, biases):
        lin = torch.nn.Linear(*w.shape)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
        linears.append(lin)
    buffer = torch.ones(weights)

    print(
        f"one ALBERT-{args.config} layer's four matmuls (H={h}, I={i}: {weights * 4 / 2**20:.0f}"
        f" MB of float32 weights), {args.threads} threads, {os.cpu_count()} CPUs, "
        f"TF {tf.__version__}, torch {torch.__version__}"
    )
    print(f"{'M':>6s} {'system':>11s} {'ms':>8s} {'GFLOP/s':>8s}")
    for m in rows:
        flops = 2.0 * m * weights
        times = _time_layer(m, shapes, kernels, biases, tf_w, tf_b, linears, buffer, args, rng)
        for name, seconds in times.items():
            if name == "read":
                rate = f"{weights * 4 / seconds / 1e9:.1f} GB/s"
                print(f"{m:>6d} {name:>11s} {seconds * 1e3:8.2f} {rate:>8s}")
            else:
                print(f"{m:>6d} {name:>11s} {seconds * 1e3:8.2f} {flops / seconds / 1e9:8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
