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

The GLUE reading, train subset, flags and RESULT line's common fields are shared with
real_text_keras_hub.py in real_text_common.py beside it (standard library and numpy).
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time

from real_text_common import BASE, GLUE, finish, head, loadavg, parser, read_glue, train_order


def main():
    p = parser(__doc__)
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
        **head("hf", args),
        versions=dict(
            transformers=transformers.__version__,
            torch=torch.__version__,
            numpy=np.__version__,
            python=platform.python_version(),
        ),
        torch_threads=torch.get_num_threads(),
        tokenizer=type(tokenizer).__name__ + (" (fast)" if tokenizer.is_fast else ""),
        cpu_count=os.cpu_count(),
        loadavg_at_start=loadavg(),
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
        total, _, order = train_order(args, len(texts_a))
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
    finish(result, args, n, passes, latencies, computed, present)


if __name__ == "__main__":
    main()
