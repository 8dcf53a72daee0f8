"""Long documents at small scale: movie_reviews dev accuracy (per document) with the reviews
truncated to max_seq_length against the same reviews read as windows (run_classifier.py
--doc_stride), the windows' outputs combined by mean of logits and by max of probabilities.

    python -m experiments.long_documents_quality [--output_dir out/long_documents] \\
        [--steps 300] [--seeds 1] [--pretrained_dir DIR]

Every setting is fine-tuned by the real runner for the same number of steps at the same
batch size (an equal budget in examples; the windowed runs see more distinct text per
document, truncation sees each review's beginning again), from the project's CPU-pretrained
model (`--pretrained_dir`, experiments/pretrained.py) or from a random start of one small
model (`CONFIG`, the shared German SentencePiece vocabulary). The windowed model is trained
once per seed and evaluated with each aggregation (aggregation changes nothing in training).
Learning rate: the default (5e-4) is the random start's; from the CPU-pretrained model use
`--learning_rate 1e-4`: at 2e-4 and 5e-4 its runs on these full 128-token windows never
leave a training loss of 0.693 (every document one class), at 1e-4 it fits (training
accuracy 0.95 by step 400). Reported:
dev accuracy at the end of training (not the best step: that would tune on dev) and the
tokens computed per dev document (windows × max_seq_length, padding included, as the
records are laid out).
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
REVIEWS = os.path.join(DATA, "long_documents", "movie_reviews")
SPM = os.path.join(DATA, "spm", "de-30k-clean.model")

CONFIG = {
    "vocab_size": 30000,
    "embedding_size": 64,
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 256,
    "max_position_embeddings": 512,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
}


def run_classifier(out: str, args, seed: int, *extra) -> dict:
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_classifier.py"),
        "--task_name=jsonl",
        f"--data_dir={REVIEWS}",
        "--text_a_column=text",
        f"--output_dir={out}",
        *args.model,
        f"--max_seq_length={args.max_seq_length}",
        "--train_batch_size=32",
        "--eval_batch_size=64",
        f"--train_step={args.steps}",
        "--warmup_proportion=0.1",
        f"--learning_rate={args.learning_rate}",
        "--steps_per_loop=50",
        "--save_checkpoints_steps=100000",
        f"--seed={seed}",
        "--do_eval",
        *extra,
    ]
    start = time.time()
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"{out} failed:\n{run.stderr[-3000:]}")
    with open(os.path.join(out, "eval_results.json")) as f:
        accuracy = json.load(f)["final"]["accuracy"]
    with open(os.path.join(out, "cache", "jsonl-dev.json")) as f:
        meta = json.load(f)
    tokens = (
        meta["count"]
        * args.max_seq_length
        / len(meta["info"].get("document_windows") or [0] * meta["count"])
    )
    return {"accuracy": accuracy, "seconds": time.time() - start, "tokens_per_document": tokens}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "long_documents"))
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--doc_stride", type=int, default=64)
    p.add_argument("--learning_rate", type=float, default=5e-4)
    p.add_argument("--pretrained_dir", default=None, help="experiments/pretrained.py's model")
    args = p.parse_args()
    from experiments.report import report_logger

    log = report_logger(args.output_dir)
    if args.pretrained_dir:
        from experiments.pretrained import pretrained_flags

        args.model = pretrained_flags(args.pretrained_dir)
    else:
        config = os.path.join(args.output_dir, "albert_config.json")
        with open(config, "w") as f:
            json.dump(CONFIG, f)
        args.model = [f"--spm_model_file={SPM}", f"--albert_config_file={config}"]
    log(
        f"movie_reviews, {args.steps} steps at batch 32, max_seq_length {args.max_seq_length}, "
        f"doc_stride {args.doc_stride}, from {args.pretrained_dir or 'scratch'}"
    )
    results = {"truncation": [], "windows, mean_logits": [], "windows, max_prob": []}
    for s in range(args.seeds):
        seed = 12345 + s
        out = os.path.join(args.output_dir, f"truncation-{s}")
        results["truncation"].append(run_classifier(out, args, seed, "--do_train"))
        out = os.path.join(args.output_dir, f"windows-{s}")
        windows = (f"--doc_stride={args.doc_stride}",)
        r = run_classifier(out, args, seed, "--do_train", *windows, "--aggregate=mean_logits")
        results["windows, mean_logits"].append(r)
        r = run_classifier(out, args, seed, *windows, "--aggregate=max_prob")
        results["windows, max_prob"].append(r)
        for name, rows in results.items():
            log(
                f"seed {seed} {name:<22} accuracy {rows[-1]['accuracy']:.4f} "
                f"({rows[-1]['tokens_per_document']:.0f} tokens/document, "
                f"{rows[-1]['seconds']:.0f}s)"
            )
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=1)
    log(f"\n{'setting':<24}{'median':>8}{'min':>8}{'max':>8}{'tokens/doc':>12}")
    for name, rows in results.items():
        values = sorted(r["accuracy"] for r in rows)
        log(
            f"{name:<24}{values[len(values) // 2]:>8.4f}{values[0]:>8.4f}{values[-1]:>8.4f}"
            f"{rows[0]['tokens_per_document']:>12.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
