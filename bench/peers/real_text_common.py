"""What bench/peers/real_text_hf.py and bench/peers/real_text_keras_hub.py share: the GLUE
files as the official code reads them, the train subset and its order, the flags, the
RESULT line's common fields (rates, latency percentiles, peak RSS, load average) and printing
it. Standard library and numpy only (it is imported in each peer's own venv); the scripts
run as `python bench/peers/<script>.py`, which puts this folder on sys.path.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import numpy as np
from process_memory import peak_rss_mb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))

# The GLUE files as the official code reads them (split on tabs only): folder, text_a,
# text_b (None: single sentence) and label columns; labels in the order of the head's logits
# (None: regression).
GLUE = {
    "sst-2": ("SST-2", 0, None, 1, ["0", "1"]),
    "mrpc": ("MRPC", 3, 4, 0, ["0", "1"]),
    "rte": ("RTE", 1, 2, 3, ["entailment", "not_entailment"]),
    "sts-b": ("STS-B", 7, 8, 9, None),
}
BASE = dict(hidden=768, layers=12, heads=12, intermediate=3072, embedding=128, vocab=30000)


def read_glue(data: str, task: str, split: str):
    """(texts_a, texts_b or None, labels: class indices or float scores)."""
    folder, a, b, y, labels = GLUE[task]
    with open(os.path.join(data, "glue", folder, f"{split}.tsv"), encoding="utf-8-sig") as f:
        rows = [line.rstrip("\r\n").split("\t") for line in f][1:]
    texts_a = [r[a] for r in rows]
    texts_b = [r[b] for r in rows] if b is not None else None
    targets = [float(r[y]) if labels is None else labels.index(r[y]) for r in rows]
    return texts_a, texts_b, targets


def train_subset(count: int, limit: int, seed: int = 0) -> list[int]:
    """`limit` of `count` examples drawn at random (sorted; all when limit >= count), as
    run_classifier's --max_train_examples draws them."""
    if not limit or limit >= count:
        return list(range(count))
    return sorted(int(i) for i in np.random.default_rng(seed).choice(count, limit, False))


def train_order(args, count: int) -> tuple[int, list[int], list[int]]:
    """(steps in all: warm-up + reps × steps, the train subset, it in a seeded random order)."""
    total = args.warmup + args.reps * args.steps
    keep = train_subset(count, args.limit or args.batch * total)
    order = [keep[i] for i in np.random.default_rng(1).permutation(len(keep))]
    return total, keep, order


def parser(doc: str) -> argparse.ArgumentParser:
    """The flags both peers take (bench/real_text.py passes these); each adds its own."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--task", choices=list(GLUE), default="sst-2")
    p.add_argument("--mode", choices=["infer", "train"], default="infer")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--limit", type=int, default=0, help="examples (0: dev set / what steps need)")
    p.add_argument("--steps", type=int, default=3, help="train: steps per timed rep")
    p.add_argument("--warmup", type=int, default=2, help="train: untimed steps first")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--spm", default=os.path.join(DATA, "spm", "de-30k-clean.model"))
    p.add_argument("--data", default=DATA)
    return p


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def head(system: str, args) -> dict:
    """The RESULT line's first fields."""
    return dict(
        system=system,
        task=args.task,
        mode=args.mode,
        batch=args.batch,
        seq=args.seq,
        dtype="float32",
    )


def finish(result: dict, args, n: int, passes, latencies, computed: int, present: int) -> None:
    """Adds examples/s (n / pass time, median over the reps), the token counts, request
    latency p50/p95 (batch 1), peak RSS and load average, and prints the RESULT line."""
    rates = [n / t for t in passes]
    result.update(
        examples_per_s=round(statistics.median(rates), 3),
        examples_per_s_per_rep=[round(r, 3) for r in rates],
        reps=args.reps,
        tokens_computed=computed,
        tokens_present=present,
    )
    if latencies and args.batch == 1:
        result["latency_ms_p50"] = round(1000 * float(np.percentile(latencies, 50)), 2)
        result["latency_ms_p95"] = round(1000 * float(np.percentile(latencies, 95)), 2)
    emit(result)


def emit(result: dict) -> None:
    result["peak_rss_mib"] = round(peak_rss_mb(), 1)
    result["loadavg_at_end"] = loadavg()
    print("RESULT " + json.dumps(result), flush=True)
