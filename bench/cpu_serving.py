"""The fastest CPU serving path, ours against Hugging Face's: ALBERT-base, the same weights,
SST-2 dev text → probabilities and CoNLL-2003 dev text → entities, at batch 32 and batch 1,
every path in its own process, interleaved rounds; throughput, peak RSS and answers.

    python -m bench.cpu_serving                                  # ALBERT-base, random weights
    python -m bench.cpu_serving --rounds 1 --limit 64 --limit1 16 --config tiny   # quick check
    python -m bench.cpu_serving --sst2 D1 --conll D2 --limit 0 --batches 32 --rounds 1 --reps 0
        # fine-tuned model directories: accuracy per path on the whole dev sets

Paths (bench/serving_client.py for ours, bench/peers/serving_hf.py for the peers'):
  float32   ours: SavedModel (text in the graph), ONNX Runtime (`OnnxModel`, our Python
            runner); peers: HF PyTorch, HF Optimum's ONNX Runtime export.
  bfloat16  ours: SavedModel exported with --export_dtype bfloat16; peers: HF PyTorch
            under torch.autocast(bfloat16).
  int8      ours: LiteRT int8 (dynamic range) through `LiteModel`, ONNX Runtime int8
            (`--onnx_quantize int8`); peers: HF PyTorch quantize_dynamic, Optimum int8.
Without --sst2 / --conll, a random-weight model of --config (speed does not depend on the
weights) is written as a fine-tuned model directory (SST-2: 2 labels, max_seq_length 128;
CoNLL-2003: its 9 tags, doc_stride 64; lower-cased; the SentencePiece model de-30k-clean of
the data) and exported in every format (`albert_tf.serving.export.export_formats`) and to
Hugging Face (`convert --to transformers`); Optimum exports that directory itself. Our
paths need this project's .venv; the peers run from $PEERS_HOME/hf (torch 2.13,
transformers 5.23) and $PEERS_HOME/hfo (optimum-onnx 0.1, whose transformers is 4.57):
see bench/peers and ../shared/peers/README.md.

Texts: the first --limit dev examples at batch 32 (0: all), the first --limit1 at batch 1.
Each process answers one task at both batch sizes (warm-up pass, then --reps timed passes;
median); a round runs every path of a task back to back, peers and ours alternating, in
reverse order on every other round; the table gives each path's median over --rounds,
its largest peak RSS and its answers' score: `gold` (accuracy / entity F1 against the dev
labels: chance for random weights) and `agree` (against our float32 SavedModel's answers:
what a precision or runtime changes). Entity F1 counts exact [type, start, end] character
spans (their outer spaces stripped). The verdict lines compare, per precision class and
batch, our fastest path with the peers' fastest (targets: ahead everywhere, ≥ 2× at batch
32), and the in-process ONNX path with the SavedModel.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

from bench.ner_serving import CONFIGS, CONLL, DATA, SPM
from bench.serving import SST2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_HOME = os.environ.get("PEERS_HOME", os.path.expanduser("~/.cache/albert-peers"))
KINDS = {"sst2": "classifier", "conll": "token_classifier"}
# (name, precision class, who, how): ours run bench/serving_client.py --path how.
PATHS = [
    ("hf-fp32", "float32", "peer", ("torch", "float32")),
    ("ours-savedmodel-fp32", "float32", "ours", ("savedmodel", "fp32")),
    ("optimum-fp32", "float32", "peer", ("optimum", "float32")),
    ("ours-onnx-fp32", "float32", "ours", ("onnx", "float32")),
    ("hf-bf16", "bfloat16", "peer", ("torch", "bfloat16")),
    ("ours-savedmodel-bf16", "bfloat16", "ours", ("savedmodel", "bf16")),
    ("hf-int8", "int8", "peer", ("torch", "int8")),
    ("ours-litert-int8", "int8", "ours", ("litert", "int8")),
    ("optimum-int8", "int8", "peer", ("optimum", "int8")),
    ("ours-onnx-int8", "int8", "ours", ("onnx", "int8")),
]
REFERENCE = "ours-savedmodel-fp32"


def texts_and_gold(task: str, limit: int):
    """(texts, gold answers) of the dev set's first `limit` examples (0: all)."""
    if task == "sst2":
        from data_pipeline.classification.benchmark_files import read_task

        examples = read_task(SST2, "sst-2", "dev")[: limit or None]
        return [e.text_a for e in examples], [int(e.label) for e in examples]
    from data_pipeline.tagging.data import read_conll
    from data_pipeline.tagging.metrics import entities

    texts, gold = [], []
    for s in read_conll(os.path.join(CONLL, "dev.txt"))[: limit or None]:
        starts = [sum(len(w) + 1 for w in s.tokens[:i]) for i in range(len(s.tokens))]
        texts.append(" ".join(s.tokens))
        gold.append(
            [
                [kind, starts[a], starts[b - 1] + len(s.tokens[b - 1])]
                for kind, a, b in entities([s.tags])
            ]
        )
    return texts, gold


