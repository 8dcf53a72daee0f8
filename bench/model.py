"""Forward and train-step throughput of ALBERT on this machine, with peak memory.

    python -m bench.model                      # every case, one subprocess each, then a table
    python -m bench.model --config base --cases infer-float32-xla,train-bfloat16-xla
    python -m bench.model --case train-float32-xla   # one case in this process (RESULT line)

Setting (the same as the peers' benchmarks, so figures compare as ratios): random weights,
batch 8 × 128, dropout 0, AdamW(1e-4), 20 masked positions per sequence; median of 5
repetitions × 10 steps after 3 warm-up steps. "train" is one AlbertPretrainer step (MLM at
the masked positions + SOP loss, gradients, AdamW update); "infer" is the encoder forward.
"floor" runs only the matrix products of that forward pass (the same shapes, dtype and
XLA setting, chained so that none can be skipped; no LayerNorm, softmax, GELU, bias,
cast or transpose): no implementation built on the same GEMM kernels can infer faster,
so "% of floor" says how much is left to gain, and the floor's own ratio to KerasHub
bounds the inference speed-up any implementation could show on this machine.
Each case runs in its own process so that its peak RSS is its own.

With --peers DIR (default $PEERS_HOME/results or ~/.cache/albert-peers/results), peer
results written by the peers' benchmarks are read and ratios printed beside ours.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [
    f"{mode}-{dtype}-{xla}"
    for mode in ("infer", "floor", "train")
    for dtype in ("float32", "bfloat16")
    for xla in ("xla", "noxla")
]
# Peer result files (the peers' benchmark names) that each of our cases is compared with.
PEER_BASELINE = {
    "infer": "kh_infer_base_xla",
    "floor": "kh_infer_base_xla",
    "train": "kh_train_base_xla",
}


def make_batch(np, batch, seq, masked, vocab, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, size=(batch, seq)).astype(np.int32)
    segments = np.zeros_like(ids)
    segments[:, seq // 2 :] = 1
    positions = np.stack(
        [np.sort(rng.choice(np.arange(1, seq - 1), masked, replace=False)) for _ in range(batch)]
    ).astype(np.int32)
    labels = rng.integers(5, vocab, size=(batch, masked)).astype(np.int32)
    ids_masked = ids.copy()
    np.put_along_axis(ids_masked, positions, 4, axis=1)  # [MASK]
    return dict(
        input_ids=ids_masked,
        input_mask=np.ones_like(ids),
        segment_ids=segments,
        masked_lm_positions=positions,
        masked_lm_ids=labels,
        masked_lm_weights=np.ones_like(labels, np.float32),
        next_sentence_labels=rng.integers(0, 2, size=(batch,)).astype(np.int32),
    )


def gemm_floor(tf, config, batch: int, seq: int, dtype):
    """A function running the encoder forward pass's matrix products only.

    Per block application (layers × inner_group_num), as `AlbertEncoder` does them:
    x[B*S, H] @ W_qkv[H, 3H]; the attention's two batched products [B*N, S, D] x
    [B*N, D, S] and [B*N, S, S] x [B*N, S, D]; the output projection [H, H]; the FFN
    [H, I] and [I, H]. Plus the embedding projection [B*S, E] x [E, H] (when E != H) and
    the pooler [B, H] x [H, H]. Each product consumes the previous one's result (through
    reshapes and a leading-axis slice), so none runs concurrently with another and none
    is pruned; the FLOPs equal the encoder's matmul FLOPs (tests/tools/test_bench.py).

    The values do not matter to the arithmetic's speed but are kept near unit size, so
    that nothing overflows to inf or NaN at any depth: the weights are (scaled)
    orthonormal matrices, the FFN's second is the transpose of its first, and the
    attention's keys and values are one constant K [B*N, S, D] with orthonormal columns
    (rows when S < D), so that the attention maps heads to heads·KᵀK = heads (or to a
    fixed projection of them).
    """
    c = config
    h, n, d = c.hidden_size, c.num_attention_heads, c.attention_head_size
    rng = tf.random.Generator.from_seed(0)

    def orthonormal(*shape, gain=1.0):
        """[..., rows, cols] with orthonormal rows (rows <= cols) or columns."""
        *outer, rows, cols = shape
        q, _ = tf.linalg.qr(rng.normal(outer + [max(rows, cols), min(rows, cols)]))
        q = q if rows >= cols else tf.linalg.matrix_transpose(q)
        return tf.cast(gain * q, dtype)

    w_in = orthonormal(c.embedding_size, h, gain=(h / c.embedding_size) ** 0.5)
    # Only a third of each product's values feed the attention: gain √3 keeps their size.
    w_qkv = orthonormal(h, 3 * h, gain=3**0.5)
    w_out, w_pool = orthonormal(h, h), orthonormal(h, h)
    w_ffn_in = orthonormal(h, c.intermediate_size)
    w_ffn_out = tf.identity(tf.transpose(w_ffn_in))  # w_ffn_in @ w_ffn_out = I_H
    keys = orthonormal(batch * n, seq, d)  # [B*N, S, D], keys and values
    embedded = tf.cast(rng.normal([batch * seq, c.embedding_size]), dtype)

    def forward():
        # The encoder projects E -> H only when E != H (as the official code).
        x = tf.matmul(embedded, w_in) if c.embedding_size != h else embedded  # [B*S, H]
        for _ in range(c.num_hidden_layers * c.inner_group_num):  # blocks applied
            qkv = tf.matmul(x, w_qkv)  # [B*S, 3H]
            heads = tf.reshape(qkv, [3 * batch * n, seq, d])[: batch * n]  # [B*N, S, D]
            scores = tf.matmul(heads, keys, transpose_b=True)  # [B*N, S, S]
            context = tf.reshape(tf.matmul(scores, keys), [batch * seq, h])
            x = tf.matmul(tf.matmul(tf.matmul(context, w_out), w_ffn_in), w_ffn_out)
        pooled = tf.matmul(tf.reshape(x, [batch, seq * h])[:, :h], w_pool)
        return x, pooled

    return forward


def run_case(case: str, args) -> dict:
    mode, dtype, xla = case.split("-")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np
    import tensorflow as tf

    from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer

    keras.utils.set_random_seed(args.seed)
    if dtype == "bfloat16":
        keras.config.set_dtype_policy("mixed_bfloat16")
    config = AlbertConfig.preset(args.config)  # v2: dropout 0
    data = make_batch(np, args.batch, args.seq, args.masked, config.vocab_size, args.seed)
    batch = {k: tf.constant(v) for k, v in data.items()}
    jit = xla == "xla"

    if mode == "floor":
        model = None
        forward = tf.function(
            gemm_floor(
                tf, config, args.batch, args.seq, tf.bfloat16 if dtype == "bfloat16" else tf.float32
            ),
            jit_compile=jit,
        )
        step = lambda: forward()[0].numpy()
        losses = None
    elif mode == "infer":
        model = AlbertEncoder(config)
        model.build()
        features = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
        forward = tf.function(lambda x: model(x)["sequence_output"], jit_compile=jit)
        step = lambda: forward(features).numpy()
        losses = None
    else:
        model = AlbertPretrainer(config)
        model.build()
        optimizer = keras.optimizers.AdamW(learning_rate=1e-4)
        optimizer.build(model.trainable_variables)
        losses = []

        @tf.function(jit_compile=jit)
        def train_step(x):
            with tf.GradientTape() as tape:
                # As the trainer: the last block only where the losses look.
                out = model(x, training=True, last_block_at_masked_only=True)
                mlm = keras.losses.sparse_categorical_crossentropy(
                    x["masked_lm_ids"], out["mlm_logits"], from_logits=True
                )
                weights = x["masked_lm_weights"]
                mlm_loss = tf.reduce_sum(mlm * weights) / (tf.reduce_sum(weights) + 1e-5)
                sop_loss = tf.reduce_mean(
                    keras.losses.sparse_categorical_crossentropy(
                        x["next_sentence_labels"], out["sop_logits"], from_logits=True
                    )
                )
                loss = mlm_loss + sop_loss
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        step = lambda: losses.append(float(train_step(batch)))

    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.reps):
        t = time.perf_counter()
        for _ in range(args.steps):
            step()
        times.append(time.perf_counter() - t)
    rates = [args.batch * args.steps / t for t in times]
    result = dict(
        case=case,
        mode=mode,
        dtype=dtype,
        xla=jit,
        config=args.config,
        batch=args.batch,
        seq=args.seq,
        first_call_s=round(first, 2),
        seq_per_s_median=round(statistics.median(rates), 3),
        seq_per_s_min=round(min(rates), 3),
        seq_per_s_max=round(max(rates), 3),
        step_ms_median=round(1000 * statistics.median(times) / args.steps, 1),
        peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        params=int(model.count_params()) if model else None,
        tensorflow=tf.__version__,
        keras=keras.__version__,
        loadavg=os.getloadavg()[0],
    )
    if losses:
        result["loss_first_last"] = [round(losses[0], 4), round(losses[-1], 4)]
    return result


def peer_results(directory: str) -> dict:
    out = {}
    if directory and os.path.isdir(directory):
        for name in os.listdir(directory):
            if name.endswith(".json"):
                try:
                    with open(os.path.join(directory, name)) as f:
                        out[name[:-5]] = json.load(f)
                except (OSError, json.JSONDecodeError):
                    pass
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", help="run one case in this process and print its RESULT line")
    p.add_argument("--cases", default=",".join(CASES), help="comma list of cases to run")
    p.add_argument("--config", default="base")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--masked", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--peers",
        default=os.path.join(
            os.environ.get("PEERS_HOME", os.path.expanduser("~/.cache/albert-peers")), "results"
        ),
    )
    p.add_argument("--json_out", help="also write all results to this JSON file")
    args = p.parse_args()

    if args.case:
        print("RESULT " + json.dumps(run_case(args.case, args)), flush=True)
        return

    passthrough = [
        f"--{k}={getattr(args, k)}"
        for k in ("config", "batch", "seq", "masked", "warmup", "reps", "steps", "seed")
    ]
    from bench.cases import run_cases

    results = run_cases("bench.model", args.cases.split(","), passthrough)

    peers = peer_results(args.peers)
    print(
        f"\nALBERT-{args.config}, batch {args.batch} x {args.seq}, "
        f"{os.cpu_count()} CPU cores, median of {args.reps} x {args.steps} steps\n"
    )
    floors = {
        r["case"].split("-", 1)[1]: r["seq_per_s_median"] for r in results if r["mode"] == "floor"
    }
    print(
        "| case | seq/s | step ms | first call s | peak RSS MiB | % of floor "
        "| vs KerasHub fp32 XLA |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        peer = peers.get(PEER_BASELINE[r["mode"]], {}).get("seq_per_s_median")
        ratio = f"{r['seq_per_s_median'] / peer:.2f}x (peer {peer})" if peer else "n/a"
        floor = floors.get(r["case"].split("-", 1)[1]) if r["mode"] == "infer" else None
        share = f"{100 * r['seq_per_s_median'] / floor:.0f}%" if floor else ""
        print(
            f"| {r['case']} | {r['seq_per_s_median']:.2f} | {r['step_ms_median']} | "
            f"{r['first_call_s']} | {r['peak_rss_mib']} | {share} | {ratio} |"
        )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(
                {
                    "results": results,
                    "peers": {k: peers[k] for k in PEER_BASELINE.values() if k in peers},
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
