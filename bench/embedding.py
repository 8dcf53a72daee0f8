"""Sentence-embedding throughput, raw text → L2-normalized vectors at batch 32: the encoder
SavedModel's `vectors` (mean pooling, normalized; tokenization in the graph) against
sentence-transformers-style mean pooling on Hugging Face `AlbertModel` (PyTorch CPU).

    python -m bench.embedding [--config base] [--batches 20] [--batch_size 32] [--threads 0]
                              [--hf_attention sdpa] [--lite float32,int8]

Both sides have the same shape (an AlbertConfig preset, the vocabulary of the German
ALBERT-recipe SentencePiece model of $ALBERT_TF_DATA/spm) and random weights (speed does
not depend on them). Texts: STS-B dev sentences ($ALBERT_TF_DATA/glue/STS-B), first and
second of each pair, in order, `--batch_size` per request.
  albert_tf    `export --task encoder --pooling mean --normalize` of a random AlbertEncoder,
               tf.saved_model.load in this process, signatures["vectors"](text) →
               embeddings (rows sorted by length, in `text_ops.by_length`'s groups; the
               projections and FFN on the real tokens only, each attention core on its
               group's grid, `albert_tf.modeling.packing`); also signatures["embed"],
               which pads the request to one bucket and returns the [B, S, H] sequence
               too;
  transformers AlbertTokenizer (the Rust "fast" one of transformers 5)(batch,
               padding=True: dynamic padding to the batch's longest, truncation at 128) →
               AlbertModel (`--hf_attention`, default sdpa: what sentence-transformers
               loads)(...).last_hidden_state → the masked mean over real tokens →
               F.normalize, under torch.inference_mode (what sentence-transformers'
               Pooling(mean) + Normalize compute).
With --lite: the same export's LiteRT files (`export_tflite`, each --lite precision) through
`LiteModel.vectors` (text in; the rows in length-sorted groups of 8, each call padded to its
group's longest row, as `vectors` computes them; XNNPack, every core);
int8 is dynamic-range quantization (int8 weights, float activations), a different precision
(its STS-B cost is measured apart, docs/design/embeddings.md), so "transformers int8" (the
same AlbertModel with torch's dynamic int8 Linear layers) is timed beside it as its
like-for-like peer.
Two warm-up requests each, then the timed requests rotate the sides' order from request to
request so that load from other jobs falls on all alike.
Throughput = sentences / total time of a side; the median request latency is printed
beside it. Peak RSS: the process' maximum resident size after loading and warming each
side (the second figure includes both frameworks).

Compute: the positions each side puts through its projections and FFN (ours: the real
tokens, the packed encoder of `albert_tf.modeling.packing`, attention on each length-sorted
group's grid; theirs: each request padded to its longest) and the encoder's floating-point
operations (`encoder_flops`: the matmuls and attention of every layer, 2 per multiply-add), divided
by the side's time, against the rate this process reaches on one large float32 matmul
(`matmul_rate`): how close each side already runs to the machine, so what a faster
`vectors` could still gain other than by computing fewer positions. The ratio is printed
as the product of the two: fewer FLOPs (theirs / ours) × a faster rate (ours / theirs).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time

from bench.peers.process_memory import peak_rss_mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def sts_sentences() -> list[str]:
    path = os.path.join(DATA, "glue", "STS-B", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [s for r in rows for s in (r[7], r[8])]


def encoder_flops(config, length: int, rows: int, tokens: int | None = None) -> float:
    """Floating-point operations of the encoder on `rows` sequences padded to `length`
    positions, `tokens` of them computed by the position-wise layers (all rows × length
    unless given: the packed encoder computes only the real tokens there): the embedding
    projection E→H, then per layer Q, K, V and output projections (4·H²) and the FFN
    (2·H·F) per computed position, and scores and weighted values (2·length·H) per grid
    position; 2 per multiply-add."""
    H, F = config.hidden_size, config.intermediate_size
    tokens = rows * length if tokens is None else tokens
    per_token = config.embedding_size * H + config.num_hidden_layers * (4 * H * H + 2 * H * F)
    attention = config.num_hidden_layers * 2 * length * H
    return 2.0 * (tokens * per_token + rows * length * attention)


def matmul_rate(tf, n: int = 2048, reps: int = 10) -> float:
    """GFLOP/s of a float32 [n, n] × [n, n] matmul in this process (the best of `reps`)."""
    a = tf.random.normal([n, n])
    mm = tf.function(lambda x: tf.matmul(x, x))
    mm(a).numpy()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        mm(a).numpy()
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best / 1e9


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="base", help="an AlbertConfig preset (base, large...)")
    p.add_argument("--batches", type=int, default=20, help="timed requests per side")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--threads", type=int, default=0, help="CPU threads each (0: defaults)")
    p.add_argument("--hf_attention", default="sdpa", choices=("sdpa", "eager"))
    p.add_argument("--lite", default="", help="LiteRT precisions to time too: float32,int8")
    args = p.parse_args()
    args.lite = [q for q in args.lite.split(",") if q]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import numpy as np
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.modeling.encoder import AlbertEncoder
    from albert_tf.serving.export import export
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer
    from data_pipeline.tokenization.spec import TokenizerSpec

    spm = os.path.join(DATA, "spm", "de-30k-clean.model")
    vocab = AlbertTokenizer(spm).vocab_size
    config = AlbertConfig.from_dict(
        dict(AlbertConfig.preset(args.config).to_dict(), vocab_size=vocab)
    )
    texts = sts_sentences()
    n = args.batch_size
    batches = [texts[i * n : (i + 1) * n] for i in range(args.batches + 2)]
    with tempfile.TemporaryDirectory() as tmp:
        encoder = AlbertEncoder(config)
        encoder.build()
        save_checkpoint(encoder, os.path.join(tmp, "enc"))
        version = export(
            "encoder",
            os.path.join(tmp, "enc"),
            os.path.join(tmp, "serving"),
            tokenizer=TokenizerSpec.from_files(spm),
            max_seq_length=128,
            pooling="mean",
            normalize=True,
        )
        lite = {}
        if args.lite:
            from albert_tf.serving.export import export_tflite
            from albert_tf.serving.tflite_predict import LiteModel

            files = export_tflite(
                "encoder",
                os.path.join(tmp, "enc"),
                os.path.join(tmp, "lite"),
                tuple(args.lite),
                tokenizer=TokenizerSpec.from_files(spm),
                max_seq_length=128,
                pooling="mean",
                normalize=True,
            )
            lite = {q: LiteModel(f) for q, f in zip(args.lite, files)}
        del encoder
        signatures = tf.saved_model.load(version).signatures
        vectors, embed = signatures["vectors"], signatures["embed"]

        def ours(batch):
            return vectors(text=tf.constant(batch))["embeddings"].numpy()

        def ours_embed(batch):
            return embed(text=tf.constant(batch))["embeddings"].numpy()

        for b in batches[:2]:
            ours(b)
            ours_embed(b)
        rss_ours = peak_rss_mb()

        import torch
        import torch.nn.functional as F
        import transformers

        from albert_tf.checkpoints.transformers import config_to_transformers

        if args.threads:
            torch.set_num_threads(args.threads)
        torch.manual_seed(0)
        hf_config = transformers.AlbertConfig(
            attn_implementation=args.hf_attention, **config_to_transformers(config)
        )
        hf = transformers.AlbertModel(hf_config, add_pooling_layer=False).eval()
        with open(spm, "rb") as src, open(os.path.join(tmp, "spiece.model"), "wb") as dst:
            dst.write(src.read())
        hf_tokenizer = transformers.AlbertTokenizer.from_pretrained(tmp)

    hf_int8 = None
    if "int8" in args.lite:
        hf_int8 = torch.ao.quantization.quantize_dynamic(hf, {torch.nn.Linear}, dtype=torch.qint8)

    def theirs(batch, model=hf):
        with torch.inference_mode():
            enc = hf_tokenizer(
                batch, padding=True, truncation=True, max_length=128, return_tensors="pt"
            )
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return F.normalize(pooled, p=2, dim=1).numpy()

    extra = {f"albert_tf lite {q}": m.vectors for q, m in lite.items()}
    if hf_int8 is not None:
        extra["transformers int8"] = functools.partial(theirs, model=hf_int8)
    for b in batches[:2]:
        theirs(b)
        for fn in extra.values():
            fn(b)
    rss_both = peak_rss_mb()
    got = ours(batches[0])
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # The two signatures of one export answer alike (the length-aware path is exact).
    assert np.abs(got - ours_embed(batches[0])).max() < 1e-5
    if "albert_tf lite float32" in extra:  # the float32 file answers as the SavedModel
        assert np.abs(got - extra["albert_tf lite float32"](batches[0])).max() < 1e-4
    # Token positions each side computes, request by request (the same tokenizer).
    from albert_tf.serving.text_ops import by_length

    def our_groups(lengths):
        """(rows, length, tokens) of each group `vectors` computes: by_length itself, run
        eagerly on the lengths with a forward that only records its groups."""
        seen = []

        def record(ids, mask, segments):
            seen.append((int(mask.shape[0]), int(mask.shape[1]), int(tf.reduce_sum(mask))))
            return tf.zeros([tf.shape(ids)[0], 1])

        mask = tf.constant((np.arange(128)[None, :] < np.array(lengths)[:, None]).astype("int32"))
        by_length(record, mask, mask, tf.zeros_like(mask), 128, exact=True)
        return seen

    python_tokenizer = AlbertTokenizer(spm)
    flops = {"albert_tf vectors": 0.0, "transformers + mean": 0.0}
    positions = {"albert_tf vectors": 0, "transformers + mean": 0, "real tokens": 0}
    for batch in batches[2:]:
        lengths = [min(len(python_tokenizer.encode(t)) + 2, 128) for t in batch]
        positions["real tokens"] += sum(lengths)
        flops["transformers + mean"] += encoder_flops(config, max(lengths), len(lengths))
        positions["transformers + mean"] += max(lengths) * len(lengths)
        for rows, length, tokens in our_groups(lengths):  # packed: real tokens only
            flops["albert_tf vectors"] += encoder_flops(config, length, rows, tokens)
            positions["albert_tf vectors"] += tokens
    peak = matmul_rate(tf)
    load_start = os.getloadavg()

    functions = {"albert_tf vectors": ours, "transformers + mean": theirs}
    functions.update({"albert_tf embed": ours_embed, **extra})
    times = {name: [] for name in functions}
    sides = list(functions.items())
    for i, batch in enumerate(batches[2:]):
        k = i % len(sides)
        for name, fn in sides[k:] + sides[:k]:
            start = time.perf_counter()
            fn(batch)
            times[name].append(time.perf_counter() - start)
    print(
        f"embeddings, ALBERT-{args.config}, batch {n}, {args.batches} requests each "
        f"(STS-B dev), {os.cpu_count()} CPUs, TF {tf.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads, {args.hf_attention} attention, tokenizer "
        f"{type(hf_tokenizer).__name__}{' (fast)' if hf_tokenizer.is_fast else ''})"
    )
    print(f"{'':22s} {'sentences/s':>12s} {'median ms':>10s}")
    rates = {}
    for name, t in times.items():
        rates[name] = n * len(t) / sum(t)
        print(f"{name:22s} {rates[name]:12.1f} {1000 * statistics.median(t):10.1f}")
    for name in ("albert_tf vectors", "albert_tf embed", *(n for n in extra if "lite" in n)):
        ratio = rates[name] / rates["transformers + mean"]
        print(f"ratio {name} / transformers: {ratio:.2f}x (target >= 2x)")
    if "transformers int8" in rates and "albert_tf lite int8" in rates:
        ratio = rates["albert_tf lite int8"] / rates["transformers int8"]
        print(f"ratio albert_tf lite int8 / transformers int8: {ratio:.2f}x")
    print(
        f"positions through the FFN: ours {positions['albert_tf vectors']:,}, theirs "
        f"{positions['transformers + mean']:,}, real tokens {positions['real tokens']:,}"
    )
    for name, total in flops.items():
        rate = total / sum(times[name]) / 1e9
        print(f"{name}: {rate:.0f} GFLOP/s in the encoder, {rate / peak:.0%} of one large matmul's")
    print(f"one 2048² float32 matmul: {peak:.0f} GFLOP/s")
    ours_v, theirs_v = "albert_tf vectors", "transformers + mean"
    fewer = flops[theirs_v] / flops[ours_v]
    faster = (flops[ours_v] / sum(times[ours_v])) / (flops[theirs_v] / sum(times[theirs_v]))
    print(
        f"ratio {ours_v} / transformers = {fewer:.2f} (their encoder FLOPs / ours) × "
        f"{faster:.2f} (our GFLOP/s / theirs)"
    )
    print(f"peak RSS: {rss_ours:.0f} MB after albert_tf, {rss_both:.0f} MB with both loaded")
    load_end = os.getloadavg()[0]
    print(f"load average (1 min): {load_start[0]:.1f} at the start, {load_end:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
