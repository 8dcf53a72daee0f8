"""GoEmotions multi-label quality at small scale: micro/macro F1 on the real dev set at the
0.5 threshold against thresholds tuned on a held-out part of train.

    python -m experiments.multilabel_quality [--output_dir out/multilabel_quality] \\
        [--steps 600] [--max_train_examples 0] [--tune per_label,global] [--pretrained_dir DIR]

A small ALBERT (E=64, H=128, 4 layers sharing one block) fine-tuned from a random start by
run_classifier.py --multi_label (the real runner) on GoEmotions' train file (28 labels,
`../shared/data/multilabel/goemotions`), 10% of it held out (seed 12345) to tune the
thresholds on, never trained on; the dev file is only evaluated. One run per `--tune`
mode, same seed and schedule (so their 0.5 figures agree). Reported: dev micro/macro F1,
subset accuracy and Hamming loss at the tuned thresholds, micro/macro F1 at 0.5, time.
The tokenizer is the shared German SentencePiece model, so the absolute figures are far
below a pretrained model's; the comparison of thresholds is what this measures. With
`--pretrained_dir` the run starts from the project's CPU-pretrained English model instead
(experiments/pretrained.py: its config, vocabulary and weights).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
CONFIG = {
    "vocab_size": 30000,
    "embedding_size": 64,
    "hidden_size": 128,
    "num_hidden_layers": 4,
    "num_hidden_groups": 1,
    "num_attention_heads": 2,
    "intermediate_size": 512,
    "max_position_embeddings": 64,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
}


def finetune(mode: str, out: str, model: list[str], args) -> dict:
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_classifier.py"),
        "--task_name=tsv",
        f"--data_dir={os.path.join(DATA, 'multilabel', 'goemotions')}",
        "--text_a_column=text",
        "--label_column=labels",
        "--multi_label",
        f"--tune_thresholds={mode}",
        "--held_out_fraction=0.1",
        f"--output_dir={out}",
        *model,
        "--max_seq_length=64",
        "--train_batch_size=32",
        "--eval_batch_size=256",
        f"--train_step={args.steps}",
        "--warmup_proportion=0.1",
        f"--learning_rate={args.learning_rate}",
        "--steps_per_loop=100",
        "--save_checkpoints_steps=100000",
        "--seed=12345",
        f"--max_train_examples={args.max_train_examples}",
        "--do_train",
        "--do_eval",
    ]
    start = time.time()
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"{mode} failed:\n{run.stderr[-3000:]}")
    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    return {"results": results, "seconds": time.time() - start}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "multilabel_quality"))
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--max_train_examples", type=int, default=0, help="0: all of train")
    p.add_argument("--tune", default="per_label", help="modes, comma-separated")
    p.add_argument("--pretrained_dir", default=None, help="experiments/pretrained.py's model")
    args = p.parse_args()
    from experiments.report import report_logger

    log = report_logger(args.output_dir)
    if args.pretrained_dir:
        from experiments.pretrained import pretrained_flags

        model = pretrained_flags(args.pretrained_dir)
    else:
        config = os.path.join(args.output_dir, "albert_config.json")
        with open(config, "w") as f:
            json.dump(CONFIG, f)
        spm = os.path.join(DATA, "spm", "de-30k-clean.model")
        model = [f"--spm_model_file={spm}", f"--albert_config_file={config}"]
    start = args.pretrained_dir or "a random start"
    log(f"GoEmotions, {args.steps} steps at batch 32 from {start}; dev = 5,426 examples")
    for mode in args.tune.split(","):
        r = finetune(mode, os.path.join(args.output_dir, mode), model, args)
        final = r["results"]["final"]
        thresholds = r["results"]["thresholds"].values()
        log(
            f"{mode:<9} at 0.5: micro F1 {final['at_0.5/micro_f1']:.4f} macro F1 "
            f"{final['at_0.5/macro_f1']:.4f} | tuned: micro F1 {final['micro_f1']:.4f} "
            f"macro F1 {final['macro_f1']:.4f} subset acc {final['subset_accuracy']:.4f} "
            f"hamming {final['hamming_loss']:.4f} | thresholds {min(thresholds):.2f}-"
            f"{max(thresholds):.2f} | {r['seconds']:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
