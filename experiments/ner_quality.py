"""NER quality at small scale: a small ALBERT fine-tuned from scratch by run_ner.py (the real
runner) on CoNLL-2003 (English, BIO) and resume_zh (Chinese resumes, BMES, one character a
line), scored on their dev sets.

    python -m experiments.ner_quality [--output_dir out/ner_quality] [--steps 600] \\
        [--datasets conll2003,resume_zh] [--pretrained_dir DIR] [--pretrained_zh_dir DIR]

With `--pretrained_dir` CoNLL-2003 is also fine-tuned from the project's CPU-pretrained
English model (experiments/pretrained.py: its config, its uncased 8k vocabulary) and from a
random start of that same model, so the two differ only in the starting weights. That
model's vocabulary holds no Chinese characters: with `--pretrained_zh_dir` resume_zh is
fine-tuned in the same two ways from the Chinese CPU-pretrained model
(experiments/pretrained_zh.py: the same architecture, its WordPiece vocab.txt). The other
figures are what a small architecture learns from the training set alone in a few minutes of
CPU: a floor, not the paper's setting. Tokenizers (small): for CoNLL-2003 the shared German
SentencePiece model (ALBERT's recipe, 30k pieces) used cased (--nodo_lower_case:
capitalization is NER's strongest cue and the model keeps it); for resume_zh a WordPiece
vocabulary of the training file's characters in the official Chinese layout (one piece per
character; a dev character unseen in training is [UNK]). Reported: the final step's dev
entity precision / recall / F1 (micro, the scheme detected from the labels) and token
accuracy, with the time taken.
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
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def small_config(vocab_size: int) -> dict:
    """A small ALBERT (H=128, E=64, 4 layers sharing one block, 4 heads)."""
    return {
        "vocab_size": vocab_size,
        "embedding_size": 64,
        "hidden_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "intermediate_size": 512,
        "max_position_embeddings": 128,
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
    }


def char_vocab(train_file: str, path: str) -> int:
    """A vocab.txt of the special pieces and every character of `train_file`'s first
    column; returns its size."""
    chars = set()
    with open(train_file, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                chars.add(line.split()[0])
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join([*SPECIAL, *sorted(chars - set(SPECIAL))]) + "\n")
    return len(SPECIAL) + len(chars - set(SPECIAL))


def run(name: str, out: str, args, start: str = "small", extra=()) -> dict:
    """Fine-tunes on dataset `name` into `out`; the final dev figures and the time. `start`:
    "small" (small_config, random), "pretrained" or "pretrained-scratch" (the pretrained
    model's config and vocabulary, from its weights or from a random start); `extra`: more
    run_ner.py flags (an export, say)."""
    data_dir = os.path.join(DATA, "ner", name)
    os.makedirs(out, exist_ok=True)
    if start != "small":
        from experiments.pretrained import pretrained_flags

        zh = name == "resume_zh"
        model = pretrained_flags(args.pretrained_zh_dir if zh else args.pretrained_dir)
        tokenizer = model if start == "pretrained" else model[:2]
    elif name == "resume_zh":
        vocab = os.path.join(out, "vocab.txt")
        size = char_vocab(os.path.join(data_dir, "train.txt"), vocab)
        tokenizer = [f"--vocab_file={vocab}"]
    else:
        size = 30000
        spm = os.path.join(DATA, "spm", "de-30k-clean.model")
        tokenizer = [f"--spm_model_file={spm}", "--nodo_lower_case"]
    if start == "small":
        config = os.path.join(out, "albert_config.json")
        with open(config, "w") as f:
            json.dump(small_config(size), f)
        tokenizer.append(f"--albert_config_file={config}")
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_ner.py"),
        f"--data_dir={data_dir}",
        f"--output_dir={os.path.join(out, 'run')}",
        *tokenizer,
        "--max_seq_length=128",
        "--doc_stride=64",
        "--train_batch_size=32",
        f"--train_step={args.steps}",
        "--warmup_proportion=0.1",
        f"--learning_rate={args.learning_rate}",
        "--steps_per_loop=100",
        "--save_checkpoints_steps=100000",
        "--eval_batch_size=128",
        f"--seed={args.seed}",
        "--do_train",
        "--do_eval",
        *extra,
    ]
    start = time.time()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(out, "run", "eval_results.json")) as f:
        results = json.load(f)
    return {
        "eval": results["final"],
        "scheme": results["tag_scheme"],
        "seconds": time.time() - start,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "ner_quality"))
    p.add_argument("--datasets", default="conll2003,resume_zh")
    p.add_argument("--steps", type=int, default=600, help="training steps at batch 32")
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--pretrained_dir", default=None, help="experiments/pretrained.py's model")
    p.add_argument("--pretrained_zh_dir", default=None, help="experiments/pretrained_zh.py's")
    args = p.parse_args()
    from experiments.report import report_logger

    log = report_logger(args.output_dir)
    rows = {}
    for name in args.datasets.split(","):
        starts = ["small"]
        if (args.pretrained_dir and name == "conll2003") or (
            args.pretrained_zh_dir and name == "resume_zh"
        ):
            starts = ["pretrained", "pretrained-scratch"]
        for start in starts:
            key = name if start == "small" else f"{name} {start}"
            rows[key] = run(name, os.path.join(args.output_dir, key.replace(" ", "-")), args, start)
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump({"args": vars(args), "results": rows}, f, indent=1)
    log(
        f"{args.steps} steps at batch 32, dev set, final step; small: small_config from scratch; "
        "pretrained(-scratch): the CPU-pretrained model (from a random start)"
    )
    log(f"{'dataset':<30}{'scheme':<7}{'P':>8}{'R':>8}{'F1':>8}{'tok acc':>9}{'time':>8}")
    for name, r in rows.items():
        e = r["eval"]
        log(
            f"{name:<30}{r['scheme'] or 'none':<7}{e['precision']:>8.4f}{e['recall']:>8.4f}"
            f"{e['f1']:>8.4f}{e['accuracy']:>9.4f}{r['seconds']:>7.0f}s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
