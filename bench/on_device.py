"""The on-device bench: ALBERT's LiteRT files that take raw text (albert_tf.serving.litert)
against the SavedModel of the same model, in one run.

    python -m bench.on_device                                  # every part
    python -m bench.on_device --parts size,latency --sentences 50
    python -m bench.on_device --parts tokens --limit 500       # first 500 lines of each file

Parts (--parts):
  accuracy  Real dev sets, fine-tuned models (--sst2_export, --mrpc_export, --squad_export:
            SavedModel version directories, or export directories whose newest version is
            taken; the fine-tuned model directory is VERSION/assets.extra/finetuned, exported
            here to .tflite at float32, float16 and int8). SST-2 and MRPC dev (GLUE, read with
            the task's own reader, `TaskSpec.read`): the SavedModel's serving_default against
            each .tflite (`LiteModel.classify`): accuracy (MRPC: and F1), its change in points,
            predictions that flip and the largest |Δ probability|. SQuAD (--squad_slice, a
            v1.1 dev slice): the SavedModel's serving_default(question, context) against
            `LiteModel.predict_squad` (the runner's Python windowing): EM/F1 with
            `evaluate_v1`, their change in points, answers that differ and the largest
            difference of the best span's score (start + end logit).
  size      Every .tflite in MB (10^6 bytes; the SentencePiece model travels in the file), and
            an ALBERT-base-size classifier with random weights (AlbertConfig.preset("base"),
            2 labels, --spm): saved as a fine-tuned model directory, exported as SavedModel
            and .tflite at float32, float16, int8 (and int8 --fixed_length). Target: base
            int8 ≤ 15 MB.
  latency   The base-size model at batch 1 on real SST-2 dev sentences: the float32
            SavedModel's serving_default in this process against `LiteModel.classify` of each
            .tflite with each of --threads interpreter threads (default: 1 and the machine's
            cores; the SavedModel uses TensorFlow's default thread
            pools, one per process, so it is timed once). After a warm-up, blocks of
            --block sentences go through every system in turn, the order rotated each block,
            so drift of the machine falls on all alike. p50/p95 ms; target: SavedModel p50 /
            int8 p50 ≥ 2. The largest |Δ probability| from the SavedModel is printed too (the
            same random weights, so the files are checked as well as timed).
  tokens    The LiteRT `tokenize` signature (a tiny random-weight classifier exported with
            max_seq_length 512: the text path does not depend on the weights) against
            `AlbertTokenizer.encode` on every non-empty line of WikiText-2 valid, every zh_news
            file and ChnSentiCorp dev (--spm, lower-cased): the first max_seq_length - 2 ids of
            each line against the packed `[CLS] ids [SEP]`. Each differing line is printed
            with its first differing position and the pieces on both sides, and classified:
            final sigma (Python lower-cases a word-final Σ to ς, the baked charsmap always
            gives σ: the line re-encoded with σ for Σ equals the LiteRT ids), segmentation
            (the same text cut into different pieces: FastSentencepiece and Python
            SentencePiece breaking a near-tie differently, on long unbroken runs), or
            unclassified.

Files go under --work (default: on_device/ beside --out). A .tflite or SavedModel newer than
the model directory it was exported from and than the export code is reused, so a second run
measures without converting again (--fresh exports everything once more). Results, with each
part's wall time and the export times, go to --out as JSON.

Run the latency part on an idle machine: with other jobs on the cores every parallel op waits
for its threads, and the figures say more about the load than about the files. The load
average at the start and the end of the run is printed.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
OUT = os.path.join(os.path.dirname(ROOT), "bench_out", "ondevice")

PARTS = ("accuracy", "size", "latency", "tokens")
QUANTIZATIONS = ("float32", "float16", "int8")
# What a reused file must be newer than, besides the model directory it came from.
EXPORT_CODE = [
    os.path.join(ROOT, p)
    for p in (
        "albert_tf/serving/litert.py",
        "albert_tf/serving/litert_text.py",
        "albert_tf/serving/export.py",
        "albert_tf/serving/base.py",
        "albert_tf/serving/text_ops.py",
        "albert_tf/serving/resolve.py",
        "albert_tf/serving/tasks/classifier/modules.py",
        "albert_tf/serving/tasks/multiple_choice/modules.py",
        "albert_tf/serving/tasks/encoder/modules.py",
        "albert_tf/serving/tasks/squad/modules.py",
        "data_pipeline/tokenization/baked_normalization.py",
        "data_pipeline/tokenization/sentencepiece_tokenizer.py",
    )
]
BATCH = 64  # rows per call where only the results matter (accuracy, tokens)
BASE_SIZE_TARGET_MB = 15.0
SPEEDUP_TARGET = 2.0
LOAD_AT_START = os.getloadavg()[0]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fmt(x, spec=".2f", none="–") -> str:
    return none if x is None else format(x, spec)


def markdown(head: list[str], rows: list[list]) -> None:
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    print()


# --- files -----------------------------------------------------------------------------------


def version_dir(path: str) -> str:
    """A SavedModel version directory: `path` itself, or its highest numbered version."""
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    versions = [
        int(d)
        for d in (os.listdir(path) if os.path.isdir(path) else [])
        if d.isdigit() and os.path.exists(os.path.join(path, d, "saved_model.pb"))
    ]
    if not versions:
        raise FileNotFoundError(f"{path}: no SavedModel (saved_model.pb) in it or in a version")
    return os.path.join(path, str(max(versions)))


def finetuned_dir(version: str) -> str:
    path = os.path.join(version, "assets.extra", "finetuned")
    if not os.path.exists(os.path.join(path, "task.json")):
        raise FileNotFoundError(f"{version}: no fine-tuned model directory at {path}")
    return path


def newest_mtime(paths: list[str]) -> float:
    """The latest modification time of `paths` and of every file under those that are
    directories."""
    times = []
    for path in paths:
        times.append(os.path.getmtime(path))
        for folder, _, names in os.walk(path):
            times += [os.path.getmtime(os.path.join(folder, n)) for n in names]
    return max(times)


def is_fresh(args, path: str, sources: list[str]) -> bool:
    """`path` was made by this run, or (without --fresh) exists and is newer than
    `sources`."""
    if path in args.made:
        return True
    return (
        not args.fresh and os.path.exists(path) and os.path.getmtime(path) > newest_mtime(sources)
    )


def litert_files(args, task, finetuned, directory, quantize=QUANTIZATIONS, fixed=False, **options):
    """{quantization: .tflite} of the fine-tuned model `finetuned` under `directory`,
    exported unless fresh; the export's seconds go to `args.export_seconds`."""
    from albert_tf.serving.export import export_tflite

    suffix = "-fixed" if fixed else ""
    paths = {q: os.path.join(directory, f"{task}-{q}{suffix}.tflite") for q in quantize}
    stale = [q for q, p in paths.items() if not is_fresh(args, p, [finetuned, *EXPORT_CODE])]
    if stale:
        log(f"export {task} {', '.join(stale)}{suffix} → {directory}")
        start = time.perf_counter()
        export_tflite(task, finetuned, directory, stale, fixed, **options)
        args.made.update(paths[q] for q in stale)
        seconds = time.perf_counter() - start
        label = f"{os.path.relpath(directory, args.work)} {','.join(stale)}{suffix}"
        args.export_seconds[label] = seconds
    return paths


