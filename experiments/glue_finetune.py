"""GLUE fine-tuning on CPU from a small model pretrained by run_pretraining.py on the shared
corpus — and the same fine-tuning from scratch, to show what pretraining buys.

    python -m experiments.glue_finetune [--pretrained_dir out/sop_vs_nsp] \\
        [--output_dir out/glue_finetune] [--tasks sst-2,mrpc,cola,sts-b,rte] [--seeds 1]

The pretrained model is experiments/sop_vs_nsp.py's SOP model (4 layers sharing one block,
H=256, E=64, 8k SentencePiece vocabulary, pretrained with SOP + n-gram MLM on the State of
the Union / inaugural addresses and WikiText-2 valid). If `--pretrained_dir` holds no
`run_sop/checkpoints`, that script is run first (`--only sop`, `--pretrain_steps` steps).
Every task is then fine-tuned with run_classifier.py (the real runner) from the pretrained
checkpoint, and the tasks in `--scratch_tasks` (SST-2 by default) also from a random start
of the same size with the same schedule. Reported: the task's dev metrics at the end of
training (not the best step: that would tune on dev), train and eval time.
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
GLUE = os.path.join(DATA, "glue")

# task: (folder, max_seq_length, training steps at batch 32)
TASKS = {
    "sst-2": ("SST-2", 64, 1500),
    "mrpc": ("MRPC", 128, 345),
    "cola": ("CoLA", 64, 800),
    "sts-b": ("STS-B", 128, 540),
    "rte": ("RTE", 128, 234),
}


def finetune(task: str, init: str | None, out: str, pretrained_dir: str, seed: int, args) -> dict:
    folder, seq, steps = TASKS[task]
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_classifier.py"),
        f"--task_name={task}",
        f"--data_dir={os.path.join(GLUE, folder)}",
        f"--output_dir={out}",
        f"--spm_model_file={os.path.join(pretrained_dir, 'spm8k.model')}",
        f"--albert_config_file={os.path.join(pretrained_dir, 'albert_config.json')}",
        f"--max_seq_length={seq}",
        "--train_batch_size=32",
        "--eval_batch_size=128",
        f"--train_step={int(steps * args.step_scale)}",
        "--warmup_proportion=0.1",
        f"--learning_rate={args.learning_rate}",
        f"--optimizer={args.optimizer}",
        "--steps_per_loop=50",
        "--save_checkpoints_steps=100000",
        f"--seed={seed}",
        f"--dtype={args.dtype}",
        f"--max_train_examples={args.max_train_examples}",
        "--do_train",
        "--do_eval",
    ]
    if init:
        cmd.append(f"--init_checkpoint={init}")
    start = time.time()
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"{task} failed:\n{run.stderr[-3000:]}")
    with open(os.path.join(out, "eval_results.json")) as f:
        final = json.load(f)["final"]
    return {
        "metrics": final,
        "seconds": time.time() - start,
        "steps": int(steps * args.step_scale),
        "max_seq_length": seq,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pretrained_dir", default=os.path.join(ROOT, "out", "sop_vs_nsp"))
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "glue_finetune"))
    p.add_argument("--tasks", default="sst-2,mrpc,cola,sts-b,rte")
    p.add_argument("--scratch_tasks", default="sst-2")
    p.add_argument("--seeds", type=int, default=1, help="fine-tuning seeds per setting")
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument(
        "--optimizer",
        default="adamw",
        choices=["adamw", "adamw_keras", "lamb", "lamb_keras"],
        help="adamw: the official update; adamw_keras: Keras' bias-corrected AdamW",
    )
    p.add_argument(
        "--step_scale", type=float, default=1.0, help="multiply every task's training steps"
    )
    p.add_argument("--pretrain_steps", type=int, default=3000)
    p.add_argument(
        "--max_train_examples",
        type=int,
        default=0,
        help="fine-tune on this many training examples (0: all)",
    )
    p.add_argument("--dtype", default="float32")
    args = p.parse_args()
    from experiments.report import report_logger

    log = report_logger(args.output_dir)

    init = os.path.join(args.pretrained_dir, "run_sop", "checkpoints")
    if not os.path.exists(os.path.join(init, "checkpoint")):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "experiments.sop_vs_nsp",
                "--only",
                "sop",
                f"--output_dir={args.pretrained_dir}",
                f"--steps={args.pretrain_steps}",
            ],
            check=True,
            cwd=ROOT,
        )
    with open(os.path.join(args.pretrained_dir, "run_sop", "final_metrics.json")) as f:
        log(f"pretrained model: {init} ({json.load(f).get('step')} steps)")
    results = []
    scratch = set(filter(None, args.scratch_tasks.split(",")))
    for task in args.tasks.split(","):
        for start, ckpt in (("pretrained", init), ("scratch", None)):
            if start == "scratch" and task not in scratch:
                continue
            for s in range(args.seeds):
                out = os.path.join(args.output_dir, f"{task}-{start}-{s}")
                r = finetune(task, ckpt, out, args.pretrained_dir, 12345 + s, args)
                r.update(task=task, start=start, seed=12345 + s)
                results.append(r)
                log(
                    f"{task:<6} {start:<10} seed {12345 + s}: "
                    + ", ".join(
                        f"{k} {v:.4f}"
                        for k, v in r["metrics"].items()
                        if isinstance(v, float) and k != "loss"
                    )
                    + f"  ({r['steps']} steps, {r['seconds']:.0f}s)"
                )
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=1)
    log(f"\n{'task':<7}{'start':<12}{'metric':<10}{'median':>8}{'min':>8}{'max':>8}")
    from data_pipeline.classification.metrics import primary_metric

    for task in args.tasks.split(","):
        for start in ("pretrained", "scratch"):
            rows = [r for r in results if r["task"] == task and r["start"] == start]
            if rows:
                name = primary_metric(task)
                values = sorted(r["metrics"][name] for r in rows)
                log(
                    f"{task:<7}{start:<12}{name:<10}{values[len(values) // 2]:>8.4f}"
                    f"{values[0]:>8.4f}{values[-1]:>8.4f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
