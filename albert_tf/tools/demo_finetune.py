"""The demo's last two jobs: fine-tuning by the real runner (run_classifier.py, its `jsonl`
task) on a 4-way task built from the demo corpus, pretrained against from scratch; and the
exported SavedModel queried from a separate process that imports only TensorFlow."""

from __future__ import annotations

import os
import shutil
import sys

TOPICS = ("argparse", "asyncio", "statistics", "typing")


def finetune_topics(
    module_documents,
    out: str,
    spm_model_file: str,
    config_file: str,
    checkpoint: str,
    steps: int,
    export_dir: str | None = None,
) -> dict | None:
    """A 4-way classification task from the embedded data, fine-tuned by run_classifier.py
    (the real runner, its `jsonl` task) from the demo's pretrained checkpoint and, with the
    same schedule, from scratch. Paragraphs of TOPICS' docstrings are labelled with their
    module; dev is the paragraphs of the held-out docstrings (every 10th, as for
    pretraining). The pretrained run is exported as a SavedModel to `export_dir`.
    Returns {start: dev accuracy}, or None when a run failed."""
    import json
    import subprocess

    data_dir = os.path.join(out, "topics")
    os.makedirs(data_dir, exist_ok=True)
    counts = {}
    for split, keep in (("train", lambda i: i % 10 != 9), ("dev", lambda i: i % 10 == 9)):
        rows = [
            {"text": p, "label": module}
            for i, (module, doc) in enumerate(module_documents)
            if module in TOPICS and keep(i)
            for p in doc
        ]
        with open(os.path.join(data_dir, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        counts[split] = rows
    majority = max(sum(r["label"] == t for r in counts["dev"]) for t in TOPICS)
    print(
        f"{len(counts['train'])} train / {len(counts['dev'])} dev paragraphs of "
        f"{', '.join(TOPICS)}; majority-class dev accuracy {majority / len(counts['dev']):.1%}"
    )
    results = {}
    for start, init in (("pretrained", checkpoint), ("from scratch", None)):
        run_dir = os.path.join(out, "finetune_" + start.replace(" ", "_"))
        shutil.rmtree(run_dir, ignore_errors=True)
        cmd = [
            sys.executable,
            "-m",
            "run_classifier",
            "--task_name=jsonl",
            f"--data_dir={data_dir}",
            "--text_a_column=text",
            "--label_column=label",
            f"--spm_model_file={spm_model_file}",
            f"--albert_config_file={config_file}",
            f"--output_dir={run_dir}",
            "--max_seq_length=128",
            "--train_batch_size=32",
            f"--train_step={steps}",
            "--learning_rate=3e-4",  # the official AdamW (no bias correction): 1e-3 is too high
            "--warmup_proportion=0.1",
            "--steps_per_loop=50",
            "--eval_batch_size=64",
            "--seed=12345",
            "--do_train",
            "--do_eval",
        ] + ([f"--init_checkpoint={init}"] if init else [])
        if init and export_dir:
            cmd.append(f"--export_dir={export_dir}")
        # The runner is an installed module: it runs from the caller's directory, where the
        # demo's relative paths point.
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode:
            print(
                f"error: run_classifier.py ({start}) failed:\n{run.stderr[-2000:]}", file=sys.stderr
            )
            return None
        with open(os.path.join(run_dir, "eval_results.json")) as f:
            results[start] = json.load(f)["final"]["accuracy"]
        print(f"  {start:<13} dev accuracy {results[start]:.1%} after {steps} steps ({run_dir})")
    return results


SERVING_CLIENT = """
import sys, json
import tensorflow as tf
import tensorflow_text  # noqa: F401 (SentencePiece kernels)
model = tf.saved_model.load(sys.argv[1])
texts = json.loads(sys.argv[2])
out = model.signatures["serving_default"](text_a=tf.constant(texts))
for text, label, probs in zip(texts, out["label"].numpy(), out["probabilities"].numpy()):
    print(f"  {label.decode():<11} p={probs.max():.2f}  {text[:70]}")
"""


def query_saved_model(export_dir: str, texts: list[str]) -> bool:
    """Loads the newest SavedModel version in a separate process that imports only
    tensorflow and tensorflow_text, and prints its answers for `texts`."""
    import json
    import subprocess

    versions = sorted(int(v) for v in os.listdir(export_dir) if v.isdigit())
    path = os.path.join(export_dir, str(versions[-1]))
    print(
        f"{path}: signature serving_default(text_a: string) -> label, probabilities; "
        f"a separate process answers:"
    )
    run = subprocess.run(
        [sys.executable, "-c", SERVING_CLIENT, path, json.dumps(texts)],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    if run.returncode:
        print(f"error: the serving client failed:\n{run.stderr[-2000:]}", file=sys.stderr)
        return False
    print(run.stdout, end="")
    return True
