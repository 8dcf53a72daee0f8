"""One of our serving paths in its own process, for bench/cpu_serving.py: text in, answers
out, timed at each batch size; one `RESULT {json}` line.

    python -m bench.serving_client --path savedmodel --model DIR/1 --task sst2 \\
        --texts texts.json --batches 32,1 --reps 2

Paths (each the way a user serves it; nothing of the bench's process is shared):
  savedmodel  tf.saved_model.load + signatures["serving_default"] on raw strings
              (tokenizer, packing, model and answers in the graph); imports tensorflow and
              tensorflow_text only, as a serving client does. float32 or a bfloat16 export.
  onnx        albert_tf.serving.onnx_predict.OnnxModel (`classify` / `tag`): text packed
              in Python with the tokenizer recorded beside the file, ONNX Runtime on every
              core; no TensorFlow.
  litert      albert_tf.serving.tflite_predict.LiteModel (`classify` / `tag`), XNNPack on
              every core.
Tasks: sst2 (text → probabilities; the answer kept is the label index) and conll (text →
entities; the answer kept is each text's [type, start, end] character spans).

One pass = every text in calls of `batch` texts; per batch size a warm-up pass (untimed)
then --reps timed passes; texts/s = texts / the median pass. The answers of the first
batch size's warm-up pass are returned (`answers`), with the process's peak RSS (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from bench.peers.process_memory import peak_rss_mb


def savedmodel(path: str, task: str):
    """A function: texts → answers, through the SavedModel's serving_default."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer ops' kernels)

    fn = tf.saved_model.load(path).signatures["serving_default"]
    if task == "sst2":
        return lambda texts: fn(text_a=tf.constant(texts))["probabilities"].numpy().argmax(-1)

    def entities(texts):
        out = {k: v.numpy() for k, v in fn(text=tf.constant(texts)).items()}
        kinds, starts, ends = out["entity_type"], out["entity_start"], out["entity_end"]
        return [
            [[kinds[i, j].decode(), int(starts[i, j]), int(ends[i, j])] for j in range(n)]
            for i, n in enumerate(out["num_entities"])
        ]

    return entities


def runner(path: str, task: str, kind: str):
    """A function: texts → answers, through our Python runner of an ONNX or LiteRT file."""
    if kind == "onnx":
        from albert_tf.serving.onnx_predict import OnnxModel as Model
    else:
        from albert_tf.serving.tflite_predict import LiteModel as Model
    model = Model(path)
    if task == "sst2":
        return lambda texts: model.classify(texts)["probabilities"].argmax(-1)
    return lambda texts: [
        [[e["type"], e["start"], e["end"]] for e in answer["entities"]]
        for answer in model.tag(texts)
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--path", choices=("savedmodel", "onnx", "litert"), required=True)
    p.add_argument("--model", required=True, help="a SavedModel version directory or file")
    p.add_argument("--task", choices=("sst2", "conll"), required=True)
    p.add_argument("--texts", required=True, help="a JSON list of strings")
    p.add_argument("--batches", default="32,1")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--limit1", type=int, default=0, help="texts at batch 1 (0: all)")
    args = p.parse_args()
    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    if args.path == "savedmodel":
        answer = savedmodel(args.model, args.task)
    else:
        answer = runner(args.model, args.task, args.path)
    result = {"texts": len(texts), "texts_per_s": {}, "answers": None}
    for batch in [int(b) for b in args.batches.split(",")]:
        some = texts[: args.limit1 or None] if batch == 1 else texts
        calls = [some[i : i + batch] for i in range(0, len(some), batch)]
        start = time.perf_counter()
        warm = [a for call in calls for a in answer(call)]
        warm_s = time.perf_counter() - start
        if result["answers"] is None:
            result["answers"] = [a.tolist() if hasattr(a, "tolist") else a for a in warm]
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            for call in calls:
                answer(call)
            times.append(time.perf_counter() - start)
        result["texts_per_s"][batch] = len(some) / statistics.median(times or [warm_s])
    result["peak_rss_mb"] = peak_rss_mb()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
