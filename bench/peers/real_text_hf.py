"""Hugging Face transformers ALBERT-base on real GLUE text, the way its users run it: one
`RESULT {json}` line for bench/real_text.py.

    .venv/bin/python bench/peers/real_text_hf.py --task sst-2 --mode infer --batch 32
    .venv/bin/python bench/peers/real_text_hf.py --task mrpc --mode train --steps 3

Standalone (torch + transformers; nothing of this project). Model: `AlbertForSequence
Classification(AlbertConfig(ALBERT-base sizes))`, random weights (speed does not depend on
them), sdpa attention, float32, `torch.set_num_threads(os.cpu_count())`; dropout as
AlbertConfig's defaults (encoder 0, as ALBERT v2; classifier 0.1). Tokenizer: transformers'
`AlbertTokenizer` (the `tokenizers`-backed "fast" one, transformers 5) converted from the
same SentencePiece model as ours (`--spm`; `from_pretrained` of a folder holding it as
spiece.model), lower-cased as its default. Sentence pairs for MRPC/RTE/STS-B, with
`return_token_type_ids=True` (transformers 5's ALBERT tokenizer leaves them out by default;
the model would then see every token as segment 0); STS-B is regression (num_labels=1).

infer  text → probabilities: per batch of consecutive dev examples in file order,
       `tokenizer(batch, padding=True, truncation=True, max_length=128, return_tensors="pt")`
       then the model under `torch.inference_mode()` and a softmax (STS-B: the score).
       One pass = the first `--limit` dev examples (0: all). A warm-up pass first (untimed),
       then `--reps` timed passes; examples/s = examples / median pass time. Batch 1: every
       example is one request, p50/p95 request latency over the timed passes.
train  AdamW (lr 2e-5) steps at `--batch` with dynamic padding, as the Trainer runs it: the
       examples are tokenized once beforehand (`datasets.map`'s place), each step pads its
       batch with `DataCollatorWithPadding` and runs forward, loss, backward, step. Examples:
       `--limit` drawn at random from train (seed 0; 0: as many as the steps need), in a
       seeded random order. `--warmup` steps, then `--reps` × `--steps` timed;
       examples/s = the median over the reps.

tokens computed / present: the batches' padded size (rows × their length) against their
attention-mask ones, summed over one pass (infer) or the timed steps (train).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")

# The GLUE files as the official code reads them (split on tabs only): folder, text_a,
# text_b (None: single sentence) and label columns; labels in the order of the head's logits
# (None: regression). Same table as bench/peers/real_text_keras_hub.py.
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
    import numpy as np

    if not limit or limit >= count:
        return list(range(count))
    return sorted(int(i) for i in np.random.default_rng(seed).choice(count, limit, False))


def emit(result: dict) -> None:
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print("RESULT " + json.dumps(result), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()

    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    regression = GLUE[args.task][4] is None
    folder = tempfile.mkdtemp(prefix="hf-spm-")
    shutil.copyfile(args.spm, os.path.join(folder, "spiece.model"))
    tokenizer = transformers.AlbertTokenizer.from_pretrained(folder)
    shutil.rmtree(folder)
    config = transformers.AlbertConfig(
        vocab_size=BASE["vocab"],
        embedding_size=BASE["embedding"],
        hidden_size=BASE["hidden"],
        num_hidden_layers=BASE["layers"],
        num_attention_heads=BASE["heads"],
        intermediate_size=BASE["intermediate"],
        num_labels=1 if regression else len(GLUE[args.task][4]),
        problem_type="regression" if regression else "single_label_classification",
        attn_implementation="sdpa",
    )
    model = transformers.AlbertForSequenceClassification(config)
    result = dict(
        system="hf",
        task=args.task,
        mode=args.mode,
        batch=args.batch,
        seq=args.seq,
        dtype="float32",
        versions=dict(
            transformers=transformers.__version__,
            torch=torch.__version__,
            numpy=np.__version__,
            python=platform.python_version(),
        ),
        torch_threads=torch.get_num_threads(),
        tokenizer=type(tokenizer).__name__ + (" (fast)" if tokenizer.is_fast else ""),
        cpu_count=os.cpu_count(),
        loadavg_at_start=[round(x, 2) for x in os.getloadavg()],
    )

    def encode(a, b, **options):
        return tokenizer(
            a,
            b,
            truncation=True,
            max_length=args.seq,
            return_token_type_ids=b is not None,
            **options,
        )

    if args.mode == "infer":
        texts_a, texts_b, _ = read_glue(args.data, args.task, "dev")
        n = args.limit or len(texts_a)
        batches = [
            (texts_a[i : i + args.batch], texts_b[i : i + args.batch] if texts_b else None)
            for i in range(0, n, args.batch)
        ]
        model.eval()

        def predict(a, b):
            x = encode(a, b, padding=True, return_tensors="pt")
            with torch.inference_mode():
                logits = model(**x).logits
            out = logits[:, 0] if regression else torch.softmax(logits, -1)
            return out.numpy(), x["attention_mask"]

        computed = present = 0
        start = time.perf_counter()
        for a, b in batches:  # warm-up pass; also counts the tokens
            _, mask = predict(a, b)
            computed, present = computed + mask.numel(), present + int(mask.sum())
        first = time.perf_counter() - start
        passes, latencies = [], []
        for _ in range(args.reps):
            start = time.perf_counter()
            for a, b in batches:
                t = time.perf_counter()
                predict(a, b)
                latencies.append(time.perf_counter() - t)
            passes.append(time.perf_counter() - start)
        result.update(
            api="tokenizer(padding=True, truncation=True, max_length) + model under "
            "torch.inference_mode() + softmax",
            examples=n,
            warmup_pass_s=round(first, 3),
        )
    else:
        texts_a, texts_b, targets = read_glue(args.data, args.task, "train")
        total = args.warmup + args.reps * args.steps
        keep = train_subset(len(texts_a), args.limit or args.batch * total)
        order = [keep[i] for i in np.random.default_rng(1).permutation(len(keep))]
        encoded = encode(
            [texts_a[i] for i in order], [texts_b[i] for i in order] if texts_b else None
        )
        rows = [{k: encoded[k][j] for k in encoded} for j in range(len(order))]
        for row, i in zip(rows, order):
            row["labels"] = targets[i]
        collate = transformers.DataCollatorWithPadding(tokenizer)
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
        step_s, losses, computed, present = [], [], 0, 0
        for s in range(total):
            start = time.perf_counter()
            chunk = [rows[(s * args.batch + j) % len(rows)] for j in range(args.batch)]
            x = collate(chunk)
            optimizer.zero_grad(set_to_none=True)
            loss = model(**x).loss
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            step_s.append(time.perf_counter() - start)
            if s >= args.warmup:
                computed += x["attention_mask"].numel()
                present += int(x["attention_mask"].sum())
        timed = step_s[args.warmup :]
        passes = [sum(timed[r * args.steps : (r + 1) * args.steps]) for r in range(args.reps)]
        latencies = []
        n = args.batch * args.steps
        result.update(
            api="AdamW(2e-5) steps; DataCollatorWithPadding over pre-tokenized examples",
            examples=len(order),
            warmup_steps=args.warmup,
            steps_per_rep=args.steps,
            warmup_s=round(sum(step_s[: args.warmup]), 3),
            loss_first_last=[round(losses[0], 4), round(losses[-1], 4)],
        )
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


if __name__ == "__main__":
    main()
