"""One classifier fine-tuning step on ALBERT-xxlarge shapes: LoRA against full fine-tuning,
with and without activation recomputation.

    python -m bench.lora [--preset xxlarge] [--batch 1] [--seq 512] [--steps 1]
        [--rank 8] [--targets query,value] [--cases full:none,lora:none,full:layer,lora:layer]

`--cases` lists method:recompute pairs; the recompute modes are `recompute.MODES`, e.g.
`--cases lora:attention,full:attention` for selective recomputation of the attention
core (q, k, v kept, the [batch, heads, seq, seq] logits and probabilities recomputed).

Setting: `AlbertConfig.preset` shapes (v2: dropout 0), random weights and token ids, a
2-class head, float32. One step is the trainer's: forward pass under
`trace_options(recompute=mode)`, the cross-entropy, gradients of the trainable variables,
global-norm clipping and the project's AdamW update (`create_optimizer("adamw")`: two slots
per trainable variable), in one `tf.function`. LoRA (`albert_tf.modeling.lora.add_lora`):
rank `--rank`, alpha = rank, adapters on `--targets`, the encoder frozen, the head
trainable.

Each case runs in its own process (peaks do not mix):
- trainable: trainable parameters; opt_state_mib: the optimizer's variables (slots).
- base_mib: the resident set after building the model and the optimizer (before the
  step), peak_mib: the process's peak resident set (`ru_maxrss`) after the steps.
- step_s: the fastest of `--steps` timed steps (traced apart first).
The ratios are against the full fine-tuning case without recomputation. Steps take
minutes on a 2-core machine, and a loaded machine makes step times noisy: compare only
cases run in the same invocation (they run interleaved, one after the other).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

from bench.cases import run_child


def child(preset, method, mode, batch, seq, steps, rank, targets) -> dict:
    """One case in this process."""
    import keras
    import numpy as np
    import tensorflow as tf

    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.modeling.lora import LoraSettings, add_lora
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.modeling.trace_options import trace_options
    from albert_tf.training.optimization import WarmupPolynomialDecay, create_optimizer

    config = AlbertConfig.preset(preset, max_position_embeddings=max(512, seq))
    keras.utils.set_random_seed(0)
    model = AlbertClassifier(config, 2, dropout=0.0)
    model.build()
    if method == "lora":
        settings = LoraSettings(lora_rank=rank, lora_targets=tuple(targets))
        add_lora(model, settings, seed=0)
    variables = model.trainable_variables
    optimizer = create_optimizer("adamw", WarmupPolynomialDecay(1e-5, 100, 0, 1.0), 0.01)
    optimizer.build(variables)
    rng = np.random.default_rng(0)
    inputs = {
        "input_ids": tf.constant(rng.integers(5, config.vocab_size, (batch, seq)), tf.int32),
        "input_mask": tf.ones((batch, seq), tf.int32),
        "segment_ids": tf.zeros((batch, seq), tf.int32),
    }
    labels = tf.constant(rng.integers(0, 2, (batch,)), tf.int32)

    @tf.function
    def step():
        with tf.GradientTape() as tape, trace_options(recompute=mode):
            logits = model(inputs, training=True)["logits"]
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    step.get_concrete_function()  # traced apart from the timed steps
    base = _rss_mib()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        float(step())
        times.append(time.perf_counter() - start)
    slots = [v for v in optimizer.variables if v.shape.rank]  # not the step counter
    return {
        "trainable": int(sum(np.prod(v.shape) for v in variables)),
        "opt_state_mib": sum(np.prod(v.shape) * np.dtype(v.dtype).itemsize for v in slots) / 2**20,
        "base_mib": base,
        "peak_mib": _rss_mib(),
        "step_s": min(times),
    }


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_case(args, method, mode) -> dict:
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        f"--preset={args.preset}",
        f"--cases={method}:{mode}",
        f"--batch={args.batch}",
        f"--seq={args.seq}",
        f"--steps={args.steps}",
        f"--rank={args.rank}",
        f"--targets={args.targets}",
    ]
    return run_child(command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="xxlarge")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--targets", default="query,value")
    parser.add_argument("--cases", default="full:none,lora:none,full:layer,lora:layer")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [tuple(c.split(":")) for c in args.cases.split(",")]
    if args.child:
        (method, mode), targets = cases[0], args.targets.split(",")
        case = (args.preset, method, mode, args.batch, args.seq, args.steps, args.rank, targets)
        print(json.dumps(child(*case)))
        return
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = {}
    for method, mode in cases:
        rows[(method, mode)] = found = run_case(args, method, mode)
        print(f"  {method} recompute={mode}: {json.dumps(found)}", flush=True)
    ref = rows.get(("full", "none"), {})
    print(
        f"\n{args.preset}, seq {args.seq}, batch {args.batch}, LoRA rank {args.rank} on "
        f"{args.targets}, AdamW\n"
        "| case | recompute | trainable | optimizer state MiB | peak RSS MiB | "
        "peak vs full | step s | step vs full |\n|---|---|---|---|---|---|---|---|"
    )
    for (method, mode), r in rows.items():
        if "error" in r:
            print(f"| {method} | {mode} | error: {r['error']} |")
            continue
        peak = f"{r['peak_mib'] / ref['peak_mib']:.0%}" if "peak_mib" in ref else "?"
        speed = f"{r['step_s'] / ref['step_s']:.2f}×" if "step_s" in ref else "?"
        print(
            f"| {method} | {mode} | {r['trainable']:,} | {r['opt_state_mib']:.1f} | "
            f"{r['peak_mib']:.0f} | {peak} | {r['step_s']:.1f} | {speed} |"
        )


if __name__ == "__main__":
    main()
