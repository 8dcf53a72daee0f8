"""Hugging Face's CPU serving paths in one process, for bench/cpu_serving.py: a transformers
`pipeline` from text to answers, timed at each batch size; one `RESULT {json}` line.

    python serving_hf.py --runtime torch --precision bfloat16 --model HF_DIR --task sst2 \\
        --texts texts.json --batches 32,1 --reps 2
    python serving_hf.py --prepare ORT_DIR --model HF_DIR --task conll   # Optimum's export

Standalone (nothing of this project). HF_DIR is our model converted with
`convert --to transformers` (the same weights, spiece.model, tokenizer_config.json).
  --runtime torch     AlbertForSequenceClassification / AlbertForTokenClassification on
                      PyTorch, every core: --precision float32; bfloat16 (the calls under
                      torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's CPU mixed
                      precision); int8 (torch.ao.quantization.quantize_dynamic on the Linear
                      layers: int8 weights, activations quantized per call).
  --runtime optimum   Optimum's ONNX Runtime model (optimum-onnx: ORTModelFor...): --prepare
                      exports HF_DIR to ORT_DIR/float32 (`from_pretrained(export=True)`) and
                      quantizes it to ORT_DIR/int8 (ORTQuantizer, dynamic, per tensor, the
                      AVX-512 VNNI configuration where the CPU has it, else AVX2's); then
                      --model ORT_DIR/<precision>.
The pipeline is the one users call: "text-classification" (answer kept: the label index)
or "token-classification" with aggregation_strategy="first" (a word's tag is its first
piece's, as the model was trained; answer kept: each text's [type, start, end] character
spans); `batch_size` texts a call, each batch padded to its
longest text. Per batch size a warm-up pass (untimed), then --reps timed passes; texts/s =
texts / the median pass. Peak RSS is the process's VmHWM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time

from process_memory import peak_rss_mb

TASKS = {"sst2": "text-classification", "conll": "token-classification"}


def _model_class(task: str, runtime: str):
    if runtime == "optimum":
        import optimum.onnxruntime as ort

        return (
            ort.ORTModelForSequenceClassification
            if task == "sst2"
            else (ort.ORTModelForTokenClassification)
        )
    import transformers

    return (
        transformers.AlbertForSequenceClassification
        if task == "sst2"
        else (transformers.AlbertForTokenClassification)
    )


def prepare(hf_dir: str, out: str, task: str) -> None:
    """Optimum's float32 export of `hf_dir` and its dynamic int8 quantization under `out`."""
    from optimum.onnxruntime import ORTQuantizer
    from optimum.onnxruntime.configuration import AutoQuantizationConfig
    from transformers import AutoTokenizer

    model = _model_class(task, "optimum").from_pretrained(hf_dir, export=True)
    model.save_pretrained(os.path.join(out, "float32"))
    AutoTokenizer.from_pretrained(hf_dir).save_pretrained(os.path.join(out, "float32"))
    flags = open("/proc/cpuinfo").read()
    vnni = "avx512_vnni" in flags
    config = (AutoQuantizationConfig.avx512_vnni if vnni else AutoQuantizationConfig.avx2)(
        is_static=False, per_channel=False
    )
    ORTQuantizer.from_pretrained(model).quantize(
        save_dir=os.path.join(out, "int8"), quantization_config=config
    )
    AutoTokenizer.from_pretrained(hf_dir).save_pretrained(os.path.join(out, "int8"))
    print(f"prepared {out} (int8: {'avx512_vnni' if vnni else 'avx2'})", flush=True)


def pipeline(args):
    """(the pipeline, a context manager factory for its calls)."""
    from transformers import AutoTokenizer
    from transformers import pipeline as make

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    if args.runtime == "optimum":
        name = "model_quantized.onnx" if args.precision == "int8" else "model.onnx"
        model = _model_class(args.task, "optimum").from_pretrained(args.model, file_name=name)
    else:
        import torch

        torch.set_num_threads(os.cpu_count())
        model = _model_class(args.task, "torch").from_pretrained(args.model).eval()
        if args.precision == "int8":
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, torch.qint8)
    extra = {"aggregation_strategy": "first"} if args.task == "conll" else {}
    pipe = make(TASKS[args.task], model=model, tokenizer=tokenizer, device="cpu", **extra)
    if args.runtime == "torch":
        import torch

        if args.precision == "bfloat16":
            return pipe, lambda: torch.autocast("cpu", dtype=torch.bfloat16)
        return pipe, torch.inference_mode
    return pipe, contextlib.nullcontext


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runtime", choices=("torch", "optimum"), default="torch")
    p.add_argument("--precision", choices=("float32", "bfloat16", "int8"), default="float32")
    p.add_argument("--model", required=True)
    p.add_argument("--task", choices=sorted(TASKS), required=True)
    p.add_argument("--texts", help="a JSON list of strings")
    p.add_argument("--batches", default="32,1")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--limit1", type=int, default=0, help="texts at batch 1 (0: all)")
    p.add_argument("--prepare", help="export --model with Optimum under this directory")
    args = p.parse_args()
    if args.prepare:
        return prepare(args.model, args.prepare, args.task)
    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    pipe, context = pipeline(args)
    label2id = pipe.model.config.label2id

    def answers(out):
        if args.task == "sst2":
            return [label2id[o["label"]] for o in out]
        return [[[e["entity_group"], int(e["start"]), int(e["end"])] for e in o] for o in out]

    result = {"texts": len(texts), "texts_per_s": {}, "answers": None}
    for batch in [int(b) for b in args.batches.split(",")]:
        some = texts[: args.limit1 or None] if batch == 1 else texts
        with context():
            start = time.perf_counter()
            warm = pipe(some, batch_size=batch)
            warm_s = time.perf_counter() - start
            if result["answers"] is None:
                result["answers"] = answers(warm)
            times = []
            for _ in range(args.reps):
                start = time.perf_counter()
                pipe(some, batch_size=batch)
                times.append(time.perf_counter() - start)
        result["texts_per_s"][batch] = len(some) / statistics.median(times or [warm_s])
    result["peak_rss_mb"] = peak_rss_mb()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
