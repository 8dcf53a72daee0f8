"""float32 against bfloat16 SavedModels (`--export_dtype`): accuracy on dev sets and serving
throughput, printed as tables.

    python -m bench.export_dtype --sst2 D1 --stsb D2 --conll D3   # fine-tuned model dirs
    python -m bench.export_dtype --throughput base                # ALBERT-base, batch 1 and 32

Accuracy: each fine-tuned model directory (a runner's `EXPORT_DIR/N/assets.extra/finetuned`)
is exported twice (`albert_tf.serving.export`, float32 and bfloat16) and the whole dev set
(SST-2 and STS-B: GLUE dev.tsv; CoNLL-2003: dev.txt, each sentence's tokens joined by
spaces) is sent through each SavedModel's serving_default in requests of 32: SST-2
accuracy, STS-B Spearman (×100), CoNLL entity F1 (×100, data_pipeline.tagging.metrics), and
the largest absolute difference of the float outputs (probabilities, score, tag_scores).

Throughput: a random-weight classifier of --throughput's size (speed does not depend on the
weights), exported both ways; SST-2 dev sentences as requests of batch 1 and 32, warmed up,
then timed in turns (float32 first on even requests, bfloat16 on odd), sentences per second
and the bf16/fp32 ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from bench.serving import DATA, LABELS, SPM, SST2, make_config

BATCH = 32


def _export_both(kind: str, finetuned: str, out: str) -> dict:
    from albert_tf.serving.export import export_formats

    shutil.rmtree(out, ignore_errors=True)
    return {
        dtype: export_formats(kind, finetuned, os.path.join(out, dtype), dtype=dtype)[0]
        for dtype in ("float32", "bfloat16")
    }


def _batched(fn, columns: dict) -> dict:
    import numpy as np
    import tensorflow as tf

    n = len(next(iter(columns.values())))
    parts = []
    for i in range(0, n, BATCH):
        out = fn(**{k: tf.constant(v[i : i + BATCH]) for k, v in columns.items()})
        parts.append({k: v.numpy() for k, v in out.items()})

    def stacked(arrays):  # (per-word outputs: each request as wide as its longest row)
        if arrays[0].ndim < 2:
            return np.concatenate(arrays)
        width = max(a.shape[1] for a in arrays)
        pad = [[(0, 0), (0, width - a.shape[1])] + [(0, 0)] * (a.ndim - 2) for a in arrays]
        return np.concatenate([np.pad(a, p) for a, p in zip(arrays, pad)])

    return {k: [row for p in parts for row in p[k]] for k in parts[0]} | {
        f"{k}@array": stacked([p[k] for p in parts]) for k in parts[0]
    }


def accuracy(args) -> list[tuple]:
    import numpy as np

    from albert_tf.serving.compute_dtype import load_saved_model
    from data_pipeline.classification.benchmark_files import read_task
    from data_pipeline.classification.metrics import spearman
    from data_pipeline.tagging.data import read_conll
    from data_pipeline.tagging.metrics import tagging_metrics

    rows = []
    cases = [
        ("SST-2", args.sst2, "accuracy", "probabilities"),
        ("STS-B", args.stsb, "Spearman", "score"),
        ("CoNLL-2003", args.conll, "entity F1", "tag_scores"),
    ]
    for name, finetuned, metric, output in cases:
        if not finetuned:
            continue
        kind = "token_classifier" if name == "CoNLL-2003" else "classifier"
        versions = _export_both(kind, finetuned, os.path.join(args.output_dir, name.lower()))
        if name == "CoNLL-2003":
            sentences = read_conll(os.path.join(DATA, "ner", "conll2003", "dev.txt"))
            columns = {"text": [" ".join(s.tokens) for s in sentences]}
            gold = [list(s.tags) for s in sentences]
        else:
            task, folder = ("sst-2", SST2) if name == "SST-2" else ("sts-b", f"{DATA}/glue/STS-B")
            examples = read_task(folder, task, "dev")
            columns = {"text_a": [e.text_a for e in examples]}
            if name == "STS-B":
                columns["text_b"] = [e.text_b for e in examples]
            gold = [e.label for e in examples]
        scores, outputs = {}, {}
        for dtype, version in versions.items():
            out = _batched(load_saved_model(version).signatures["serving_default"], columns)
            if name == "SST-2":
                scores[dtype] = np.mean([p.decode() == g for p, g in zip(out["label"], gold)])
            elif name == "STS-B":
                scores[dtype] = spearman(out["score@array"], [float(g) for g in gold])
            else:
                pred = [
                    [t.decode() for t in tags[:n]] for tags, n in zip(out["tags"], out["num_words"])
                ]
                scores[dtype] = tagging_metrics(gold, pred)["f1"]
            outputs[dtype] = out[f"{output}@array"]
        diff = float(np.abs(outputs["float32"] - outputs["bfloat16"]).max())
        rows.append(
            (name, metric, len(gold), 100 * scores["float32"], 100 * scores["bfloat16"], diff)
        )
    return rows


def throughput(args) -> list[tuple]:
    import keras
    import tensorflow as tf

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.serving.compute_dtype import load_saved_model
    from data_pipeline.classification.benchmark_files import read_task
    from data_pipeline.tokenization.spec import TokenizerSpec

    sentences = [e.text_a for e in read_task(SST2, "sst-2", "dev")]
    keras.utils.set_random_seed(0)
    model = AlbertClassifier(make_config(args.throughput, 128), len(LABELS), dropout=0.0)
    model.build()
    finetuned = os.path.join(args.output_dir, "throughput", "finetuned")
    shutil.rmtree(finetuned, ignore_errors=True)
    info = TaskInfo.build(
        "classifier", labels=LABELS, max_seq_length=128, do_lower_case=True, text_pair=False
    )
    save_finetuned(model, finetuned, info, TokenizerSpec.from_files(SPM))
    saved = os.path.join(args.output_dir, "throughput", "saved")
    versions = _export_both("classifier", finetuned, saved)
    fns = {d: load_saved_model(v).signatures["serving_default"] for d, v in versions.items()}
    rows = []
    for batch, requests in ((1, args.requests_batch1), (32, args.requests)):
        for i in range(2):  # warm-up
            for fn in fns.values():
                fn(text_a=tf.constant(sentences[i * batch : (i + 1) * batch]))
        spent = {d: 0.0 for d in fns}
        for r in range(requests):
            start = (r * batch) % (len(sentences) - batch)
            texts = tf.constant(sentences[start : start + batch])
            order = list(fns) if r % 2 == 0 else list(fns)[::-1]
            for d in order:
                t = time.perf_counter()
                fns[d](text_a=texts)["probabilities"].numpy()
                spent[d] += time.perf_counter() - t
        rate = {d: requests * batch / spent[d] for d in fns}
        rows.append((batch, rate["float32"], rate["bfloat16"], rate["bfloat16"] / rate["float32"]))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sst2", help="fine-tuned SST-2 model directory")
    p.add_argument("--stsb", help="fine-tuned STS-B model directory")
    p.add_argument("--conll", help="fine-tuned CoNLL-2003 token classifier directory")
    p.add_argument("--throughput", choices=["base", "tiny"], help="classifier size to time")
    p.add_argument("--requests", type=int, default=16, help="timed requests of batch 32")
    p.add_argument("--requests_batch1", type=int, default=128, help="timed requests of batch 1")
    p.add_argument("--output_dir", default="/tmp/albert_bench_export_dtype")
    args = p.parse_args()
    if not os.path.exists(SPM):
        sys.exit(f"needs $ALBERT_TF_DATA ({DATA})")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from albert_tf.serving.compute_dtype import native_bf16

    print(f"CPU bfloat16 instructions (avx512_bf16/amx_bf16): {native_bf16()}")
    if args.sst2 or args.stsb or args.conll:
        print("\n| dev set | metric | examples | float32 | bfloat16 | max abs diff of outputs |")
        print("|---|---|---|---|---|---|")
        for name, metric, n, a, b, diff in accuracy(args):
            print(f"| {name} | {metric} | {n} | {a:.2f} | {b:.2f} | {diff:.2e} |", flush=True)
    if args.throughput:
        head = f"ALBERT-{args.throughput} classifier"
        print(f"\n| {head} | float32 sent/s | bfloat16 sent/s | bf16/fp32 |")
        print("|---|---|---|---|")
        for batch, a, b, ratio in throughput(args):
            print(f"| batch {batch} | {a:.1f} | {b:.1f} | {ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