def score(task: str, answers, reference, texts) -> float:
    """Accuracy (sst2) or entity F1 (conll) of `answers` against `reference`, ×100; an
    entity counts when its type and character span match, the span without the spaces
    around it (Optimum's pipeline starts a span at the space before its word)."""
    if task == "sst2":
        return 100 * sum(a == b for a, b in zip(answers, reference)) / len(reference)

    def spans(entities, text):
        out = set()
        for kind, start, end in entities:
            word = text[start:end]
            start += len(word) - len(word.lstrip())
            out.add((kind, start, start + len(word.strip())))
        return out

    found = predicted = wanted = 0
    for mine, theirs, text in zip(answers, reference, texts):
        mine, theirs = spans(mine, text), spans(theirs, text)
        found += len(mine & theirs)
        predicted += len(mine)
        wanted += len(theirs)
    return 100 * 2 * found / max(predicted + wanted, 1)


def random_finetuned(task: str, config_name: str, out: str) -> str:
    """A random-weight fine-tuned model directory of `task` under `out`."""
    import keras

    from albert_tf import AlbertConfig
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tagging.data import discover_labels, read_conll
    from data_pipeline.tokenization.spec import TokenizerSpec

    keras.utils.set_random_seed(0)
    config = AlbertConfig(vocab_size=30000, **CONFIGS[config_name])
    if task == "sst2":
        info = TaskInfo.build(
            "classifier",
            task_name="sst-2",
            labels=["0", "1"],
            regression=False,
            num_choices=None,
            max_seq_length=128,
            do_lower_case=True,
            text_pair=False,
        )
    else:
        labels = discover_labels(read_conll(os.path.join(CONLL, "train.txt")))
        info = TaskInfo.build(
            "token_classifier",
            labels=labels,
            max_seq_length=128,
            doc_stride=64,
            do_lower_case=True,
        )
    model = info.model(config)
    model.build()
    return save_finetuned(
        model, os.path.join(out, "finetuned"), info, TokenizerSpec.from_files(SPM)
    )


def build(task: str, finetuned: str | None, args) -> dict:
    """Every path's model file or directory for `task` (exports written under
    --output_dir/task)."""
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.serving.export import export_formats

    out = os.path.join(args.output_dir, task)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    finetuned = finetuned or random_finetuned(task, args.config, out)
    kind = KINDS[task]
    files = export_formats(
        kind,
        finetuned,
        os.path.join(out, "fp32"),
        ("savedmodel", "onnx", "tflite"),
        quantize=("int8",),
        onnx_quantize=("float32", "int8"),
    )
    (bf16,) = export_formats(kind, finetuned, os.path.join(out, "bf16"), dtype="bfloat16")
    hf = os.path.join(out, "hf")
    export_transformers(finetuned, hf)
    optimum = os.path.join(out, "optimum")
    peer(["--prepare", optimum, "--model", hf, "--task", task], "optimum")
    models = {
        ("savedmodel", "fp32"): files[0],
        ("savedmodel", "bf16"): bf16,
        ("litert", "int8"): next(f for f in files if f.endswith("-int8.tflite")),
        ("onnx", "float32"): next(f for f in files if f.endswith(f"{kind}.onnx")),
        ("onnx", "int8"): next(f for f in files if f.endswith("-int8.onnx")),
        ("torch", "float32"): hf,
        ("torch", "bfloat16"): hf,
        ("torch", "int8"): hf,
        ("optimum", "float32"): os.path.join(optimum, "float32"),
        ("optimum", "int8"): os.path.join(optimum, "int8"),
    }
    return models


