"""STS-B dev Spearman of a pretrained ALBERT as a sentence encoder: unsupervised (each pooling,
no training) and after cosine fine-tuning on STS-B train (mean pooling, several seeds), all
by run_embedding.py (the real runner).

    python -m experiments.sts_embedding --init_checkpoint out/pretrain \\
        --albert_config_file out/pretrain/albert_config.json --spm_model_file spm.model \\
        [--seeds 3] [--num_train_epochs 4] [--output_dir out/sts_embedding]

The figure is Spearman's rank correlation of the pairs' cosine with the gold scores on the
whole STS-B dev set (1,500 pairs), as sentence-transformers reports it. The fine-tuned
figure is the last step's (the best-by-dev checkpoint would select on the set it reports);
over seeds: median, min, max and standard deviation. The unsupervised figures do not depend
on a seed (no dropout, no training). --max_train_pairs / --max_eval_pairs cut the files (a
smoke test; the figures are then not STS-B dev's).
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


def cut(source: str, target: str, pairs: int | None) -> str:
    """`source` itself, or its header and first `pairs` rows written to `target`."""
    if not pairs:
        return source
    with open(source, encoding="utf-8") as f:
        lines = f.readlines()[: pairs + 1]
    with open(target, "w", encoding="utf-8") as f:
        f.writelines(lines)
    return target


def runner(out: str, args, *extra) -> dict:
    """run_embedding.py into `out` with the common flags and `extra`; its eval_results.json."""
    tokenizer = (
        [f"--spm_model_file={args.spm_model_file}"]
        if args.spm_model_file
        else [f"--vocab_file={args.vocab_file}"]
    )
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_embedding.py"),
        f"--output_dir={out}",
        f"--init_checkpoint={args.init_checkpoint}",
        f"--albert_config_file={args.albert_config_file}",
        *tokenizer,
        f"--max_seq_length={args.max_seq_length}",
        f"--eval_file={args.eval_file}",
        "--eval_batch_size=64",
        *extra,
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(out, "eval_results.json")) as f:
        return json.load(f)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--init_checkpoint", required=True)
    p.add_argument("--albert_config_file", required=True)
    p.add_argument("--spm_model_file")
    p.add_argument("--vocab_file")
    p.add_argument("--data_dir", default=os.path.join(DATA, "glue", "STS-B"))
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "sts_embedding"))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--poolings", default="mean,cls,max,pooler", help="unsupervised rows")
    p.add_argument("--num_train_epochs", type=float, default=4.0)
    p.add_argument("--train_step", type=int, default=0, help="instead of the epochs")
    p.add_argument("--train_batch_size", type=int, default=16)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--max_train_pairs", type=int, default=None)
    p.add_argument("--max_eval_pairs", type=int, default=None)
    args = p.parse_args()
    if bool(args.spm_model_file) == bool(args.vocab_file):
        p.error("give one of --spm_model_file and --vocab_file")
    from experiments.report import report_logger

    log = report_logger(args.output_dir)
    train = cut(
        os.path.join(args.data_dir, "train.tsv"),
        os.path.join(args.output_dir, "train.tsv"),
        args.max_train_pairs,
    )
    args.eval_file = cut(
        os.path.join(args.data_dir, "dev.tsv"),
        os.path.join(args.output_dir, "dev.tsv"),
        args.max_eval_pairs,
    )
    unsupervised = {}
    for pooling in args.poolings.split(","):
        out = os.path.join(args.output_dir, f"unsupervised_{pooling}")
        report = runner(out, args, f"--pooling={pooling}")
        unsupervised[pooling] = report["unsupervised"]["spearman"]
    start = time.time()
    schedule = [f"--train_step={args.train_step}"] if args.train_step else []
    tuned = runner(
        os.path.join(args.output_dir, "cosine_mean"),
        args,
        "--do_train",
        f"--train_file={train}",
        "--objective=cosine",
        "--pooling=mean",
        f"--num_train_epochs={args.num_train_epochs}",
        *schedule,
        f"--train_batch_size={args.train_batch_size}",
        f"--learning_rate={args.learning_rate}",
        "--warmup_proportion=0.1",
        "--steps_per_loop=100",
        "--save_checkpoints_steps=100000",
        f"--seed={args.seed}",
        f"--num_runs={args.seeds}",
    )
    seconds = time.time() - start
    per_run = tuned.get("per_run") or [tuned["final"]]
    values = [r["spearman"] for r in per_run]
    summary = (tuned.get("summary") or {}).get("spearman") or {
        "median": values[0],
        "min": values[0],
        "max": values[0],
        "std": 0.0,
    }
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump({"args": vars(args), "unsupervised": unsupervised, "cosine": tuned}, f, indent=1)
    log(f"STS-B dev Spearman of cosine ({args.eval_file}), {args.init_checkpoint}")
    log(f"{'model':<34}{'median':>8}{'min':>8}{'max':>8}{'std':>8}")
    for pooling, value in unsupervised.items():
        log(f"{'unsupervised, ' + pooling:<34}{value:>8.4f}{'':>8}{'':>8}{'':>8}")
    name = f"cosine fine-tuned, mean ({len(values)} seeds)"
    log(
        f"{name:<34}{summary['median']:>8.4f}{summary['min']:>8.4f}{summary['max']:>8.4f}"
        f"{summary['std']:>8.4f}"
    )
    log(f"per seed: {', '.join(f'{v:.4f}' for v in values)}; fine-tuning {seconds:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