def savedmodel_version(args, task, finetuned, directory, **options) -> str:
    """The newest SavedModel version under `directory` if fresh, else a new export."""
    from albert_tf.serving.export import export

    try:
        version = version_dir(directory)
        if is_fresh(args, os.path.join(version, "saved_model.pb"), [finetuned, *EXPORT_CODE]):
            return version
    except FileNotFoundError:
        pass
    log(f"export {task} SavedModel → {directory}")
    start = time.perf_counter()
    version = export(task, finetuned, directory, **options)
    args.made.add(os.path.join(version, "saved_model.pb"))
    args.export_seconds[os.path.relpath(directory, args.work)] = time.perf_counter() - start
    return version


def random_classifier(args, directory, config, max_seq_length: int) -> str:
    """A fine-tuned model directory of a 2-label AlbertClassifier with random weights (seed
    0), the SentencePiece model --spm, lower-cased; kept when it exists."""
    if os.path.exists(os.path.join(directory, "task.json")) and (
        directory in args.made or not args.fresh
    ):
        return directory
    import shutil

    import keras

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.models import AlbertClassifier
    from data_pipeline.tokenization.spec import TokenizerSpec

    shutil.rmtree(directory, ignore_errors=True)
    keras.utils.set_random_seed(0)
    model = AlbertClassifier(config, 2, dropout=0.0)
    model.build()
    task = {
        "kind": "classifier",
        "task_name": "random",
        "labels": ["negative", "positive"],
        "regression": False,
        "max_seq_length": max_seq_length,
        "do_lower_case": True,
        "text_pair": False,
    }
    args.made.add(directory)
    return save_finetuned(
        model, directory, TaskInfo.build(**task), TokenizerSpec.from_files(args.spm)
    )


