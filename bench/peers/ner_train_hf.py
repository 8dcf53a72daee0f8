"""Hugging Face transformers' NER fine-tuning on CoNLL-2003 train, the way its token
classification example runs it: one `RESULT {json}` line for bench/ner_train.py.

    .venv/bin/python bench/peers/ner_train_hf.py --conll train.txt --spm spm.model --steps 3

Standalone (torch + transformers + numpy; nothing of this project). Model:
`AlbertForTokenClassification(AlbertConfig(--config's sizes, 9 labels))`, random weights
(speed does not depend on them), sdpa attention, float32,
`torch.set_num_threads(os.cpu_count())`; dropout as AlbertConfig's defaults (encoder 0, as
ALBERT v2; classifier 0.1). Tokenizer: transformers' `AlbertTokenizer` (the
tokenizers-backed one) from the same SentencePiece model as ours (a folder holding it as
spiece.model), lower-cased as its default. Data: the same --limit sentences as ours
(drawn at random with seed 0 from the file's sentences, `-DOCSTART-` skipped; 0: as many
as the steps need), in a seeded random order; tokenized once beforehand
(`is_split_into_words=True`, truncation at 128: `datasets.map`'s place), each word's tag
on its first piece and -100 on the others and on [CLS]/[SEP]. Each step pads its batch
with `DataCollatorForTokenClassification` (dynamic padding) and runs forward, loss,
backward and an AdamW step (lr 5e-5). --warmup steps, then --reps × --steps timed;
examples/s = the median over the reps.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

from process_memory import peak_rss_mb

SIZES = {  # bench/ner_serving.py's CONFIGS
    "base": dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072
    ),
    "tiny": dict(
        hidden_size=312, num_hidden_layers=4, num_attention_heads=12, intermediate_size=1248
    ),
}


def read_conll(path: str) -> list[tuple[list[str], list[str]]]:
    """(tokens, tags) of each sentence: token in the first column, tag in the last, blank
    lines between sentences, `-DOCSTART-` lines skipped."""
    sentences, tokens, tags = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in list(f) + [""]:
            parts = line.split()
            if parts and parts[0] == "-DOCSTART-":
                continue
            if parts:
                tokens.append(parts[0])
                tags.append(parts[-1])
            elif tokens:
                sentences.append((tokens, tags))
                tokens, tags = [], []
    return sentences


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conll", required=True)
    p.add_argument("--spm", required=True)
    p.add_argument("--config", choices=sorted(SIZES), default="base")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()

    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sentences = read_conll(args.conll)
    labels = sorted({t for _, tags in sentences for t in tags})
    total = args.warmup + args.reps * args.steps
    limit = args.limit or args.batch * total
    if limit < len(sentences):
        keep = sorted(int(i) for i in np.random.default_rng(0).choice(len(sentences), limit, False))
    else:
        keep = list(range(len(sentences)))
    order = [keep[i] for i in np.random.default_rng(1).permutation(len(keep))]

    folder = tempfile.mkdtemp(prefix="hf-spm-")
    shutil.copyfile(args.spm, os.path.join(folder, "spiece.model"))
    tokenizer = transformers.AlbertTokenizer.from_pretrained(folder)
    shutil.rmtree(folder)
    config = transformers.AlbertConfig(
        vocab_size=30000,
        embedding_size=128,
        num_labels=len(labels),
        attn_implementation="sdpa",
        **SIZES[args.config],
    )
    model = transformers.AlbertForTokenClassification(config)

    words = [sentences[i][0] for i in order]
    encoded = tokenizer(words, is_split_into_words=True, truncation=True, max_length=128)
    rows = []
    for j, i in enumerate(order):
        tags, previous, label_ids = sentences[i][1], None, []
        for w in encoded.word_ids(j):
            first = w is not None and w != previous
            label_ids.append(labels.index(tags[w]) if first else -100)
            previous = w
        rows.append({k: encoded[k][j] for k in encoded} | {"labels": label_ids})
    collate = transformers.DataCollatorForTokenClassification(tokenizer)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    step_s, losses, computed, present = [], [], 0, 0
    for s in range(total):
        start = time.perf_counter()
        x = collate([rows[(s * args.batch + j) % len(rows)] for j in range(args.batch)])
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
    reps = [sum(timed[r * args.steps : (r + 1) * args.steps]) for r in range(args.reps)]
    result = {
        "system": "hf",
        "examples_per_s": args.batch * args.steps / statistics.median(reps),
        "loss_first_last": [round(losses[0], 4), round(losses[-1], 4)],
        "tokens_computed": computed,
        "tokens_present": present,
        "peak_rss_mb": peak_rss_mb(),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