def peer(argv: list[str], runtime: str) -> dict | None:
    venv = "hfo" if runtime == "optimum" else "hf"
    script = os.path.join(ROOT, "bench", "peers", "serving_hf.py")
    cmd = [os.path.join(PEERS_HOME, venv, "bin", "python"), script, "--runtime", runtime, *argv]
    return run(cmd, "")


def run(cmd: list[str], pythonpath: str) -> dict | None:
    env = dict(os.environ, PYTHONPATH=pythonpath, TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed:\n{out.stderr[-3000:]}")
    return None


def one_path(path, task: str, model: str, texts_file: str, args) -> dict:
    name, _, who, (how, precision) = path
    common = ["--task", task, "--texts", texts_file, "--batches", args.batches]
    common += ["--reps", str(args.reps), "--limit1", str(args.limit1)]
    if who == "ours":
        client = [sys.executable, "-m", "bench.serving_client"]
        return run([*client, "--path", how, "--model", model, *common], ROOT)
    return peer(["--precision", precision, "--model", model, *common], how)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="base")
    p.add_argument("--tasks", default="sst2,conll")
    p.add_argument("--sst2", help="a fine-tuned SST-2 model directory (default: random weights)")
    p.add_argument("--conll", help="a fine-tuned CoNLL-2003 token classifier directory")
    p.add_argument("--limit", type=int, default=128, help="dev texts at batch 32 (0: all)")
    p.add_argument("--limit1", type=int, default=32, help="dev texts at batch 1")
    p.add_argument("--batches", default="32,1")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--paths", help="comma-separated path names (default: all)")
    p.add_argument("--output_dir", default="/tmp/albert_bench_cpu_serving")
    p.add_argument("--json_out", help="also write every result to this JSON file")
    p.add_argument(
        "--floor",
        action="store_true",
        help="also the two float32 ONNX files' sessions alone at batch 1 on the same ids",
    )
    args = p.parse_args(argv)
    if not os.path.exists(SPM):
        sys.exit(f"needs $ALBERT_TF_DATA ({DATA})")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    paths = [x for x in PATHS if not args.paths or x[0] in args.paths.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    print(
        f"{os.uname().nodename}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
        f"{args.config if not (args.sst2 or args.conll) else 'fine-tuned'}, "
        f"--limit {args.limit} --limit1 {args.limit1} --reps {args.reps}",
        flush=True,
    )
    results = {}
    for task in args.tasks.split(","):
        texts, gold = texts_and_gold(task, args.limit)
        models = build(task, getattr(args, task), args)
        texts_file = os.path.join(args.output_dir, task, "texts.json")
        with open(texts_file, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        runs = {x[0]: [] for x in paths}
        for r in range(args.rounds):
            for path in paths if r % 2 == 0 else paths[::-1]:
                result = one_path(path, task, models[path[3]], texts_file, args)
                runs[path[0]].append(result)
                speeds = " ".join(f"b{b} {result['texts_per_s'][str(b)]:.2f}" for b in batches)
                print(
                    f"{task} round {r} {path[0]:<21} {speeds} texts/s, "
                    f"{result['peak_rss_mb']:.0f} MB",
                    flush=True,
                )
        results[task] = report(task, paths, runs, texts, gold, batches)
        if args.floor:
            results[task]["floor"] = floor(task, models, texts[: args.limit1], args.reps)
        print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def floor(task: str, models: dict, texts: list[str], reps: int) -> dict:
    """The float32 batch-1 floor both ONNX Runtime paths share: our file's session and
    Optimum's on the same token ids (ours, one text a call, no padding), no text handling
    around them, a pass of each in turns (one session's threads spin for a while after
    its call, so the two are not mixed call by call); texts/s of each."""
    import time

    import numpy as np
    import onnxruntime as ort

    from albert_tf.serving.onnx_predict import OnnxModel

    ours = OnnxModel(models[("onnx", "float32")])
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    theirs = ort.InferenceSession(
        os.path.join(models[("optimum", "float32")], "model.onnx"),
        options,
        providers=["CPUExecutionProvider"],
    )
    names = {"input_ids": "input_ids", "attention_mask": "input_mask"}
    names["token_type_ids"] = "segment_ids"
    rows = [ours.tokenize([t], [""]) for t in texts]
    feeds = [
        {i.name: row[names[i.name]].astype(np.int64) for i in theirs.get_inputs()} for row in rows
    ]
    calls = {"ours": lambda: [ours.session.run(None, row) for row in rows]}
    calls["optimum"] = lambda: [theirs.run(None, feed) for feed in feeds]
    spent = {"ours": 0.0, "optimum": 0.0}
    for rep in range(reps + 1):  # (the first pass warms up)
        for name in sorted(calls, reverse=rep % 2 == 1):
            start = time.perf_counter()
            calls[name]()
            spent[name] += (time.perf_counter() - start) if rep else 0.0
    speed = {k: reps * len(rows) / v for k, v in spent.items()}
    print(
        f"{task} float32 batch 1 floor (sessions alone, same ids): ours {speed['ours']:.2f}, "
        f"optimum {speed['optimum']:.2f} texts/s = {speed['ours'] / speed['optimum']:.2f}×"
    )
    return speed


def report(task: str, paths, runs: dict, texts, gold, batches) -> dict:
    """The task's table and verdict lines; returns the rows."""
    metric = "accuracy" if task == "sst2" else "entity F1"
    reference = runs[REFERENCE][0]["answers"] if runs.get(REFERENCE) else None
    rows = {}
    head = " | ".join(f"batch {b} texts/s" for b in batches)
    print(f"\n| {task} path | class | {head} | peak RSS MB | {metric} gold | agree |")
    print("|---|---|" + "---|" * len(batches) + "---|---|---|")
    for name, precision, who, _ in paths:
        speed = {
            b: statistics.median(r["texts_per_s"][str(b)] for r in runs[name]) for b in batches
        }
        answers = runs[name][0]["answers"]
        row = dict(
            precision=precision,
            who=who,
            speed=speed,
            rss=max(r["peak_rss_mb"] for r in runs[name]),
            gold=score(task, answers, gold[: len(answers)], texts),
            agree=score(task, answers, reference, texts) if reference else float("nan"),
        )
        rows[name] = row
        cells = " | ".join(f"{speed[b]:.2f}" for b in batches)
        print(
            f"| {name} | {precision} | {cells} | {row['rss']:.0f} | {row['gold']:.2f} | "
            f"{row['agree']:.2f} |"
        )
    print()
    for precision in ("float32", "bfloat16", "int8"):
        for b in batches:
            mine = [
                (r["speed"][b], n)
                for n, r in rows.items()
                if r["precision"] == precision and r["who"] == "ours"
            ]
            theirs = [
                (r["speed"][b], n)
                for n, r in rows.items()
                if r["precision"] == precision and r["who"] == "peer"
            ]
            if mine and theirs:
                (a, an), (c, cn) = max(mine), max(theirs)
                print(
                    f"{task} {precision} batch {b}: {an} {a:.2f} / {cn} {c:.2f} = {a / c:.2f}×"
                    f" (target > 1{', ≥ 2' if b > 1 else ''})"
                )
    if "ours-onnx-fp32" in rows and REFERENCE in rows:
        for b in batches:
            ratio = rows["ours-onnx-fp32"]["speed"][b] / rows[REFERENCE]["speed"][b]
            print(f"{task} batch {b}: in-process ONNX / SavedModel float32 = {ratio:.2f}")
    return rows


if __name__ == "__main__":
    sys.exit(main())