def base_model(args) -> dict:
    """The base-size random-weight classifier: {"finetuned", "savedmodel", quantization:
    .tflite, "int8-fixed": .tflite}."""
    from albert_tf import AlbertConfig

    directory = os.path.join(args.work, "base")
    config = AlbertConfig.preset("base")
    finetuned = random_classifier(args, os.path.join(directory, "finetuned"), config, args.seq)
    files = {"finetuned": finetuned}
    files["savedmodel"] = savedmodel_version(
        args, "classifier", finetuned, os.path.join(directory, "savedmodel")
    )
    files.update(litert_files(args, "classifier", finetuned, os.path.join(directory, "litert")))
    fixed = litert_files(
        args, "classifier", finetuned, os.path.join(directory, "litert"), ("int8",), fixed=True
    )
    files["int8-fixed"] = fixed["int8"]
    return files


def finetuned_files(args, name: str) -> tuple[str, str, dict]:
    """(SavedModel version, fine-tuned directory, {quantization: .tflite}) of a fine-tuned
    task (name: sst2, mrpc, squad)."""
    version = version_dir(getattr(args, f"{name}_export"))
    finetuned = finetuned_dir(version)
    task = "squad" if name == "squad" else "classifier"
    # One directory per source model: a file exported from another model is never reused.
    source = hashlib.sha256(os.path.abspath(finetuned).encode()).hexdigest()[:10]
    directory = os.path.join(args.work, f"{name}-{source}")
    return version, finetuned, litert_files(args, task, finetuned, directory)


def megabytes(path: str) -> float:
    if os.path.isdir(path):
        return (
            sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(path) for n in names)
            / 1e6
        )
    return os.path.getsize(path) / 1e6


# --- accuracy --------------------------------------------------------------------------------


def serving_default(version: str):
    """(loaded SavedModel, its serving_default): keep the first alive while calling."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (registers the tokenizer's ops)

    loaded = tf.saved_model.load(version)
    return loaded, loaded.signatures["serving_default"]


def savedmodel_probabilities(version: str, a: list[str], b: list[str] | None):
    import numpy as np
    import tensorflow as tf

    loaded, fn = serving_default(version)
    out = []
    for first in range(0, len(a), BATCH):
        inputs = {"text_a": tf.constant(a[first : first + BATCH])}
        if b is not None:
            inputs["text_b"] = tf.constant(b[first : first + BATCH])
        out.append(fn(**inputs)["probabilities"].numpy())
    return np.concatenate(out)


def lite_probabilities(path: str, a: list[str], b: list[str] | None):
    import numpy as np

    from albert_tf.serving.tflite_predict import LiteModel

    model = LiteModel(path)
    out = []
    for first in range(0, len(a), BATCH):
        rows = slice(first, first + BATCH)
        out.append(model.classify(a[rows], b[rows] if b is not None else None)["probabilities"])
    return np.concatenate(out)


def classification_accuracy(args, name: str, task_name: str, folder: str) -> dict:
    """SavedModel against each .tflite on the task's dev set (see the module docstring)."""
    import numpy as np

    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.classification.tasks import TaskSpec

    version, finetuned, files = finetuned_files(args, name)
    info = TaskInfo.read(finetuned).details
    spec = TaskSpec(task_name, data_dir=os.path.join(args.glue, folder))
    examples = spec.read("dev")[: args.limit or None]
    labels = list(info.labels)
    gold = np.array([labels.index(str(e.label)) for e in examples])
    a = [e.text_a for e in examples]
    b = [e.text_b or "" for e in examples] if info.text_pair else None
    log(f"{name}: {len(examples)} dev examples, SavedModel {version}")
    probabilities = {"SavedModel": savedmodel_probabilities(version, a, b)}
    for q, path in files.items():
        log(f"{name}: {os.path.basename(path)}")
        probabilities[q] = lite_probabilities(path, a, b)
    reference = probabilities["SavedModel"]
    systems = {}
    for system, p in probabilities.items():
        metrics = spec.evaluate({"dev": (p, gold)})
        systems[system] = dict(
            metrics,
            max_abs_dprob=float(np.abs(p - reference).max()),
            flipped=int((p.argmax(-1) != reference.argmax(-1)).sum()),
            file=version if system == "SavedModel" else files[system],
        )
    for row in systems.values():
        for metric in ("accuracy", "f1"):
            if metric in row:
                row[f"{metric}_delta_points"] = 100 * (row[metric] - systems["SavedModel"][metric])
    return {"task": task_name, "examples": len(examples), "systems": systems}


