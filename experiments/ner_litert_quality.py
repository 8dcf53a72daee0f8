"""What int8 costs the NER LiteRT file: CoNLL-2003 dev entity F1 of a token classifier
fine-tuned from the project's CPU-pretrained model, tagged from raw text by its float32 and
its int8 (dynamic-range: int8 weights, float activations) LiteRT files through the runner
(`LiteModel.tag`), against the runner's own evaluation of the same weights.

    python -m experiments.ner_litert_quality --pretrained_dir out/sop_vs_nsp \\
        [--output_dir out/ner_litert] [--steps 400] [--limit 0]

run_ner.py fine-tunes (the same command as experiments/ner_quality.py's "pretrained" row)
and exports the SavedModel and both LiteRT files (--export_format tflite
--export_quantize float32,int8). Each file then tags the dev sentences, their words joined
by spaces (the runner splits on whitespace, so the words are the file's tokens). Reported:
entity precision / recall / F1 (micro, the scheme detected from the labels, as run_ner
scores) and token accuracy of each file against the gold tags, the share of words whose
int8 tag equals the float32 tag, and the files' sizes. bench/ner_serving.py measures the
speed of the same two files.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "ner_litert"))
    p.add_argument("--pretrained_dir", required=True, help="experiments/pretrained.py's model")
    p.add_argument("--steps", type=int, default=400, help="training steps at batch 32")
    p.add_argument("--learning_rate", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--limit", type=int, default=0, help="dev sentences (0: all)")
    args = p.parse_args()
    from experiments.ner_quality import DATA, run
    from experiments.report import report_logger

    log = report_logger(args.output_dir)
    export = os.path.join(args.output_dir, "export")
    formats = ("--export_format=savedmodel", "--export_format=tflite")
    quantize = ("--export_quantize=float32,int8",)
    trained = run(
        "conll2003",
        args.output_dir,
        args,
        "pretrained",
        (f"--export_dir={export}", *formats, *quantize),
    )
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.tagging.data import read_conll
    from data_pipeline.tagging.metrics import tagging_metrics

    sentences = read_conll(os.path.join(DATA, "ner", "conll2003", "dev.txt"))
    sentences = sentences[: args.limit or None]
    texts = [" ".join(s.tokens) for s in sentences]
    gold = [list(s.tags) for s in sentences]
    log(f"{args.steps} steps from {args.pretrained_dir}; {len(texts)} CoNLL-2003 dev sentences")
    log(f"runner's evaluation (features, all dev): F1 {trained['eval']['f1']:.4f}")
    log(f"{'file':<34}{'MB':>6}{'P':>8}{'R':>8}{'F1':>8}{'tok acc':>9}")
    tags = {}
    for q in ("float32", "int8"):
        (path,) = glob.glob(os.path.join(export, "litert", f"*-{q}.tflite"))
        rows = LiteModel(path).tag(texts, batch_size=32)
        tags[q] = [list(r["tags"]) for r in rows]
        assert all(len(t) == len(g) for t, g in zip(tags[q], gold)), "a word lost its tag"
        m = tagging_metrics(gold, tags[q], trained["scheme"])
        size = os.path.getsize(path) / 2**20
        log(
            f"{os.path.basename(path):<34}{size:>6.1f}{m['precision']:>8.4f}{m['recall']:>8.4f}"
            f"{m['f1']:>8.4f}{m['accuracy']:>9.4f}"
        )
    words = sum(len(g) for g in gold)
    same = sum(a == b for fa, fb in zip(tags["float32"], tags["int8"]) for a, b in zip(fa, fb))
    log(f"int8 tag equal to float32's: {same}/{words} words ({same / words:.2%})")
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump({"args": vars(args), "trained": trained, "same_words": [same, words]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
