"""Throughput of the trainer itself (albert_tf.training.Trainer), with MFU and peak memory.

    python -m bench.train [--config base] [--cases float32-xla,bfloat16-noxla]

Setting (as bench/model.py and the peers' benchmarks): ALBERT-base, batch 8 × 128, 20 masked
positions, random token ids, dropout 0. Unlike bench/model.py this runs the whole training
step of the runner: `Trainer` with LAMB, the exact global MLM/SOP losses, all-reduce, global
clip-norm and `steps_per_loop` steps per tf.function call. Each case runs in its own process.

MFU: model FLOPs per trained sequence = 3 × forward FLOPs (forward + backward), forward
counted analytically (every matmul: 2·m·n·k; attention scores and context; the MLM head at
the masked positions), divided by a *measured* matmul peak of this machine (a 4096² GEMM in
the case's dtype, best of several runs), so MFU says how close the step is to what the
hardware can do here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [f"{dtype}-{xla}" for dtype in ("float32", "bfloat16") for xla in ("xla", "noxla")]


def forward_flops(config, seq: int, masked: int) -> float:
    """FLOPs of one sequence's forward pass (matmuls only; 2 per multiply-add)."""
    h, e, i, v, L = (
        config.hidden_size,
        config.embedding_size,
        config.intermediate_size,
        config.vocab_size,
        config.num_hidden_layers,
    )
    per_token_layer = 2 * (4 * h * h + 2 * h * i) + 2 * 2 * seq * h  # QKVO, FFN, attention
    flops = seq * (2 * e * h + L * per_token_layer)  # projection + layers
    flops += 2 * h * h  # pooler
    flops += masked * (2 * h * e + 2 * e * v) + 2 * h * 2  # MLM head, SOP head
    return float(flops)


def matmul_peak(dtype: str) -> float:
    import tensorflow as tf

    n = 4096
    a = tf.random.normal((n, n), dtype=tf.float32)
    b = tf.random.normal((n, n), dtype=tf.float32)
    if dtype == "bfloat16":
        a, b = tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16)
    mm = tf.function(lambda x, y: tf.matmul(x, y))
    mm(a, b).numpy()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        mm(a, b).numpy()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def run_case(case: str, args) -> dict:
    dtype, xla = case.split("-")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from albert_tf import AlbertConfig
    from albert_tf.training import PretrainingTask, Trainer, TrainerConfig
    from bench.model import make_batch

    config = AlbertConfig.preset(args.config)
    data = make_batch(np, args.batch, args.seq, args.masked, config.vocab_size, args.seed)
    data["next_sentence_labels"] = data["next_sentence_labels"][:, None]

    def fn(ctx):
        return tf.data.Dataset.from_tensors(data).repeat()

    out = os.path.join(args.tmp, case)
    steps = args.loops * args.steps_per_loop
    tc = TrainerConfig(
        output_dir=out,
        num_train_steps=10**6,
        learning_rate=1e-4,
        optimizer=args.optimizer,
        steps_per_loop=args.steps_per_loop,
        save_checkpoints_steps=10**6,
        jit_compile=xla == "xla",
        dtype=dtype,
    )
    trainer = Trainer(
        PretrainingTask(config, args.seq, args.masked),
        tc,
        tf.distribute.get_strategy(),
        fn,
        log=lambda *_: None,
    )
    n = tf.constant(args.steps_per_loop)
    t = time.perf_counter()
    trainer._train_loop(trainer.train_iterator, n)  # trace + compile + first loop
    first = time.perf_counter() - t
    times = []
    for _ in range(args.loops):
        t = time.perf_counter()
        totals = trainer._train_loop(trainer.train_iterator, n)
        float(totals["count"])
        times.append(time.perf_counter() - t)
    rates = [args.batch * args.steps_per_loop / x for x in times]
    rate = statistics.median(rates)
    flops = 3 * forward_flops(config, args.seq, args.masked)
    peak = matmul_peak(dtype)
    return dict(
        case=case,
        dtype=dtype,
        xla=xla == "xla",
        steps=steps,
        seq_per_s=round(rate, 3),
        first_loop_s=round(first, 1),
        model_gflop_per_seq=round(flops / 1e9, 2),
        achieved_gflops=round(rate * flops / 1e9, 1),
        matmul_peak_gflops=round(peak / 1e9, 1),
        mfu=round(rate * flops / peak, 3),
        peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--config", default="base")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--masked", type=int, default=20)
    p.add_argument("--steps_per_loop", type=int, default=5)
    p.add_argument("--loops", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--optimizer", default="lamb", choices=["lamb", "adamw", "lamb_keras", "adamw_keras"]
    )
    p.add_argument("--tmp", default="/tmp/albert-bench-train")
    p.add_argument(
        "--peers",
        default=os.path.join(
            os.environ.get("PEERS_HOME", os.path.expanduser("~/.cache/albert-peers")), "results"
        ),
    )
    p.add_argument("--json_out")
    args = p.parse_args()
    if args.case:
        print("RESULT " + json.dumps(run_case(args.case, args)), flush=True)
        return
    passthrough = [
        f"--{k}={getattr(args, k)}"
        for k in (
            "config",
            "batch",
            "seq",
            "masked",
            "steps_per_loop",
            "loops",
            "seed",
            "optimizer",
            "tmp",
        )
    ]
    from bench.cases import run_cases

    results = run_cases("bench.train", args.cases.split(","), passthrough)
    peer = None
    path = os.path.join(args.peers, "kh_train_base_xla.json")
    if os.path.exists(path):
        with open(path) as f:
            peer = json.load(f).get("seq_per_s_median")
    print(
        f"\nTrainer step, ALBERT-{args.config}, batch {args.batch} x {args.seq}, "
        f"{args.optimizer}, "
        f"{os.cpu_count()} cores; median of {args.loops} loops x {args.steps_per_loop} steps\n"
    )
    print(
        "| case | seq/s | GFLOP/s | matmul peak GFLOP/s | MFU | peak RSS MiB | "
        "vs KerasHub fp32 XLA |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        ratio = f"{r['seq_per_s'] / peer:.2f}x (peer {peer})" if peer else "n/a"
        print(
            f"| {r['case']} | {r['seq_per_s']:.2f} | {r['achieved_gflops']} | "
            f"{r['matmul_peak_gflops']} | {r['mfu']:.0%} | {r['peak_rss_mib']} | {ratio} |"
        )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"results": results, "peer_kh_train_base_xla": peer}, f, indent=1)


if __name__ == "__main__":
    main()
