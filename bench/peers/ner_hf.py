"""Hugging Face transformers' `pipeline("token-classification", aggregation_strategy="simple")`
on an `AlbertForTokenClassification` directory, timed on texts: one `RESULT {json}` line for
bench/ner_serving.py.

    .venv/bin/python bench/peers/ner_hf.py --model HF_DIR --texts texts.json --batch 32

Standalone (torch + transformers; nothing of this project). The directory is ours converted
with `convert --to transformers` (the same weights, spiece.model and tokenizer_config.json),
loaded with `pipeline(..., model=HF_DIR)` (its AlbertTokenizer, the tokenizers-backed one),
float32 on the CPU with `torch.set_num_threads(--threads)`. The pipeline pads each batch to
its longest text (dynamic padding) and cuts texts longer than the model's positions into
windows itself (`stride` is not set: the default truncation of the pipeline, as its users
run it). One pass = every text, `--batch` texts per call; a warm-up pass first (untimed),
then `--reps` timed passes; texts/s = texts / the median pass time. `--quantize int8`: the
model's Linear layers dynamically quantized first (`torch.ao.quantization.quantize_dynamic`,
int8 weights, activations quantized per call: PyTorch's counterpart of a dynamic-range int8
LiteRT file).
`--model_only`: the model's forward pass alone on the texts' token ids (tokenized before
timing, each batch padded to its longest), no pipeline around it: the peer's floor.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from process_memory import peak_rss_mb


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--texts", required=True, help="a JSON list of strings")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--quantize", choices=("float32", "int8"), default="float32")
    p.add_argument("--model_only", action="store_true", help="time the model's forward alone")
    args = p.parse_args()

    import torch
    from transformers import pipeline

    torch.set_num_threads(args.threads)
    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    tagger = pipeline(
        "token-classification", model=args.model, aggregation_strategy="simple", device="cpu"
    )
    if args.quantize == "int8":
        tagger.model = torch.ao.quantization.quantize_dynamic(
            tagger.model, {torch.nn.Linear}, dtype=torch.qint8
        )
    if args.model_only:
        batches = [
            tagger.tokenizer(
                texts[i : i + args.batch], padding=True, truncation=True, return_tensors="pt"
            )
            for i in range(0, len(texts), args.batch)
        ]

        def one_pass():
            with torch.inference_mode():
                for batch in batches:
                    tagger.model(**batch)
            return []
    else:

        def one_pass():
            return tagger(texts, batch_size=args.batch)

    one_pass()  # warm-up
    times, entities = [], 0
    for _ in range(args.reps):
        start = time.perf_counter()
        out = one_pass()
        times.append(time.perf_counter() - start)
        entities = sum(len(x) for x in out)
    rss_mb = peak_rss_mb()
    result = {
        "system": ("hf" if args.quantize == "float32" else f"hf-{args.quantize}")
        + ("-model" if args.model_only else ""),
        "texts": len(texts),
        "batch": args.batch,
        "texts_per_s": len(texts) / statistics.median(times),
        "entities": entities,
        "peak_rss_mb": rss_mb,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
