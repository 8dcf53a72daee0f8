"""Serving throughput of the classifier SavedModel that takes raw text, against prediction in
this process (Python tokenizer + Keras model), both from text to class probabilities.

    python -m bench.serving                                  # ALBERT-base, batch 1 and 32
    python -m bench.serving --config tiny                    # a quick check (2 small layers)
    python -m bench.serving --batch_sizes 1,8,32 --requests 128 --requests_batch1 32

Setting: a random-weight `AlbertClassifier` (2 labels; speed does not depend on the weights)
is written as a fine-tuned model directory (`albert_tf.checkpoints.finetuned`) and exported with
`albert_tf.serving.export` ("classifier", sst-2, max_seq_length 128, lower-cased, single sentence)
under --output_dir (its `finetuned/` and `saved_model/` are replaced on every run). The
requests are SST-2 dev sentences ($ALBERT_TF_DATA/glue/SST-2/dev.tsv), a request being one
batch of sentences:
  in-process  AlbertTokenizer → classifier_features.convert_examples (truncate, pack, pad to
              max_seq_length) → tf.function(model(..., training=False)["logits"],
              reduce_retracing=True) → softmax in numpy;
  SavedModel  tf.saved_model.load (in this process) → signatures["serving_default"]
              (tokenization, packing, model and softmax in the graph).
For each batch size both paths are warmed up (--warmup requests on dev sentences that are not
timed), then the timed requests alternate between the two paths (in-process first on even
requests, SavedModel first on odd), so that load from other jobs falls on both alike. The
Python tokenizer caches the ids of the words it has seen; the cache is emptied before each
batch size's warm-up, so timed sentences are new text to it, apart from words that the
warm-up sentences share with them. Throughput is the timed requests over their total time;
the median request latency of each path is printed beside it (its ratio is the steadier
figure when other jobs load the machine).

Also measured in a fresh subprocess that imports only tensorflow and tensorflow_text (no
state of this process, as a serving client starts): `tf.saved_model.load` wall time, and
the latency of its first request (one batch of the first batch size). The SavedModel files
were just written, so they are likely in the OS page cache.

The SavedModel's probabilities must equal the in-process ones within 1e-5 on every timed
sentence (max abs difference printed; exit status 1 if not). The target is the SavedModel
within 10% of in-process throughput: ratio (SavedModel req/s / in-process req/s) >= 0.9.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
SPM = os.path.join(DATA, "spm", "de-30k-clean.model")
SST2 = os.path.join(DATA, "glue", "SST-2")
LABELS = ["0", "1"]
TOLERANCE = 1e-5
TARGET_RATIO = 0.9

# The fresh client process: tensorflow and tensorflow_text only (nothing of this project).
CLIENT = """\
import json, sys, time
t0 = time.perf_counter()
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SentencePiece op kernels)
t1 = time.perf_counter()
path, texts = sys.argv[1], json.loads(sys.argv[2])
model = tf.saved_model.load(path)
t2 = time.perf_counter()
fn = model.signatures["serving_default"]
fn(text_a=tf.constant(texts))["probabilities"].numpy()
t3 = time.perf_counter()
assert not [m for m in sys.modules if m.split(".")[0] in ("albert_tf", "data_pipeline")]
print("RESULT " + json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "first_s": t3 - t2}))
"""


def make_config(name: str, max_seq_length: int):
    from albert_tf import AlbertConfig

    if name == "tiny":
        return AlbertConfig.preset(
            "base",
            embedding_size=64,
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=256,
            max_position_embeddings=max(128, max_seq_length),
        )
    return AlbertConfig.preset(name)


def fresh_client(version_dir: str, texts: list[str]) -> dict:
    """Load time and first-request latency in a new process (tensorflow + tensorflow_text)."""
    run = subprocess.run(
        [sys.executable, "-c", CLIENT, version_dir, json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd="/",
        env=dict(os.environ, PYTHONPATH="", TF_CPP_MIN_LOG_LEVEL="2"),
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    if run.returncode or not lines:
        raise RuntimeError(f"the fresh client failed:\n{run.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="base", choices=["base", "tiny"])
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--batch_sizes", default="1,32", help="comma list")
    p.add_argument(
        "--requests",
        type=int,
        default=256,
        help="sentences timed per batch size (batch sizes > 1), rounded down to whole batches",
    )
    p.add_argument(
        "--requests_batch1",
        type=int,
        default=64,
        help="sentences (= requests) timed for batch size 1",
    )
    p.add_argument("--warmup", type=int, default=2, help="warm-up requests per batch size")
    p.add_argument("--output_dir", default="/tmp/albert_bench_serving")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json_out", help="also write the results to this JSON file")
    args = p.parse_args()
    batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    if not batch_sizes or min(batch_sizes) < 1:
        sys.exit("--batch_sizes must be positive integers")
    if not os.path.exists(SPM) or not os.path.isdir(SST2):
        sys.exit(f"needs $ALBERT_TF_DATA ({DATA})")

    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import keras
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops for the load)

    from albert_tf.checkpoints.finetuned import SPM_FILE, save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.serving.export import export
    from data_pipeline.classification.benchmark_files import read_task
    from data_pipeline.classification.examples import Example
    from data_pipeline.classification.features import convert_examples
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer
    from data_pipeline.tokenization.spec import TokenizerSpec

    sentences = [e.text_a for e in read_task(SST2, "sst-2", "dev")]

    # --- the model, its fine-tuned directory and its SavedModel -----------------------------
    keras.utils.set_random_seed(args.seed)
    config = make_config(args.config, args.max_seq_length)
    model = AlbertClassifier(config, len(LABELS), dropout=0.0)
    model.build()
    finetuned_dir = os.path.join(args.output_dir, "finetuned")
    export_dir = os.path.join(args.output_dir, "saved_model")
    for d in (finetuned_dir, export_dir):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(args.output_dir, exist_ok=True)
    task = {
        "kind": "classifier",
        "task_name": "sst-2",
        "labels": LABELS,
        "regression": False,
        "num_choices": None,
        "max_seq_length": args.max_seq_length,
        "do_lower_case": True,
        "text_pair": False,
    }
    t = time.perf_counter()
    save_finetuned(model, finetuned_dir, TaskInfo.build(**task), TokenizerSpec.from_files(SPM))
    version_dir = export("classifier", finetuned_dir, export_dir)
    export_s = time.perf_counter() - t
    print(f"exported {version_dir} in {export_s:.1f} s", file=sys.stderr, flush=True)

    # --- a fresh client: load time and first request ----------------------------------------
    fresh = fresh_client(version_dir, sentences[: batch_sizes[0]])

    # --- the two paths, text → probabilities ------------------------------------------------
    tokenizer = AlbertTokenizer(os.path.join(finetuned_dir, SPM_FILE), do_lower_case=True)
    forward = tf.function(
        lambda batch: model(batch, training=False)["logits"], reduce_retracing=True
    )

    def in_process(texts):
        examples = [Example(f"request-{i}", text, None, None) for i, text in enumerate(texts)]
        features = convert_examples(examples, tokenizer, args.max_seq_length, LABELS)
        logits = forward(
            {
                k: tf.constant(features[k], tf.int32)
                for k in ("input_ids", "input_mask", "segment_ids")
            }
        ).numpy()
        logits = logits.astype(np.float64)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)).astype(np.float32)

    t = time.perf_counter()
    loaded = tf.saved_model.load(version_dir)
    load_here_s = time.perf_counter() - t
    serve = loaded.signatures["serving_default"]

    def saved_model(texts):
        return serve(text_a=tf.constant(texts))["probabilities"].numpy()

    paths = {"in_process": in_process, "saved_model": saved_model}
    results, max_diff = [], 0.0
    for bs in batch_sizes:
        n = args.requests_batch1 if bs == 1 else args.requests
        requests = max(1, n // bs)
        timed = [sentences[i * bs : (i + 1) * bs] for i in range(requests)]
        if requests * bs > len(sentences):
            sys.exit(f"batch {bs}: {requests * bs} sentences > the {len(sentences)} of dev")
        # Warm-up sentences from the end of the file (not timed, unless the file is short).
        warm = [
            sentences[len(sentences) - (i + 1) * bs : len(sentences) - i * bs]
            for i in range(args.warmup)
        ]
        tokenizer.__dict__.pop("_word_cache", None)  # new text: empty word → ids cache
        for batch in warm:
            for fn in paths.values():
                fn(batch)
        latency = {name: [] for name in paths}
        probs = {name: [] for name in paths}
        for i, batch in enumerate(timed):
            order = list(paths) if i % 2 == 0 else list(reversed(paths))
            for name in order:
                t = time.perf_counter()
                out = paths[name](batch)
                latency[name].append(time.perf_counter() - t)
                probs[name].append(out)
        diff = float(
            np.max(
                np.abs(np.concatenate(probs["in_process"]) - np.concatenate(probs["saved_model"]))
            )
        )
        max_diff = max(max_diff, diff)
        row = {"batch": bs, "requests": requests, "max_abs_diff": diff}
        for name in paths:
            row[f"{name}_req_per_s"] = requests / sum(latency[name])
            row[f"{name}_examples_per_s"] = requests * bs / sum(latency[name])
            row[f"{name}_latency_ms"] = [round(1000 * s, 2) for s in latency[name]]
            row[f"{name}_p50_ms"] = 1000 * statistics.median(latency[name])
        row["ratio"] = row["saved_model_req_per_s"] / row["in_process_req_per_s"]
        row["p50_ratio"] = row["in_process_p50_ms"] / row["saved_model_p50_ms"]
        results.append(row)
        print(f"batch {bs}: done", file=sys.stderr, flush=True)

    # --- the report -------------------------------------------------------------------------
    print(
        f"\nClassifier serving, ALBERT-{args.config} (random weights), max_seq_length "
        f"{args.max_seq_length}, SST-2 dev sentences, {os.cpu_count()} CPU cores, "
        f"load average {os.getloadavg()[0]:.2f}, TF {tf.__version__}\n"
    )
    print(
        "| batch | requests | in-process req/s | SavedModel req/s | ratio | "
        "in-process ex/s | SavedModel ex/s | p50 ms in-process / SavedModel (ratio) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['batch']} | {r['requests']} | {r['in_process_req_per_s']:.2f} | "
            f"{r['saved_model_req_per_s']:.2f} | {r['ratio']:.3f} | "
            f"{r['in_process_examples_per_s']:.2f} | {r['saved_model_examples_per_s']:.2f} | "
            f"{r['in_process_p50_ms']:.1f} / {r['saved_model_p50_ms']:.1f} "
            f"({r['p50_ratio']:.3f}) |"
        )
    print(
        "\nratio = SavedModel req/s / in-process req/s (total time of the timed requests); "
        "p50 ratio = in-process / SavedModel median request latency, less sensitive to "
        "other jobs' load."
    )
    print(
        f"SavedModel load (fresh process, tensorflow + tensorflow_text only): "
        f"{fresh['load_s']:.2f} s; first request (batch {batch_sizes[0]}) "
        f"{1000 * fresh['first_s']:.0f} ms; import {fresh['import_s']:.2f} s. "
        f"(Load in this process: {load_here_s:.2f} s.)"
    )
    met = [r["batch"] for r in results if r["ratio"] >= TARGET_RATIO]
    missed = [r["batch"] for r in results if r["ratio"] < TARGET_RATIO]
    print(
        f"Target: SavedModel within 10% of in-process (ratio >= {TARGET_RATIO}): "
        + (
            "met at every batch size"
            if not missed
            else f"met at batch {met or 'none'}, NOT met at batch {missed}"
        )
    )
    agree = max_diff <= TOLERANCE
    total = sum(r["requests"] * r["batch"] for r in results)
    print(
        f"Probabilities, SavedModel vs in-process, {total} sentences: max abs difference "
        f"{max_diff:.2e} "
        f"({'within' if agree else 'NOT within'} {TOLERANCE:g})"
    )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(
                {
                    "config": args.config,
                    "max_seq_length": args.max_seq_length,
                    "results": results,
                    "fresh_client": fresh,
                    "load_here_s": load_here_s,
                    "export_s": export_s,
                    "max_abs_diff": max_diff,
                },
                f,
                indent=1,
            )
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