def squad_accuracy(args) -> dict:
    """The SQuAD SavedModel's answers against `LiteModel.predict_squad` on the slice."""
    import tensorflow as tf

    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.squad.evaluation import evaluate_v1
    from data_pipeline.squad.examples import read_squad

    version, _, files = finetuned_files(args, "squad")
    examples = read_squad(args.squad_slice)[: args.limit or None]
    asked = {e.qas_id for e in examples}
    with open(args.squad_slice, encoding="utf-8") as f:
        dataset = json.load(f)["data"]
    for article in dataset:  # only the questions asked (--limit)
        for paragraph in article["paragraphs"]:
            paragraph["qas"] = [qa for qa in paragraph["qas"] if qa["id"] in asked]
    log(f"squad: {len(examples)} questions, SavedModel {version}")
    loaded, fn = serving_default(version)
    answers, best = {"SavedModel": {}}, {"SavedModel": {}}  # best: the answer's span score
    for first in range(0, len(examples), 16):
        batch = examples[first : first + 16]
        out = fn(
            question=tf.constant([e.question for e in batch]),
            context=tf.constant([e.context for e in batch]),
        )
        for e, text, score in zip(batch, out["answer"].numpy(), out["score"].numpy()):
            answers["SavedModel"][e.qas_id] = text.decode("utf-8")
            best["SavedModel"][e.qas_id] = float(score)
    for q, path in files.items():
        log(f"squad: {os.path.basename(path)}")
        answers[q], nbest, _ = LiteModel(path).predict_squad(examples, batch_size=16)
        best[q] = {
            k: v[0]["start_logit"] + v[0]["end_logit"] if v else 0.0 for k, v in nbest.items()
        }
    reference = answers["SavedModel"]
    systems = {}
    for system, predicted in answers.items():
        scores = evaluate_v1(dataset, predicted)
        systems[system] = dict(
            scores,
            different_answers=sum(predicted[k] != reference[k] for k in reference),
            max_abs_dscore=max(abs(best[system][k] - best["SavedModel"][k]) for k in reference),
            file=version if system == "SavedModel" else files[system],
        )
    for row in systems.values():
        for metric in ("exact_match", "f1"):
            row[f"{metric}_delta_points"] = row[metric] - systems["SavedModel"][metric]
    return {"task": "squad", "examples": len(examples), "systems": systems}


def accuracy_part(args) -> dict:
    found, skipped = {}, {}
    runs = {
        "sst2": lambda: classification_accuracy(args, "sst2", "sst-2", "SST-2"),
        "mrpc": lambda: classification_accuracy(args, "mrpc", "mrpc", "MRPC"),
        "squad": lambda: squad_accuracy(args),
    }
    for name, run in runs.items():
        try:
            found[name] = run()
        except FileNotFoundError as e:  # (an export not there: the others still run)
            log(f"accuracy: {name} skipped: {e}")
            skipped[name] = str(e)
    print("\n### Accuracy on dev: SavedModel against LiteRT (same fine-tuned model)\n")
    head = ["task", "system", "examples", "accuracy %", "Δ points", "F1 %", "Δ F1 points"]
    rows = []
    for name in ("sst2", "mrpc"):
        result = found.get(name, {"systems": {}})
        for system, r in result["systems"].items():
            other = system != "SavedModel"
            f1 = "f1" in r
            rows.append(
                [
                    result["task"],
                    system,
                    result["examples"],
                    fmt(100 * r["accuracy"]),
                    fmt(r["accuracy_delta_points"], "+.2f") if other else "",
                    fmt(100 * r["f1"]) if f1 else "",
                    fmt(r["f1_delta_points"], "+.2f") if f1 and other else "",
                    r["flipped"] if other else "",
                    fmt(r["max_abs_dprob"], ".1e") if other else "",
                ]
            )
    markdown([*head, "flipped", "max |Δp|"], rows)
    squad = found.get("squad", {"systems": {}})
    head = ["system", "questions", "EM", "Δ EM points", "F1", "Δ F1 points"]
    rows = [
        [
            system,
            squad["examples"],
            fmt(r["exact_match"]),
            fmt(r["exact_match_delta_points"], "+.2f") if system != "SavedModel" else "",
            fmt(r["f1"]),
            fmt(r["f1_delta_points"], "+.2f") if system != "SavedModel" else "",
            r["different_answers"] if system != "SavedModel" else "",
            fmt(r["max_abs_dscore"], ".1e") if system != "SavedModel" else "",
        ]
        for system, r in squad["systems"].items()
    ]
    print(f"SQuAD v1.1 dev slice ({args.squad_slice}):\n")
    markdown([*head, "answers ≠ SavedModel", "max |Δ span score|"], rows)
    for name, reason in skipped.items():
        print(f"- {name} skipped: {reason}")
    return dict(found, skipped=skipped)


