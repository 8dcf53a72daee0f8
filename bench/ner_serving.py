"""NER serving throughput, text → entities: our token-classification SavedModel against Hugging
Face's `pipeline("token-classification", aggregation_strategy="simple")` on PyTorch CPU with
the same weights, on CoNLL-2003 dev text.

    python -m bench.ner_serving                          # ALBERT-base, batch 32 and 1
    python -m bench.ner_serving --config tiny --limit 64 # a quick check
    python -m bench.ner_serving --batches 1 --floor      # and each model's forward alone

Setting: a random-weight `AlbertTokenClassifier` (CoNLL-2003's 9 tags, from its train
file; speed does not depend on the weights) of --config's sizes is written as a fine-tuned
model directory (max_seq_length 128, doc_stride 64, lower-cased, the German SentencePiece
model of the real data), exported with `albert_tf.serving.export` (SavedModel) and with
`convert --to transformers` (AlbertForTokenClassification) under --output_dir (replaced on
every run). The texts are the first --limit CoNLL-2003 dev sentences, words joined by
spaces.
  ours  a fresh process (tensorflow + tensorflow_text only) loads the SavedModel and calls
        signatures["serving_default"](text=[batch]) (words, pieces, windows, model, tags
        and entities in the graph);
  hf    bench/peers/ner_hf.py: the pipeline with aggregation_strategy="simple" (its
        tokenizer, dynamic padding, the model, entity grouping);
  hf-int8 (with --lite ...int8) the same pipeline with PyTorch's dynamic int8 Linear layers;
  lite  (with --lite float32[,int8]) the same model as LiteRT files through `LiteModel.tag`
        (albert_tf.serving.tflite_predict: the runner's Python words, pieces, windows and
        entities around the file's logits; XNNPack, every core), `--batch` texts a call;
        int8 is dynamic-range quantization (int8 weights, float activations): a different
        precision, so its entity F1 is measured apart (experiments/ner_litert_quality.py).
With --floor, two more rows, the models' forward passes alone on the texts' token ids
(tokenized before timing, each call's texts padded to their longest; no text handling, no
entities): ours-model (the fine-tuned Keras model, its `logits` in a tf.function) and
hf-model (`AlbertForTokenClassification` under inference_mode). At batch 1 (no padding on
either side) ours-model is the least time a TensorFlow serving path of this float32 model
can take, so ours-model / hf bounds the ratio a SavedModel with zero overhead would reach
(the LiteRT rows run other kernels, XNNPack's); at larger batches ours-model pads where the
SavedModel packs, so it is no bound there.
Each system runs in its own process: a warm-up pass (untimed), then --reps timed passes
over the texts; texts/s = texts / the median pass. The processes run interleaved, peer,
ours, peer, so that load from other jobs falls on both; the table gives each run, and the
ratio ours / the peers' median. Peak RSS (VmHWM) of each process is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
SPM = os.path.join(DATA, "spm", "de-30k-clean.model")
CONLL = os.path.join(DATA, "ner", "conll2003")
CONFIGS = {
    "base": dict(
        embedding_size=128,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "tiny": dict(
        embedding_size=128,
        hidden_size=312,
        num_hidden_layers=4,
        num_attention_heads=12,
        intermediate_size=1248,
    ),
}

# The fresh client process: tensorflow and tensorflow_text only (nothing of this project).
OURS = """\
import json, statistics, sys, time
import tensorflow as tf
import tensorflow_text  # noqa: F401
path, texts_file, batch, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
texts = json.load(open(texts_file, encoding="utf-8"))
fn = tf.saved_model.load(path).signatures["serving_default"]
def one_pass():
    found = 0
    for i in range(0, len(texts), batch):
        found += int(tf.reduce_sum(fn(text=tf.constant(texts[i : i + batch]))["num_entities"]))
    return found
one_pass()
times = []
for _ in range(reps):
    t = time.perf_counter(); found = one_pass(); times.append(time.perf_counter() - t)
