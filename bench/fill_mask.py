"""Fill-mask latency at batch 1: albert_tf's `MaskFiller`, its `export --task fill_mask`
SavedModel and float32 LiteRT file vs Hugging Face's fill-mask pipeline on the same weights.

    python -m bench.fill_mask [--config base] [--calls 30] [--top_k 5] [--threads 1]

One model with random weights (latency does not depend on them) in both frameworks: a
Hugging Face AlbertForMaskedLM of the config (ALBERT-base by default; vocabulary of the
German ALBERT-recipe SentencePiece model of $ALBERT_TF_DATA/spm) saved with save_pretrained,
and our AlbertPretrainer loaded from it (read_transformers + assign_official), also exported
as the fill_mask SavedModel (loaded in this process; text in, candidates out) and LiteRT
file (tflite_predict's LiteModel.fill: the Python [MASK] rule, the file). The inputs
are real sentences (the 2021 inaugural address) with one word masked, one text per call;
each call goes from text to the top-k candidates (tokenization included). Median and 90th
percentile over the calls after a warm-up; both sides check that they agree on the
candidates first. CPU threads: each framework's default, or `--threads` for both
(TensorFlow's intra- and inter-op pools, torch's, the LiteRT interpreter's): on a machine
shared with other jobs,
torch's default OpenMP pool can spend most of its time waiting for descheduled threads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def sentences(n: int) -> list[str]:
    path = os.path.join(DATA, "corpus", "en_speeches", "inaugural", "2021-Biden.txt")
    with open(path, encoding="utf-8") as f:
        lines = [line.split() for line in f if len(line.split()) > 30]
    out = []
    for words in lines[:n]:
        words = words[:30]
        out.append(" ".join(words[:15] + ["[MASK]"] + words[16:]))
    return out


def timed(fn, texts, calls: int) -> tuple[float, float]:
    """(median, p90) milliseconds of fn(text) over `calls` calls after 3 warm-up calls."""
    for text in texts[:3]:
        fn(text)
    times = []
    for i in range(calls):
        text = texts[i % len(texts)]
        start = time.perf_counter()
        fn(text)
        times.append(1000 * (time.perf_counter() - start))
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="base", help="an AlbertConfig preset (base, large...)")
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--top_k", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="CPU threads each (0: defaults)")
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import numpy as np
    import tensorflow as tf
    import torch
    import transformers

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
        torch.set_num_threads(args.threads)

    from albert_tf.checkpoints import assign_official, read_transformers, save_checkpoint
    from albert_tf.checkpoints.transformers import config_to_transformers
    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.modeling.models import AlbertPretrainer
    from albert_tf.serving.export import export_formats
    from albert_tf.serving.tflite_predict import LiteModel
    from albert_tf.training.fill_mask import MaskFiller
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer
    from data_pipeline.tokenization.spec import TokenizerSpec

    spm = os.path.join(DATA, "spm", "de-30k-clean.model")
    tokenizer = AlbertTokenizer(spm)
    config = AlbertConfig.preset(args.config)
    config = AlbertConfig.from_dict(dict(config.to_dict(), vocab_size=tokenizer.vocab_size))
    with tempfile.TemporaryDirectory() as directory:
        fields = config_to_transformers(config)
        hf_config = transformers.AlbertConfig(attn_implementation="eager", **fields)
        torch.manual_seed(0)
        hf = transformers.AlbertForMaskedLM(hf_config).eval()
        hf.save_pretrained(directory)
        with open(spm, "rb") as src, open(os.path.join(directory, "spiece.model"), "wb") as dst:
            dst.write(src.read())
        hf_tokenizer = transformers.AlbertTokenizer.from_pretrained(directory)
        ours_config, weights, _ = read_transformers(directory)
        model = AlbertPretrainer(ours_config)
        model.build()
        assign_official(model, weights, directory)
        save_checkpoint(model, os.path.join(directory, "pretrainer"))
        version, lite_file = export_formats(
            "fill_mask",
            os.path.join(directory, "pretrainer"),
            os.path.join(directory, "sm"),
            ("savedmodel", "tflite"),
            tokenizer=TokenizerSpec.from_files(spm),
            max_seq_length=128,
            top_k=args.top_k,
        )
        saved = tf.saved_model.load(version).signatures["fill_mask"]
        lite = LiteModel(lite_file, args.threads or None)

    texts = sentences(max(args.calls, 3))
    filler = MaskFiller(model, tokenizer)
    pipe = transformers.pipeline(
        "fill-mask", model=hf, tokenizer=hf_tokenizer, top_k=args.top_k, device="cpu"
    )
    ours_best = [f.token_id for f in filler(texts[:1], args.top_k)[0][0]]
    theirs_best = [c["token"] for c in pipe(texts[0])]
    saved_best = saved(text=tf.constant(texts[:1]))["token_ids"][0, 0].numpy().tolist()
    lite_best = [c["token_id"] for c in lite.fill(texts[:1])[0][0]]
    if not ours_best == theirs_best == saved_best == lite_best:
        print(
            f"candidates differ: ours {ours_best} (SavedModel {saved_best}, LiteRT "
            f"{lite_best}), HF {theirs_best}"
        )
        return 1

    rows = [
        ("albert_tf MaskFiller", timed(lambda t: filler([t], args.top_k), texts, args.calls)),
        ("albert_tf SavedModel", timed(lambda t: saved(text=tf.constant([t])), texts, args.calls)),
        ("albert_tf LiteRT", timed(lambda t: lite.fill([t]), texts, args.calls)),
        ("transformers pipeline", timed(pipe, texts, args.calls)),
    ]
    tokens = np.mean([len(hf_tokenizer(t)["input_ids"]) for t in texts])
    print(
        f"fill-mask, batch 1, ALBERT-{args.config} (V={config.vocab_size}), "
        f"{tokens:.0f} tokens/text, top_k={args.top_k}, {args.calls} calls, "
        f"{os.cpu_count()} CPUs, threads: TF "
        f"{tf.config.threading.get_intra_op_parallelism_threads() or 'default'}, torch "
        f"{torch.get_num_threads()} ({torch.__version__})"
    )
    print(f"{'':24s} {'median ms':>10s} {'p90 ms':>10s}")
    for name, (median, p90) in rows:
        print(f"{name:24s} {median:10.1f} {p90:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