# --- size ------------------------------------------------------------------------------------


def size_part(args) -> dict:
    from data_pipeline.tokenization.baked_normalization import albert_normalized_spm
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    sizes = {}
    for name in ("sst2", "mrpc", "squad"):
        try:
            _, _, files = finetuned_files(args, name)
        except FileNotFoundError as e:
            log(f"size: {name} skipped: {e}")
            continue
        sizes[name] = {q: megabytes(p) for q, p in files.items()}
    base = base_model(args)
    sizes["base"] = {q: megabytes(base[q]) for q in (*QUANTIZATIONS, "int8-fixed")}
    sizes["base"]["SavedModel"] = megabytes(base["savedmodel"])
    spm_mb = len(albert_normalized_spm(AlbertTokenizer(args.spm))) / 1e6
    print("\n### File sizes (MB = 10^6 bytes; each file holds its SentencePiece model)\n")
    columns = [*QUANTIZATIONS, "int8-fixed", "SavedModel"]
    rows = [[name] + [fmt(s.get(c)) for c in columns] for name, s in sizes.items()]
    markdown(["model", *columns], rows)
    base_int8 = sizes["base"]["int8"]
    verdict = "met" if base_int8 <= BASE_SIZE_TARGET_MB else "NOT met"
    print(
        f"Base-size model: ALBERT-base shapes (vocab 30000, E 128, H 768, 12 layers, 12 heads, "
        f"FFN 3072), random weights, max_seq_length {args.seq}; its SentencePiece model with "
        f"the baked normalization is {spm_mb:.2f} MB of each file.\n"
        f"Target base int8 ≤ {BASE_SIZE_TARGET_MB:.0f} MB: {base_int8:.2f} MB — {verdict}\n"
    )
    return {
        "megabytes": sizes,
        "spm_in_file_mb": spm_mb,
        "target_met": base_int8 <= BASE_SIZE_TARGET_MB,
    }


# --- latency ---------------------------------------------------------------------------------


def sst2_sentences(args) -> list[str]:
    from data_pipeline.classification.tasks import TaskSpec

    spec = TaskSpec("sst-2", data_dir=os.path.join(args.glue, "SST-2"))
    return [e.text_a for e in spec.read("dev")]


def thread_label(threads: int | None) -> str:
    return "every core" if threads is None else f"{threads} thread" + "s" * (threads > 1)


def latency_systems(args, base: dict) -> list[tuple[str, object]]:
    """[(name, call)]: call(sentence) → probabilities [1, 2] of one request."""
    import tensorflow as tf

    from albert_tf.serving.tflite_predict import LiteModel

    loaded, fn = serving_default(base["savedmodel"])

    def savedmodel(sentence, fn=fn, keep=loaded):
        return fn(text_a=tf.constant([sentence]))["probabilities"].numpy()

    systems = [("SavedModel float32", savedmodel)]
    for q in (*QUANTIZATIONS, "int8-fixed"):
        for threads in args.threads:
            model = LiteModel(base[q], num_threads=threads)
            name = f"LiteRT {q} {thread_label(threads)}"
            systems.append((name, lambda s, m=model: m.classify([s])["probabilities"]))
    return systems


