"""ONNX int8 against float32 files (`--onnx_quantize int8`): accuracy on dev sets, as a table.

    python -m bench.onnx_int8 --sst2 D1 --conll D2       # fine-tuned model directories

Each fine-tuned model directory (a runner's `EXPORT_DIR/N/assets.extra/finetuned`) is
exported as ONNX files, float32 and int8 (`albert_tf.serving.export`, `--export_format onnx
--onnx_quantize float32,int8`: onnxruntime's dynamic-range int8 weights), and the whole dev
set is answered by each through `albert_tf.serving.onnx_predict.OnnxModel` (the runner's own
path: text packed in Python, ONNX Runtime, the kind's answers): SST-2 accuracy, CoNLL-2003
entity F1 (×100; each sentence's tokens joined by spaces, tagged word by word), and the
largest absolute difference of the probabilities / tag scores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from bench.serving import DATA, SPM, SST2

BATCH = 32


def _files(kind: str, finetuned: str, out: str) -> dict:
    from albert_tf.serving.export import export_formats

    shutil.rmtree(out, ignore_errors=True)
    paths = export_formats(kind, finetuned, out, ("onnx",), onnx_quantize=("float32", "int8"))
    return {("int8" if p.endswith("-int8.onnx") else "float32"): p for p in paths}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sst2", help="fine-tuned SST-2 model directory")
    p.add_argument("--conll", help="fine-tuned CoNLL-2003 token classifier directory")
    p.add_argument("--output_dir", default="/tmp/albert_bench_onnx_int8")
    args = p.parse_args()
    if not os.path.exists(SPM):
        sys.exit(f"needs $ALBERT_TF_DATA ({DATA})")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np

    from albert_tf.serving.onnx_predict import OnnxModel
    from data_pipeline.classification.benchmark_files import read_task
    from data_pipeline.tagging.data import read_conll
    from data_pipeline.tagging.metrics import tagging_metrics

    print("| dev set | metric | examples | float32 | int8 | delta | max abs diff | file bytes |")
    print("|---|---|---|---|---|---|---|---|")
    if args.sst2:
        examples = read_task(SST2, "sst-2", "dev")
        texts, gold = [e.text_a for e in examples], [e.label for e in examples]
        files = _files("classifier", args.sst2, os.path.join(args.output_dir, "sst2"))
        score, probs = {}, {}
        for q, path in files.items():
            model = OnnxModel(path)
            parts = [model.classify(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
            labels = [str(x) for part in parts for x in part["label"]]
            probs[q] = np.concatenate([part["probabilities"] for part in parts])
            score[q] = 100 * np.mean([a == b for a, b in zip(labels, gold)])
        _row("SST-2", "accuracy", len(gold), score, probs, files)
    if args.conll:
        sentences = read_conll(os.path.join(DATA, "ner", "conll2003", "dev.txt"))
        texts, gold = [" ".join(s.tokens) for s in sentences], [list(s.tags) for s in sentences]
        files = _files("token_classifier", args.conll, os.path.join(args.output_dir, "conll"))
        score, scores = {}, {}
        for q, path in files.items():
            answers = OnnxModel(path).tag(texts, batch_size=BATCH)
            pred = [list(a["tags"]) for a in answers]
            scores[q] = np.concatenate([np.asarray(a["tag_scores"], float) for a in answers])
            score[q] = 100 * tagging_metrics(gold, pred)["f1"]
        _row("CoNLL-2003", "entity F1", len(gold), score, scores, files)


def _row(name, metric, n, score, outputs, files):
    import numpy as np

    diff = float(np.abs(outputs["float32"] - outputs["int8"]).max())
    size = f"{os.path.getsize(files['float32']):,} → {os.path.getsize(files['int8']):,}"
    delta = score["int8"] - score["float32"]
    print(
        f"| {name} | {metric} | {n} | {score['float32']:.2f} | {score['int8']:.2f} | "
        f"{delta:+.2f} | {diff:.2e} | {size} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
