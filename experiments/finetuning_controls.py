"""Early stopping, layer-wise learning-rate decay, LoRA and distillation against plain
fine-tuning, on a small SST-2 (or MRPC) slice, 3 seeds each.

    python -m experiments.finetuning_controls [--task sst-2] [--output_dir out/controls] \\
        [--seeds 3] [--steps 150] [--max_train_examples 2000] [--pretrained_dir DIR] \\
        [--settings plain,early,decay,lora,distill]

One run_classifier.py invocation (the real runner) a setting, each `--num_runs` seeds:

- plain: `--eval_every E`, all `--steps` steps;
- early: the same with `--early_stopping_patience 2 --early_stopping_min_delta 0.005`;
  its steps saved are `--steps` minus the step it stopped at, and its best dev metric
  (best/) is compared with the plain run's (both are selected on dev: this measures what
  stopping gives up, not a held-out score);
- decay: `--layer_lr_decay 0.8` (a shared-group model: embeddings lr·0.64, the group
  lr·0.8, pooler and head lr), final dev metric against plain's;
- lora: `--lora_rank 8` (query and value adapters, the head trainable, the same learning rate);
- distill: a tiny student (`STUDENT`, from scratch) trained with plain run_0's export as
  `--teacher_checkpoint` against the same student on the labels alone (`student`).

Model: with `--pretrained_dir` the project's CPU-pretrained model (experiments/pretrained.py),
otherwise `TINY` from a random start (the figures then say how the controls behave on a tiny
model trained from scratch, not what they give a pretrained ALBERT). Reported: per setting
the median, min and max over seeds of the final and best dev metric and of the steps trained.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))

TINY = {
    "vocab_size": 30000,
    "embedding_size": 32,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
}
STUDENT = {**TINY, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
FOLDERS = {"sst-2": "SST-2", "mrpc": "MRPC"}
SETTINGS = {
    "plain": [],
    "early": ["--early_stopping_patience=2", "--early_stopping_min_delta=0.005"],
    "decay": ["--layer_lr_decay=0.8", "--optimizer=adamw"],
    "lora": ["--lora_rank=8"],
}


def run_setting(name: str, extra: list[str], args, model: list[str]) -> dict:
    """One run_classifier.py invocation over `args.seeds` seeds → its per-seed figures."""
    out = os.path.join(args.output_dir, name)
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_classifier.py"),
        f"--task_name={args.task}",
        f"--data_dir={os.path.join(DATA, 'glue', FOLDERS[args.task])}",
        f"--output_dir={out}",
        *model,
        f"--max_seq_length={64 if args.task == 'sst-2' else 128}",
        "--train_batch_size=32",
        "--eval_batch_size=256",
        f"--train_step={args.steps}",
        f"--eval_every={args.eval_every}",
        f"--steps_per_loop={args.eval_every}",
        "--save_checkpoints_steps=100000",
        f"--learning_rate={args.learning_rate}",
        f"--max_train_examples={args.max_train_examples}",
        f"--num_runs={args.seeds}",
        "--do_train",
        "--do_eval",
        *extra,
    ]
    start = time.time()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    runs = []
    for i in range(args.seeds):
        with open(os.path.join(out, f"run_{i}", "eval_results.json")) as f:
            result = json.load(f)
        metric = result["best"]["metric"]
        runs.append(
            {
                "seed": result["seed"],
                "steps": result["step"],
                "final": result["final"][metric],
                "best": result["best"]["value"],
                "best_step": result["best"]["step"],
                "metric": metric,
            }
        )
    return {"runs": runs, "seconds": time.time() - start, "command": " ".join(cmd)}


def _write(config: dict, args, name: str) -> str:
    path = os.path.join(args.output_dir, f"{name}_config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def _latest(export_root: str) -> str:
    """The newest version directory (N) of a versioned export root."""
    return max((d for d in os.listdir(export_root) if d.isdigit()), key=int)


def _spread(values) -> str:
    return f"{statistics.median(values):.4f} [{min(values):.4f}, {max(values):.4f}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", default="sst-2", choices=sorted(FOLDERS))
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "finetuning_controls"))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--eval_every", type=int, default=25)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--max_train_examples", type=int, default=2000)
    p.add_argument("--pretrained_dir", default=None, help="experiments/pretrained.py's model")
    p.add_argument("--settings", default="plain,early,decay,lora,distill")
    args = p.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)
    names = args.settings.split(",")
    unknown = set(names) - {*SETTINGS, "distill"}
    if unknown or "plain" not in names:
        raise SystemExit(f"--settings: {sorted(unknown)} unknown, or plain missing")
    if "lora" in names and not args.pretrained_dir:
        raise SystemExit("--settings lora: LoRA adapts a pretrained model; give --pretrained_dir")
    spm = os.path.join(DATA, "spm", "de-30k-clean.model")
    student_config = dict(STUDENT)
    if args.pretrained_dir:
        from experiments.pretrained import pretrained_flags

        model = pretrained_flags(args.pretrained_dir)
        spm = model[1].split("=", 1)[1]
        student_config["vocab_size"] = 8000
    else:
        model = [f"--spm_model_file={spm}", f"--albert_config_file={_write(TINY, args, 'tiny')}"]
    export = os.path.join(args.output_dir, "plain_export")
    results = {}
    for name in names:
        if name == "distill":
            continue
        extra = SETTINGS[name] + ([f"--export_dir={export}"] if name == "plain" else [])
        results[name] = run_setting(name, extra, args, model)
    if "distill" in names:
        student = [
            f"--spm_model_file={spm}",
            f"--albert_config_file={_write(student_config, args, 'student')}",
        ]
        teacher = os.path.join(export, "run_0", _latest(os.path.join(export, "run_0")))
        results["student"] = run_setting("student", [], args, student)
        results["distill"] = run_setting(
            "distill", [f"--teacher_checkpoint={teacher}"], args, student
        )
    start = f"from {args.pretrained_dir}" if args.pretrained_dir else "from scratch (TINY)"
    lines = [
        f"{args.task}, {args.max_train_examples} training examples, {args.seeds} seeds, "
        f"{start}; student/distill: STUDENT from scratch:"
    ]
    metric = results["plain"]["runs"][0]["metric"]
    for name, result in results.items():
        runs = result["runs"]
        lines.append(
            f"  {name:6s} final {metric} {_spread([r['final'] for r in runs])}  best "
            f"{_spread([r['best'] for r in runs])}  steps "
            f"{[r['steps'] for r in runs]}  ({result['seconds']:.0f} s)"
        )
    if "early" in results:
        saved = [args.steps - r["steps"] for r in results["early"]["runs"]]
        lines.append(f"  early stopping saved {saved} of {args.steps} steps")
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