def latency_part(args) -> dict:
    import numpy as np

    base = base_model(args)
    sentences = sst2_sentences(args)
    warmup = sentences[: args.warmup]
    timed = sentences[args.warmup : args.warmup + args.sentences]
    systems = latency_systems(args, base)
    log(f"latency: {len(warmup)} warm-up and {len(timed)} timed sentences × {len(systems)}")
    load = [os.getloadavg()[0]]
    for _, call in systems:
        for s in warmup:
            call(s)
    times = {name: [] for name, _ in systems}
    probabilities = {name: [] for name, _ in systems}
    for block, first in enumerate(range(0, len(timed), args.block)):
        shift = block % len(systems)
        for name, call in systems[shift:] + systems[:shift]:
            for s in timed[first : first + args.block]:
                start = time.perf_counter()
                p = call(s)
                times[name].append(time.perf_counter() - start)
                probabilities[name].append(p[0])
    load.append(os.getloadavg()[0])
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tokens = [len(ids) + 2 for ids in AlbertTokenizer(args.spm).encode_batch(timed)]
    reference = np.array(probabilities["SavedModel float32"])
    found = {}
    for name, _ in systems:
        ms = 1000 * np.array(times[name])
        found[name] = {
            "p50_ms": float(np.percentile(ms, 50)),
            "p95_ms": float(np.percentile(ms, 95)),
            "mean_ms": float(ms.mean()),
            "max_abs_dprob": float(np.abs(np.array(probabilities[name]) - reference).max()),
        }
    saved = found["SavedModel float32"]["p50_ms"]
    print(
        f"\n### Latency, batch 1, base-size classifier (random weights, max_seq_length "
        f"{args.seq}), {len(timed)} SST-2 dev sentences ({np.mean(tokens):.1f} tokens on "
        f"average with [CLS] and [SEP], at most {max(tokens)}) after {len(warmup)} warm-up, "
        f"blocks of {args.block} interleaved; load average {load[0]:.2f} before, "
        f"{load[1]:.2f} after\n"
    )
    rows = [
        [
            name,
            fmt(r["p50_ms"]),
            fmt(r["p95_ms"]),
            fmt(saved / r["p50_ms"]),
            fmt(r["max_abs_dprob"], ".1e") if name != "SavedModel float32" else "",
        ]
        for name, r in found.items()
    ]
    markdown(["system", "p50 ms", "p95 ms", "SavedModel p50 / p50", "max |Δp| vs SavedModel"], rows)
    ratios = {}
    for threads in map(thread_label, args.threads):
        ratio = saved / found[f"LiteRT int8 {threads}"]["p50_ms"]
        ratios[threads] = ratio
        verdict = "met" if ratio >= SPEEDUP_TARGET else "NOT met"
        print(
            f"- SavedModel p50 / int8 ({threads}) p50 ≥ {SPEEDUP_TARGET:.0f}: {ratio:.2f}"
            f" — {verdict}"
        )
    print()
    return {
        "systems": found,
        "ratio_savedmodel_over_int8": ratios,
        "sentences": len(timed),
        "mean_tokens": float(np.mean(tokens)),
        "load_average_before_after": load,
    }


# --- tokens ----------------------------------------------------------------------------------


def token_sources(args) -> list[tuple[str, list[tuple[int, str]]]]:
    """[(name, [(line number, text)])]: the non-empty lines of each corpus file (and the
    ChnSentiCorp dev sentences), the first --limit of each."""
    from data_pipeline.classification.tasks import TaskSpec

    paths = [os.path.join(args.corpus, "wikitext-2", "valid.txt")]
    paths += sorted(glob.glob(os.path.join(args.corpus, "zh_news", "*.txt")))
    sources = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            lines = [(n, line.rstrip("\n")) for n, line in enumerate(f, 1) if line.strip()]
        sources.append((os.path.relpath(path, args.corpus), lines[: args.limit or None]))
    if args.chnsenticorp:
        spec = TaskSpec("chnsenticorp", data_dir=args.chnsenticorp)
        lines = [(e.line, e.text_a) for e in spec.read("dev")]
        sources.append(("ChnSentiCorp/dev.tsv", lines[: args.limit or None]))
    return sources


def resync(python_pieces: list[str], lite_pieces: list[str], k: int) -> int | None:
    """From the first difference `k`: how many characters until both sides' pieces end at
    the same place with the same text (one region segmented differently), or None when
    the texts differ."""
    i = j = k
    left = right = ""
    while i < len(python_pieces) or j < len(lite_pieces):
        if len(left) <= len(right) and i < len(python_pieces):
            left += python_pieces[i]
            i += 1
        elif j < len(lite_pieces):
            right += lite_pieces[j]
            j += 1
        else:
            left += python_pieces[i]
            i += 1
        if not (left.startswith(right) or right.startswith(left)):
            return None
        if left == right:
            return len(left)
    return None