print("RESULT " + json.dumps({"system": "ours", "texts": len(texts), "batch": batch,
      "texts_per_s": len(texts) / statistics.median(times), "entities": found,
      "peak_rss_mb": int([l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
                         .split()[1]) / 1024}), flush=True)
"""

# The on-device runner's client: this project's LiteModel (its Python runner) and LiteRT.
LITE = """\
import json, statistics, sys, time
from albert_tf.serving.tflite_predict import LiteModel
path, texts_file, batch, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
texts = json.load(open(texts_file, encoding="utf-8"))
lite = LiteModel(path)
def one_pass():
    return sum(len(r["entities"]) for i in range(0, len(texts), batch)
               for r in lite.tag(texts[i : i + batch], batch_size=batch))
one_pass()
times = []
for _ in range(reps):
    t = time.perf_counter(); found = one_pass(); times.append(time.perf_counter() - t)
print("RESULT " + json.dumps({"system": "lite", "texts": len(texts), "batch": batch,
      "texts_per_s": len(texts) / statistics.median(times), "entities": found,
      "peak_rss_mb": int([l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
                         .split()[1]) / 1024}), flush=True)
"""

# The floor: the fine-tuned model's forward pass alone on token ids (this project's code).
FLOOR = """\
import json, statistics, sys, time
import tensorflow as tf
from albert_tf.checkpoints.finetuned import load_finetuned
path, texts_file, batch, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
texts = json.load(open(texts_file, encoding="utf-8"))
model, task = load_finetuned(path)
tok = task.tokenizer().build()
rows = [[tok.cls_id, *tok.encode(t)[: task.max_seq_length - 2], tok.sep_id] for t in texts]
@tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
def logits(ids, mask):
    inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": tf.zeros_like(ids)}
    return model(inputs)["logits"]
calls = []
for i in range(0, len(rows), batch):
    group = rows[i : i + batch]; n = max(map(len, group))
    calls.append((tf.constant([r + [0] * (n - len(r)) for r in group], tf.int32),
                  tf.constant([[1] * len(r) + [0] * (n - len(r)) for r in group], tf.int32)))
def one_pass():
    for ids, mask in calls:
        logits(ids, mask).numpy()
one_pass()
times = []
for _ in range(reps):
    t = time.perf_counter(); one_pass(); times.append(time.perf_counter() - t)
print("RESULT " + json.dumps({"system": "ours-model", "texts": len(texts), "batch": batch,
      "texts_per_s": len(texts) / statistics.median(times), "entities": 0,
      "peak_rss_mb": int([l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
                         .split()[1]) / 1024}), flush=True)
"""


def build(args) -> tuple[str, str]:
    """(SavedModel version directory, Hugging Face directory) of one random model."""
    import keras

    from albert_tf import AlbertConfig
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.serving.export import export
    from data_pipeline.tagging.data import discover_labels, read_conll
    from data_pipeline.tokenization.spec import TokenizerSpec

    labels = discover_labels(read_conll(os.path.join(CONLL, "train.txt")))
    shutil.rmtree(args.output_dir, ignore_errors=True)
    os.makedirs(args.output_dir)
    keras.utils.set_random_seed(0)
    config = AlbertConfig(vocab_size=30000, **CONFIGS[args.config])
    info = TaskInfo.build(
        "token_classifier", labels=labels, max_seq_length=128, doc_stride=64, do_lower_case=True
    )
    model = info.model(config)
    model.build()
    finetuned = save_finetuned(
        model, os.path.join(args.output_dir, "finetuned"), info, TokenizerSpec.from_files(SPM)
    )
    args.finetuned = finetuned
    saved = export("token_classifier", finetuned, os.path.join(args.output_dir, "saved_model"))
    args.lite_files = {}
    if args.lite:
        from albert_tf.serving.export import export_tflite

        lite_dir = os.path.join(args.output_dir, "lite")
        files = export_tflite("token_classifier", finetuned, lite_dir, tuple(args.lite))
        args.lite_files = dict(zip(args.lite, files))
    hf = os.path.join(args.output_dir, "hf")
    export_transformers(finetuned, hf)
    return saved, hf


def run(cmd: list[str], pythonpath: str = "") -> dict:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{cmd[1]} failed:\n{out.stderr[-2000:]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="base")
    p.add_argument("--limit", type=int, default=256, help="CoNLL-2003 dev sentences")
    p.add_argument("--batches", default="32,1")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--output_dir", default="/tmp/albert_tf_bench_ner")
    p.add_argument(
        "--lite",
        nargs="?",
        const="float32",
        default="",
        help="also these LiteRT files' runner: float32 (the default), int8, or both "
        "comma-separated",
    )
    p.add_argument(
        "--floor",
        action="store_true",
        help="also the two models' forward passes alone on token ids",
    )
    args = p.parse_args(argv)
    args.lite = [q for q in args.lite.split(",") if q]

    from data_pipeline.tagging.data import read_conll

    sentences = read_conll(os.path.join(CONLL, "dev.txt"))[: args.limit]
    texts_file = os.path.join(args.output_dir, "texts.json")
    saved, hf = build(args)
    with open(texts_file, "w", encoding="utf-8") as f:
        json.dump([" ".join(s.tokens) for s in sentences], f)
    client = os.path.join(args.output_dir, "ours_client.py")
    with open(client, "w", encoding="utf-8") as f:
        f.write(OURS)
    lite_client = os.path.join(args.output_dir, "lite_client.py")
    with open(lite_client, "w", encoding="utf-8") as f:
        f.write(LITE)
    floor_client = os.path.join(args.output_dir, "floor_client.py")
    with open(floor_client, "w", encoding="utf-8") as f:
        f.write(FLOOR)
    peer = os.path.join(ROOT, "bench", "peers", "ner_hf.py")
    print(f"{args.config}, {len(sentences)} CoNLL-2003 dev texts, --reps {args.reps}")
    print(f"{'batch':>5}  {'run':<11} {'texts/s':>9} {'entities':>9} {'peak RSS MB':>12}")
    for batch in [int(b) for b in args.batches.split(",")]:
        lites = [f"lite-{q}" for q in args.lite]
        hf_int8 = ["hf-int8"] if "int8" in args.lite else []  # the like-for-like int8 peer
        floors = ["hf-model", "ours-model"] if args.floor else []
        systems = ("hf", "ours", *lites, *hf_int8, *floors, "hf")  # interleaved: peer, ours, peer
        rows = {system: [] for system in systems}
        for system in systems:
            mine = {"ours": (client, saved), "ours-model": (floor_client, args.finetuned)}
            mine.update({f"lite-{q}": (lite_client, f) for q, f in args.lite_files.items()})
            if system in mine:
                script, model = mine[system]
                cmd = [sys.executable, script, model, texts_file, str(batch), str(args.reps)]
            else:
                cmd = [
                    sys.executable,
                    peer,
                    "--model",
                    hf,
                    "--texts",
                    texts_file,
                    "--batch",
                    str(batch),
                    "--reps",
                    str(args.reps),
                    "--quantize",
                    "int8" if system == "hf-int8" else "float32",
                ]
                cmd += ["--model_only"] if system == "hf-model" else []
            r = run(cmd, ROOT if system.startswith(("lite", "ours-")) else "")
            rows[system].append(r)
            print(
                f"{batch:>5}  {system:<11} {r['texts_per_s']:>9.1f} {r['entities']:>9} "
                f"{r['peak_rss_mb']:>12.0f}",
                flush=True,
            )
        peer_median = statistics.median([r["texts_per_s"] for r in rows["hf"]])
        for system in ("ours", *lites):
            for r in rows[system]:
                ratio = r["texts_per_s"] / peer_median
                print(f"{batch:>5}  {system} / hf = {ratio:.2f} (target ≥ 2)")
        for r in rows["lite-int8"] if hf_int8 else []:
            ratio = r["texts_per_s"] / rows["hf-int8"][0]["texts_per_s"]
            print(f"{batch:>5}  lite-int8 / hf-int8 = {ratio:.2f}")
        if args.floor:
            ours_model = rows["ours-model"][0]["texts_per_s"]
            what = "the zero-overhead bound" if batch == 1 else "padded, where ours packs"
            print(
                f"{batch:>5}  ours-model / hf = {ours_model / peer_median:.2f} ({what}); "
                f"ours-model / hf-model = "
                f"{ours_model / rows['hf-model'][0]['texts_per_s']:.2f}"
            )
        print(f"{batch:>5}  load average {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
