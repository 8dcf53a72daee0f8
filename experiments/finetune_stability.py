"""Fine-tuning stability: a tiny ALBERT pretrained briefly on real text, fine-tuned on a
5-class task at a small model's learning rate (1e-3, batch 16) with several seeds and each
AdamW; how many seeds learn and how many stay stuck at loss ln(5).

    python -m experiments.finetune_stability [--output_dir out/finetune_stability] \\
        [--seeds 4] [--steps 1000] [--optimizers adamw_keras,adamw] [--pretrain_steps 300]

Run it before landing changes to the model, the trainer, the optimizers, the data pipeline
or the runners (docs/design/trainer.md): a change that makes fine-tuning fragile shows as
a stuck seed or a lower median here long before a full benchmark would show it. Such a
regression was once found on a held-out news CSV: the fine-tuning default had become the
official AdamW without bias correction, and some seeds never left ln(5).

The proxy, built from ../shared/data only (nothing is copied into the repository):

- pretraining: `TINY` (E 32, H 64, 2 layers, no dropout) on the inaugural addresses
  (create_pretraining_data, max_seq_length 64, dupe_factor 2), `--pretrain_steps` LAMB
  steps at batch 64, lr 2e-3; reused when OUTPUT_DIR/pretrain already holds it;
- task: "which GLUE corpus is this sentence from" (CoLA, SST-2, MRPC, RTE, STS-B: five
  classes of different sources and styles), 360 training and 85 dev sentences per class
  drawn with a fixed seed from each task's train and dev files: 1,800 / 425 rows, the
  size of that news CSV;
- fine-tuning: the real run_classifier.py, `--task_name csv`, lr 1e-3, batch 16,
  `--steps` steps, the default warmup (10%), each optimizer of `--optimizers` × seeds
  1..`--seeds`.

Reported per run: dev accuracy, the first and last logged training loss, and "stuck"
when the last logged training loss is within 0.05 of ln(5) (the loss of a model that
predicts the class prior); then per optimizer the median accuracy and the stuck count.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import statistics
import subprocess
import sys

from experiments.finetuning_controls import TINY as CONTROLS_TINY

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
SPM = os.path.join(DATA, "spm", "de-30k-clean.model")

# finetuning_controls' tiny model at 64 positions, without dropout (one recipe for both)
TINY = {**CONTROLS_TINY, "max_position_embeddings": 64}
TINY.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
# GLUE task → (folder, column of its first sentence; None: CoLA's headerless 4th column).
SOURCES = {
    "cola": ("CoLA", None),
    "sst-2": ("SST-2", "sentence"),
    "mrpc": ("MRPC", "#1 String"),
    "rte": ("RTE", "sentence1"),
    "sts-b": ("STS-B", "sentence1"),
}
PER_CLASS = {"train": 360, "dev": 85}
STUCK_WITHIN = 0.05


def _sentences(folder: str, column: str | None, split: str) -> list[str]:
    with open(os.path.join(DATA, "glue", folder, f"{split}.tsv"), encoding="utf-8-sig") as f:
        lines = f.read().splitlines()
    if column is None:
        rows = [line.split("\t")[3] for line in lines if line.count("\t") >= 3]
    else:
        index = lines[0].split("\t").index(column)
        rows = [p[index] for p in (line.split("\t") for line in lines[1:]) if len(p) > index]
    return [r for r in rows if r.strip()]


def write_task(out_dir: str) -> dict[str, str]:
    """The 5-class CSV files (text_a, label) → {split: path}."""
    rng = random.Random(0)
    paths = {}
    for split, n in PER_CLASS.items():
        rows = []
        for label, (folder, column) in SOURCES.items():
            sentences = _sentences(folder, column, split)
            rng.shuffle(sentences)
            rows += [(s, label) for s in sentences[:n]]
        rng.shuffle(rows)
        paths[split] = os.path.join(out_dir, f"{split}.csv")
        with open(paths[split], "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["text_a", "label"])
            writer.writerows(rows)
    return paths


def _run(args: list[str], log: str) -> None:
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, *args], cwd=ROOT, stdout=f, stderr=f)
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(args)}; see {log}")


def pretrain(out_dir: str, steps: int) -> str:
    """The pretrained run directory (reused when its last checkpoint is there)."""
    config = os.path.join(out_dir, "albert_config.json")
    with open(config, "w") as f:
        json.dump(TINY, f)
    records = os.path.join(out_dir, "pretrain_data")
    run = os.path.join(out_dir, "pretrain")
    if os.path.exists(os.path.join(run, "checkpoints", f"ckpt-{steps}.index")):
        return run
    corpus = os.path.join(DATA, "corpus", "en_speeches", "inaugural", "*.txt")
    _run(
        [
            "-m",
            "data_pipeline.pretraining.create_pretraining_data",
            f"--input_file={corpus}",
            f"--output_dir={records}",
            f"--spm_model_file={SPM}",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            "--dupe_factor=2",
            "--num_workers=1",
            "--num_output_shards=1",
        ],
        os.path.join(out_dir, "pretrain_data.log"),
    )
    _run(
        [
            "run_pretraining.py",
            f"--input_file={records}/*.tfrecord",
            f"--output_dir={run}",
            f"--albert_config_file={config}",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            "--train_batch_size=64",
            f"--num_train_steps={steps}",
            f"--num_warmup_steps={steps // 10}",
            "--learning_rate=2e-3",
            "--optimizer=lamb",
            "--steps_per_loop=50",
        ],
        os.path.join(out_dir, "pretrain.log"),
    )
    return run


def fine_tune(out_dir, run, task, optimizer, seed, steps) -> dict:
    """One run_classifier.py run → its dev accuracy and logged training losses."""
    output = os.path.join(out_dir, f"{optimizer}_seed{seed}")
    _run(
        [
            "run_classifier.py",
            "--task_name=csv",
            f"--train_file={task['train']}",
            f"--dev_file={task['dev']}",
            f"--output_dir={output}",
            f"--spm_model_file={SPM}",
            f"--albert_config_file={os.path.join(out_dir, 'albert_config.json')}",
            f"--init_checkpoint={run}",
            "--do_train",
            "--do_eval",
            "--max_seq_length=64",
            "--train_batch_size=16",
            "--learning_rate=1e-3",
            f"--train_step={steps}",
            f"--optimizer={optimizer}",
            f"--seed={seed}",
        ],
        output + ".log",
    )
    with open(os.path.join(output, "eval_results.json")) as f:
        accuracy = json.load(f)["final"]["accuracy"]
    with open(os.path.join(output, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    losses = [r["task_loss"] for r in rows if r.get("split") == "train" and "task_loss" in r]
    return {"accuracy": accuracy, "first_loss": losses[0], "last_loss": losses[-1]}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "finetune_stability"))
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--pretrain_steps", type=int, default=300)
    p.add_argument("--optimizers", default="adamw_keras,adamw")
    a = p.parse_args(argv)
    if not os.path.isdir(os.path.join(DATA, "glue")):
        raise SystemExit(f"no shared data at {DATA} (set ALBERT_TF_DATA)")
    os.makedirs(a.output_dir, exist_ok=True)
    task = write_task(a.output_dir)
    run = pretrain(a.output_dir, a.pretrain_steps)
    stuck_at = math.log(len(SOURCES))
    print(f"{'optimizer':<12} {'seed':>4} {'dev acc':>8} {'loss first':>10} {'last':>7}  stuck")
    summary = {}
    for optimizer in a.optimizers.split(","):
        for seed in range(1, a.seeds + 1):
            r = fine_tune(a.output_dir, run, task, optimizer, seed, a.steps)
            stuck = abs(r["last_loss"] - stuck_at) < STUCK_WITHIN
            summary.setdefault(optimizer, []).append((r["accuracy"], stuck))
            print(
                f"{optimizer:<12} {seed:>4} {r['accuracy']:>8.4f} {r['first_loss']:>10.4f} "
                f"{r['last_loss']:>7.4f}  {'STUCK' if stuck else ''}",
                flush=True,
            )
    print(f"\nln(5) = {stuck_at:.4f}; per optimizer: median dev accuracy [min, max], stuck seeds")
    for optimizer, results in summary.items():
        accs = [acc for acc, _ in results]
        stuck = sum(s for _, s in results)
        print(
            f"{optimizer:<12} {statistics.median(accs):.4f} [{min(accs):.4f}, {max(accs):.4f}]"
            f"  stuck {stuck}/{len(results)}"
        )


if __name__ == "__main__":
    main()