def classify_difference(tokenizer, text, python_ids, lite_ids, k, limit) -> tuple[str, dict]:
    """(class, details) of one differing line (see the module docstring)."""
    if "Σ" in text and tokenizer.encode(text.replace("Σ", "σ"))[:limit] == lite_ids:
        return "final sigma", {}
    python_pieces = [tokenizer.id_to_piece(i) for i in python_ids]
    lite_pieces = [tokenizer.id_to_piece(i) for i in lite_ids]
    region = resync(python_pieces, lite_pieces, k)
    word_index = sum(p.startswith("▁") for p in python_pieces[: k + 1]) - 1
    words = tokenizer.normalize(text).split()
    word = words[word_index] if 0 <= word_index < len(words) else ""
    details = {"word_chars": len(word), "longest_word_chars": max(map(len, words), default=0)}
    if region is None:
        return "unclassified (the texts differ)", details
    details["region_chars"] = region
    return "segmentation (same text, other pieces)", details


def difference(tokenizer, source, number, text, python_ids, lite_ids, limit) -> dict:
    """One differing line: where it differs first, the pieces from two before, its class."""
    k = next(
        (i for i, (x, y) in enumerate(zip(python_ids, lite_ids)) if x != y),
        min(len(python_ids), len(lite_ids)),
    )
    kind, details = classify_difference(tokenizer, text, python_ids, lite_ids, k, limit)
    pieces = lambda ids: [tokenizer.id_to_piece(i) for i in ids[max(k - 2, 0) : k + 3]]
    return dict(
        details,
        source=source,
        line=number,
        excerpt=text[:60],
        position=k,
        python=pieces(python_ids),
        litert=pieces(lite_ids),
        kind=kind,
    )


def tokens_part(args) -> dict:
    from albert_tf import AlbertConfig
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    length = 512
    tokenizer = AlbertTokenizer(args.spm)
    config = AlbertConfig(
        vocab_size=tokenizer.vocab_size,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=length,
    )
    directory = os.path.join(args.work, "tokens")
    finetuned = random_classifier(args, os.path.join(directory, "finetuned"), config, length)
    path = litert_files(args, "classifier", finetuned, directory, ("float32",))["float32"]
    model = LiteModel(path)
    limit = length - 2
    found, differing = {}, []
    for name, lines in token_sources(args):
        counts = {"lines": len(lines), "truncated": 0, "differ": 0, "lite_s": 0.0, "python_s": 0.0}
        for first in range(0, len(lines), args.token_batch):
            batch = lines[first : first + args.token_batch]
            texts = [t for _, t in batch]
            start = time.perf_counter()
            got = model.tokenize(texts, [""] * len(texts))
            counts["lite_s"] += time.perf_counter() - start
            start = time.perf_counter()
            want = [tokenizer.encode(t) for t in texts]
            counts["python_s"] += time.perf_counter() - start
            for (number, text), ids, row, mask in zip(
                batch, want, got["input_ids"], got["input_mask"]
            ):
                counts["truncated"] += len(ids) > limit
                python_ids = ids[:limit]
                lite_ids = row[1 : int(mask.sum()) - 1].tolist()
                if lite_ids == python_ids:
                    continue
                counts["differ"] += 1
                differing.append(
                    difference(tokenizer, name, number, text, python_ids, lite_ids, limit)
                )
        found[name] = counts
    print(
        f"\n### Tokenizer parity: LiteRT `tokenize` against AlbertTokenizer.encode "
        f"({os.path.basename(args.spm)}, lower-cased), first {limit} ids of each line\n"
    )
    rows = [
        [
            name,
            c["lines"],
            c["truncated"],
            c["differ"],
            fmt(c["lines"] / c["lite_s"], ".0f"),
            fmt(c["lines"] / c["python_s"], ".0f"),
        ]
        for name, c in found.items()
    ]
    total = [sum(c[k] for c in found.values()) for k in ("lines", "truncated", "differ")]
    rows.append(["all", *total, "", ""])
    head = ["file", "lines compared", "truncated", "lines differing"]
    markdown([*head, "LiteRT lines/s", "Python lines/s"], rows)
    if differing:
        print("Differing lines (position = first differing id; pieces from position - 2):\n")
        rows = [
            [
                f"{d['source']}:{d['line']}",
                repr(d["excerpt"])[1:-1].replace("|", "\\|"),
                d["position"],
                " ".join(d["python"]).replace("|", "\\|"),
                " ".join(d["litert"]).replace("|", "\\|"),
                d["kind"]
                + (f", word of {d['word_chars']} chars" if "word_chars" in d else "")
                + (f", region of {d['region_chars']} chars" if "region_chars" in d else ""),
            ]
            for d in differing
        ]
        markdown(["line", "excerpt", "position", "Python pieces", "LiteRT pieces", "class"], rows)
    kinds = {}
    for d in differing:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
    return {"files": found, "differing": differing, "by_class": kinds}


