"""Peak memory of one pretraining step with and without activation recomputation.

    python -m bench.memory [--presets large,xxlarge] [--modes none,layer]
        [--batches 1,2] [--seq 512] [--steps 2] [--budget_gib 16]

Setting: ALBERT-large and -xxlarge shapes (`AlbertConfig.preset`, v2: dropout 0), random
weights and token ids, sequences of `--seq` tokens with 20 masked positions, float32.
One training step is the trainer's forward pass (MLM + SOP losses, last block at the
masked positions only), its gradients and a plain SGD update (`var -= lr·g`: no
optimizer slots, which are the same with or without recomputation), in one
`tf.function`, under the trace options the trainer sets (a dropout seed, the mode).

Each (preset, mode, batch) case runs in its own process, so that peaks do not mix:
- peak: the process's peak resident set (`ru_maxrss`) on CPU; with a GPU, TensorFlow's
  peak device memory (`tf.config.experimental.get_memory_info`).
- step: the fastest of `--steps` timed steps (the step is traced first, apart).
The per-example memory of a mode is the slope between the two batches, and its fixed
part (weights, gradients, runtime) the intercept; the largest batch under
`--budget_gib` follows from that line (stated as such in the table: measuring it by
bisection would take hours of xxlarge steps on a small CPU machine).

Steps at seq 512 take seconds (large) to minutes (xxlarge) on a 2-core machine, and a
loaded machine makes step times incomparable between cases: compare step times only
from cases run interleaved at the same load. docs/performance.md gives the commands its
figures came from.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

from bench.cases import run_child

MASKED = 20


def child(preset: str, mode: str, batch: int, seq: int, steps: int, jit: bool = False) -> dict:
    """One case in this process: {"peak_mib", "base_mib", "step_s", "device"}."""
    import keras
    import numpy as np
    import tensorflow as tf

    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.modeling.models import AlbertPretrainer
    from albert_tf.modeling.trace_options import DropoutSeed, trace_options

    gpu = bool(tf.config.list_physical_devices("GPU"))
    config = AlbertConfig.preset(preset, max_position_embeddings=max(512, seq))
    keras.utils.set_random_seed(0)
    model = AlbertPretrainer(config)
    model.build()
    variables = model.trainable_variables
    rng = np.random.default_rng(0)
    batch_data = {
        "input_ids": tf.constant(rng.integers(5, config.vocab_size, (batch, seq)), tf.int32),
        "input_mask": tf.ones((batch, seq), tf.int32),
        "segment_ids": tf.zeros((batch, seq), tf.int32),
        "masked_lm_positions": tf.constant(rng.integers(1, seq, (batch, MASKED)), tf.int32),
    }
    labels = tf.constant(rng.integers(5, config.vocab_size, (batch, MASKED)), tf.int32)
    order = tf.constant(rng.integers(0, 2, (batch,)), tf.int32)

    @tf.function(jit_compile=jit)
    def step():
        with (
            tf.GradientTape() as tape,
            trace_options(dropout=DropoutSeed(tf.constant([1, 2], tf.int64)), recompute=mode),
        ):
            out = model(batch_data, training=True, last_block_at_masked_only=True)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, out["mlm_logits"])
            ) + tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(order, out["sop_logits"])
            )
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(1e-5 * tf.convert_to_tensor(g))
        return loss

    step.get_concrete_function()  # trace apart from the timed steps
    base = _rss_mib()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        float(step())
        times.append(time.perf_counter() - start)
    peak = _rss_mib()
    if gpu:
        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
    return {"peak_mib": peak, "base_mib": base, "step_s": min(times), "device": "GPU" * gpu}


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_case(preset, mode, batch, seq, steps, jit=False) -> dict:
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        f"--presets={preset}",
        f"--modes={mode}",
        f"--batches={batch}",
        f"--seq={seq}",
        f"--steps={steps}",
        *(["--jit_compile"] if jit else []),
    ]
    return run_child(command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presets", default="large,xxlarge")
    parser.add_argument("--modes", default="none,layer")
    parser.add_argument("--batches", default="1,2")
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--budget_gib", type=float, default=16.0)
    parser.add_argument("--jit_compile", action="store_true", help="XLA-compile the step")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    presets, modes = args.presets.split(","), args.modes.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    if args.child:
        case = (presets[0], modes[0], batches[0], args.seq, args.steps, args.jit_compile)
        print(json.dumps(child(*case)))
        return
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    budget = args.budget_gib * 1024
    rows = []
    for preset in presets:
        for mode in modes:
            found = {
                b: run_case(preset, mode, b, args.seq, args.steps, args.jit_compile)
                for b in batches
            }
            for b, r in found.items():
                print(f"  {preset} {mode} batch {b}: {json.dumps(r)}", flush=True)
            rows.append((preset, mode, found))
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print(
        f"seq {args.seq}, float32{', XLA' * args.jit_compile}, one step; peak = process peak RSS"
        f" (MiB); budget {args.budget_gib:g} GiB"
    )
    header = (
        "| shape | recompute | "
        + " | ".join(f"peak MiB (batch {b})" for b in batches)
        + " | MiB per example | fixed MiB | batch in budget | s/example | step time ×|"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    reference = {}
    for preset, mode, found in rows:
        if any("error" in r for r in found.values()):
            errors = "; ".join(r.get("error", "") for r in found.values())
            print(f"| {preset} | {mode} | error: {errors} |")
            continue
        lo, hi = min(batches), max(batches)
        slope = (found[hi]["peak_mib"] - found[lo]["peak_mib"]) / max(hi - lo, 1)
        fixed = found[lo]["peak_mib"] - slope * lo
        fits = int((budget - fixed) // slope) if slope > 0 else float("inf")
        per_example = found[hi]["step_s"] / hi
        reference.setdefault(preset, per_example)
        print(
            f"| {preset} | {mode} | "
            + " | ".join(f"{found[b]['peak_mib']:.0f}" for b in batches)
            + f" | {slope:.0f} | {fixed:.0f} | {fits} | {per_example:.1f}"
            f" | {per_example / reference[preset]:.2f} |"
        )


if __name__ == "__main__":
    main()