# --- main ------------------------------------------------------------------------------------


def machine() -> dict:
    import tensorflow as tf

    cpu = "unknown CPU"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    git = ["git", "describe", "--always", "--dirty"]
    commit = subprocess.run(git, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    try:
        from importlib.metadata import version

        litert = version("ai-edge-litert")
    except Exception:  # noqa: BLE001 (reported as unknown)
        litert = "unknown"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_at_start": round(LOAD_AT_START, 2),
        "load_at_end": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "ai_edge_litert": litert,
        "commit": commit,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", default=",".join(PARTS), help=",".join(PARTS))
    p.add_argument("--sst2_export", default=os.path.join(OUT, "sst2_seed2_export"))
    p.add_argument("--mrpc_export", default=os.path.join(OUT, "mrpc_export"))
    p.add_argument("--squad_export", default=os.path.join(OUT, "squad_export"))
    p.add_argument("--squad_slice", default=os.path.join(OUT, "squad_dev_slice.json"))
    p.add_argument("--out", default=os.path.join(OUT, "on_device.json"), help="results JSON")
    p.add_argument("--work", help="exported files (default: DIR_OF_OUT/on_device)")
    p.add_argument("--fresh", action="store_true", help="export again even if files are fresh")
    p.add_argument("--limit", type=int, default=0, help="first examples/lines of each set (0: all)")
    p.add_argument("--spm", default=os.path.join(DATA, "spm", "de-30k-clean.model"))
    p.add_argument("--glue", default=os.path.join(DATA, "glue"))
    p.add_argument("--corpus", default=os.path.join(DATA, "corpus"))
    p.add_argument(
        "--chnsenticorp",
        default=os.path.join(DATA, "chinese", "ChnSentiCorp"),
        help="its dev sentences join the token comparison ('' leaves them out)",
    )
    p.add_argument("--seq", type=int, default=128, help="base-size model's max_seq_length")
    p.add_argument("--sentences", type=int, default=200, help="timed latency sentences")
    p.add_argument("--warmup", type=int, default=20, help="untimed sentences first, per system")
    p.add_argument("--block", type=int, default=10, help="sentences per system in turn")
    p.add_argument("--token_batch", type=int, default=64)
    p.add_argument(
        "--threads",
        default=f"1,{os.cpu_count()}",
        help="LiteRT interpreter threads to time (LiteModel's default: every core)",
    )
    args = p.parse_args()
    parts = [x for x in args.parts.split(",") if x]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        p.error(f"--parts: {', '.join(unknown)} not one of {', '.join(PARTS)}")
    args.threads = list(
        dict.fromkeys(None if t == "default" else int(t) for t in args.threads.split(","))
    )
    args.work = args.work or os.path.join(os.path.dirname(os.path.abspath(args.out)), "on_device")
    args.export_seconds, args.made = {}, set()  # (made: files this run wrote)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    results, seconds = {"command": sys.argv}, {}
    for part in PARTS:
        if part not in parts:
            continue
        log(f"part {part}")
        start = time.perf_counter()
        results[part] = globals()[f"{part}_part"](args)
        seconds[part] = time.perf_counter() - start
    results["seconds"] = seconds
    results["export_seconds"] = args.export_seconds
    results["machine"] = machine()
    print("### Wall time\n")
    rows = [[part, fmt(s, ".0f")] for part, s in seconds.items()]
    rows += [[f"(of which export {k})", fmt(s, ".0f")] for k, s in args.export_seconds.items()]
    markdown(["part", "seconds"], rows)
    m = results["machine"]
    print(
        f"Machine: {m['cpu']}, {m['cores']} cores, load average {m['load_at_start']} at the "
        f"start, {m['load_at_end']} at the end; TensorFlow {m['tensorflow']}, ai-edge-litert "
        f"{m['ai_edge_litert']}, commit {m['commit']}"
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)
    log(f"results → {args.out}")


if __name__ == "__main__":
    main()
