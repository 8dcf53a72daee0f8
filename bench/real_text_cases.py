"""Our side of bench/real_text.py: one case of ALBERT-base on real GLUE text per process,
printed as a `RESULT {json}` line with the fields of the peers' scripts (bench/peers/).

    python -m bench.real_text_cases --task sst-2 --mode infer --variant length_aware --batch 32
    python -m bench.real_text_cases --task sst-2 --mode infer --variant padded --batch 1 --limit 64
    python -m bench.real_text_cases --task mrpc --mode savedmodel --saved_model /tmp/sm --batch 32
    python -m bench.real_text_cases --task sst-2 --mode train --variant length_aware --steps 3
    python -m bench.real_text_cases --mode squad --limit 200

A random-weight `AlbertClassifier` (seed 0: every process builds the same model; speed does
not depend on the weights), the SentencePiece model `--spm` (lower-cased, as
run_classifier's default), max_seq_length `--seq`, `--dtype` float32 or bfloat16 (the
trainer's mixed-precision policy, `set_precision`).

infer       text → probabilities in this process, as a user of the library runs it: our
            Python tokenizer (`AlbertTokenizer`, `convert_examples`: tokenize, truncate,
            pack, pad to --seq), then `predict_logits` and a softmax (STS-B: the score).
            Batch > 1, consecutive dev examples: `padded` batches them as they are
            (every row --seq long); `length_aware` groups them by length and pads each batch
            to its bucket (`length_bucketed` with LENGTH_BUCKETS on the in-memory examples:
            what `classifier_dataset(length_buckets=...)` does to records) and puts the
            results back in file order. Batch 1: every example is one request; `padded`
            runs it at --seq, `length_aware` cut to its bucket. The tokenizer's word cache
            is emptied before every pass (the text is new to it each time).
savedmodel  `serving_default` of the exported classifier (albert_tf.serving.export: the
            tokenizer in the graph, each request padded to its longest row's bucket) on
            raw strings, batches of consecutive dev examples; `--saved_model` names the
            export directory (exported here first when it holds none: the export is then
            part of this process's peak RSS).
export      writes that SavedModel (`export_trained` of the random-weight model);
export_litert  writes the LiteRT file below.
litert      the same classifier as a float32 LiteRT file (albert_tf.serving.litert: the
            SentencePiece tokenizer in the file, each request padded to its longest row;
            XNNPack, every core) through `LiteModel.classify` on raw strings, batches of
            consecutive dev examples; `--litert_file` names it (exported here first when
            absent). float32 only: the file's weights are float32 whatever --dtype says.
train       fine-tuning steps with our Trainer and ClassificationTask (as run_classifier
            builds them: AdamW, lr 2e-5, classifier dropout 0.1, no XLA, one loop per step)
            on `--limit` train examples drawn at random (seed 0; 0: as many as the steps
            need, as --max_train_examples draws them), cached as records; `padded` or
            `length_aware` batches (run_classifier's default), shuffled by the record
            reader. Step times are the trainer's own (metrics.jsonl).
squad       `squad_predict_case` of bench/real_text_squad.py (skipped with a note when that
            file is absent).

Timing (infer, savedmodel): a warm-up pass over the examples (untimed: it traces every
shape), then `--reps` timed passes; examples/s = examples / median pass time; batch 1 also
gives p50/p95 request latency. Train: `--warmup` steps, then `--reps` × `--steps`;
examples/s = the median over the reps. tokens computed = rows × padded length of the
batches, tokens present = their input_mask ones, over one pass / the timed steps.
`--probs_out F.npy` keeps the probabilities (real_text.py compares the paths with them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
FOLDERS = {"sst-2": "SST-2", "mrpc": "MRPC", "rte": "RTE", "sts-b": "STS-B"}


def emit(result: dict) -> None:
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print("RESULT " + json.dumps(result), flush=True)


def timed_passes(one_pass, reps: int) -> tuple[list[float], list[float], float]:
    """(pass seconds, request latencies over the timed passes, warm-up seconds)."""
    start = time.perf_counter()
    one_pass([])
    first = time.perf_counter() - start
    passes, latencies = [], []
    for _ in range(reps):
        start = time.perf_counter()
        one_pass(latencies)
        passes.append(time.perf_counter() - start)
    return passes, latencies, first


def rates(result: dict, examples: int, passes, latencies) -> dict:
    """examples/s (median and per rep) and, for batch 1, p50/p95 latency into `result`."""
    import numpy as np

    per_rep = [examples / t for t in passes]
    result.update(
        examples_per_s=round(statistics.median(per_rep), 3),
        examples_per_s_per_rep=[round(r, 3) for r in per_rep],
    )
    if latencies and result["batch"] == 1:
        result["latency_ms_p50"] = round(1000 * float(np.percentile(latencies, 50)), 2)
        result["latency_ms_p95"] = round(1000 * float(np.percentile(latencies, 95)), 2)
    return result


def softmax(logits, regression: bool):
    import numpy as np

    logits = logits.astype(np.float64)
    if regression:
        return logits[:, 0].astype(np.float32)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def build_classifier(args, labels):
    import keras

    from albert_tf import AlbertConfig
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.training.distribution import set_precision

    set_precision(args.dtype)
    keras.utils.set_random_seed(0)
    model = AlbertClassifier(AlbertConfig.preset(args.config), len(labels) if labels else 1)
    model.build()
    return model


def infer(args, result, examples, labels, tokenizer):
    """In-process text → probabilities, padded or length-aware."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.training.prediction import predict_logits
    from data_pipeline.classification.features import SEQUENCE_FEATURES, convert_examples
    from data_pipeline.length_buckets import LENGTH_BUCKETS, bucket_sizes, length_bucketed

    model = build_classifier(args, labels)
    aware, regression = args.variant == "length_aware", labels is None
    sizes = np.array(bucket_sizes(args.seq, LENGTH_BUCKETS))
    out = {}

    def features(chunk):
        tokenizer.__dict__.pop("_word_cache", None)  # the text is new to it every pass
        f = convert_examples(chunk, tokenizer, args.seq, labels)
        f = {k: f[k].astype(np.int32) for k in SEQUENCE_FEATURES}
        f["example_index"] = np.arange(len(chunk), dtype=np.int32)
        return f

    def batches(f):
        ds = tf.data.Dataset.from_tensor_slices(f)
        if aware:
            return length_bucketed(ds, args.batch, args.seq, SEQUENCE_FEATURES, LENGTH_BUCKETS)
        return ds.batch(args.batch)

    def one_pass(latencies):
        if args.batch > 1:
            f = features(examples)
            logits = predict_logits(model, batches(f), order_by="example_index")["logits"]
            out["probs"] = softmax(logits, regression)
            return
        probs = []
        for e in examples:
            t = time.perf_counter()
            f = features([e])
            length = sizes[np.searchsorted(sizes, f["input_mask"].sum())] if aware else args.seq
            batch = {k: tf.constant(f[k][:, :length]) for k in SEQUENCE_FEATURES}
            probs.append(softmax(predict_logits(model, [batch])["logits"], regression))
            latencies.append(time.perf_counter() - t)
        out["probs"] = np.concatenate(probs)

    passes, latencies, first = timed_passes(one_pass, args.reps)
    f = features(examples)
    lengths = f["input_mask"].sum(1)
    if args.batch > 1:
        computed = sum(int(tf.size(b["input_ids"])) for b in batches(f))
    else:
        computed = (
            int(sizes[np.searchsorted(sizes, lengths)].sum()) if aware else f["input_ids"].size
        )
    result.update(
        api="convert_examples + "
        + ("one request at a time" if args.batch == 1 else "tf.data batch")
        + (", length_bucketed" if aware and args.batch > 1 else "")
        + (", cut to its bucket" if aware and args.batch == 1 else "")
        + " + predict_logits + softmax",
        warmup_pass_s=round(first, 3),
        tokens_computed=int(computed),
        tokens_present=int(lengths.sum()),
    )
    return rates(result, len(examples), passes, latencies), out["probs"]


def serving_task(args, labels, pair: bool) -> dict:
    return {
        "kind": "classifier",
        "task_name": args.task,
        "labels": labels,
        "regression": labels is None,
        "num_choices": None,
        "max_seq_length": args.seq,
        "do_lower_case": True,
        "text_pair": pair,
        "step": 0,
    }


def export(args, labels, pair: bool) -> str:
    """The random-weight classifier as a SavedModel under --saved_model; its version dir."""
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.serving.export import export_trained
    from data_pipeline.tokenization.spec import TokenizerSpec

    model = build_classifier(args, labels)
    task = TaskInfo.build(**serving_task(args, labels, pair))
    return export_trained(model, args.saved_model, task, TokenizerSpec.from_files(args.spm))[0]


def savedmodel(args, result, examples, labels, tokenizer):
    """`serving_default` on raw strings, batches of consecutive examples."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SentencePiece op kernels)

    from data_pipeline.classification.features import convert_examples
    from data_pipeline.length_buckets import bucket_sizes

    pair = examples[0].text_b is not None
    found = os.listdir(args.saved_model) if os.path.isdir(args.saved_model) else []
    versions = sorted(int(n) for n in found if n.isdigit())
    version = os.path.join(args.saved_model, str(versions[-1])) if versions else None
    if version is None:
        version = export(args, labels, pair)
        result["exported_here"] = True
    serve = tf.saved_model.load(version).signatures["serving_default"]
    requests = []
    for i in range(0, len(examples), args.batch):
        chunk = examples[i : i + args.batch]
        x = {"text_a": tf.constant([e.text_a for e in chunk])}
        if pair:
            x["text_b"] = tf.constant([e.text_b for e in chunk])
        requests.append(x)
    key = "score" if labels is None else "probabilities"
    out = {}

    def one_pass(latencies):
        probs = []
        for x in requests:
            t = time.perf_counter()
            probs.append(serve(**x)[key].numpy())
            latencies.append(time.perf_counter() - t)
        out["probs"] = np.concatenate(probs)

    passes, latencies, first = timed_passes(one_pass, args.reps)
    lengths = convert_examples(examples, tokenizer, args.seq, labels)["input_mask"].sum(1)
    sizes = np.array(bucket_sizes(args.seq))
    computed = 0
    for i in range(0, len(examples), args.batch):
        rows = lengths[i : i + args.batch]
        computed += len(rows) * int(sizes[np.searchsorted(sizes, rows.max())])
    result.update(
        api="tf.saved_model.load(...).signatures['serving_default'](text_a[, text_b])",
        saved_model=version,
        warmup_pass_s=round(first, 3),
        tokens_computed=computed,
        tokens_present=int(lengths.sum()),
    )
    return rates(result, len(examples), passes, latencies), out["probs"]


def export_litert(args, labels, pair: bool) -> str:
    """The random-weight classifier as a float32 .tflite at --litert_file (through a
    fine-tuned directory beside it, as `export_tflite` reads one); its path."""
    import shutil

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.serving.export import export_tflite
    from data_pipeline.tokenization.spec import TokenizerSpec

    directory = os.path.dirname(os.path.abspath(args.litert_file))
    finetuned = os.path.join(directory, "finetuned")
    shutil.rmtree(finetuned, ignore_errors=True)
    model = build_classifier(args, labels)
    task = TaskInfo.build(**serving_task(args, labels, pair))
    save_finetuned(model, finetuned, task, TokenizerSpec.from_files(args.spm))
    (path,) = export_tflite("classifier", finetuned, directory, "float32")
    os.replace(path, args.litert_file)
    os.replace(path + ".json", args.litert_file + ".json")
    return args.litert_file


def litert(args, result, examples, labels, tokenizer):
    """`LiteModel.classify` on raw strings, batches of consecutive examples."""
    import numpy as np

    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.classification.features import convert_examples

    pair = examples[0].text_b is not None
    if not os.path.exists(args.litert_file):
        export_litert(args, labels, pair)
        result["exported_here"] = True
    lite = LiteModel(args.litert_file)
    requests = []
    for i in range(0, len(examples), args.batch):
        chunk = examples[i : i + args.batch]
        requests.append(([e.text_a for e in chunk], [e.text_b for e in chunk] if pair else None))
    key = "score" if labels is None else "probabilities"
    out = {}

    def one_pass(latencies):
        probs = []
        for text_a, text_b in requests:
            t = time.perf_counter()
            probs.append(np.asarray(lite.classify(text_a, text_b)[key]))
            latencies.append(time.perf_counter() - t)
        out["probs"] = np.concatenate(probs)

    passes, latencies, first = timed_passes(one_pass, args.reps)
    lengths = convert_examples(examples, tokenizer, args.seq, labels)["input_mask"].sum(1)
    computed = sum(
        len(lengths[i : i + args.batch]) * int(lengths[i : i + args.batch].max())
        for i in range(0, len(examples), args.batch)
    )
    result.update(
        api="LiteModel(file).classify(text_a[, text_b]) (ai-edge-litert, XNNPack, every core)",
        litert_file=args.litert_file,
        warmup_pass_s=round(first, 3),
        tokens_computed=computed,
        tokens_present=int(lengths.sum()),
    )
    return rates(result, len(examples), passes, latencies), out["probs"]


def train(args, result, labels, tokenizer):
    """Fine-tuning steps with the Trainer; examples/s from its per-loop timing."""
    import shutil

    import tensorflow as tf

    from albert_tf import AlbertConfig
    from albert_tf.training import ClassificationTask, Trainer
    from albert_tf.training.config import TrainerConfig
    from albert_tf.training.distribution import make_strategy
    from data_pipeline.classification.features import task_features
    from data_pipeline.classification.tasks import TaskSpec
    from data_pipeline.length_buckets import LENGTH_BUCKETS

    total = args.warmup + args.reps * args.steps
    spec = TaskSpec(args.task, os.path.join(DATA, "glue", FOLDERS[args.task]))
    work = tempfile.mkdtemp(prefix="real_text_train-")
    try:
        data = task_features(
            spec, "train", tokenizer, work, args.seq, labels, args.limit or args.batch * total
        )
        buckets = LENGTH_BUCKETS if args.variant == "length_aware" else None
        seed = 12345
        config = TrainerConfig(
            output_dir=os.path.join(work, "run"),
            num_train_steps=total,
            learning_rate=2e-5,
            optimizer="adamw",
            steps_per_loop=1,
            save_checkpoints_steps=10**9,
            dtype=args.dtype,
            seed=seed,
        )
        albert_config = AlbertConfig.preset(args.config)
        trainer = Trainer(
            ClassificationTask.for_task(albert_config, spec, labels),
            config,
            make_strategy("default"),
            lambda ctx: data.dataset(
                args.batch, is_training=True, seed=seed, input_context=ctx, length_buckets=buckets
            ),
            log=lambda line: print(line, file=sys.stderr, flush=True),
        )
        start = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - start
        with open(os.path.join(config.output_dir, "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f if '"train"' in line]
        step_s = [args.batch / r["examples_per_second"] for r in rows]
        # The same batches again (same seed, same reader) for their token counts.
        batches = data.dataset(args.batch, is_training=True, seed=seed, length_buckets=buckets)
        computed = present = 0
        for i, b in enumerate(batches.take(total)):
            if i >= args.warmup:
                computed += int(tf.size(b["input_ids"]))
                present += int(tf.reduce_sum(b["input_mask"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    timed = step_s[args.warmup :]
    passes = [sum(timed[r * args.steps : (r + 1) * args.steps]) for r in range(args.reps)]
    result.update(
        api="Trainer(ClassificationTask, adamw 2e-5, steps_per_loop 1).train()",
        examples=data.count,
        warmup_steps=args.warmup,
        steps_per_rep=args.steps,
        warmup_s=round(sum(step_s[: args.warmup]), 3),
        train_wall_s=round(wall, 3),
        loss_first_last=[round(rows[0]["loss"], 4), round(rows[-1]["loss"], 4)],
        tokens_computed=computed,
        tokens_present=present,
    )
    return rates(result, args.batch * args.steps, passes, [])


def squad(args, result):
    try:
        from bench.real_text_squad import squad_predict_case
    except ImportError as e:
        result.update(skipped=f"bench/real_text_squad.py not available ({e})")
        return result
    from albert_tf.training.distribution import set_precision

    set_precision(args.dtype)
    result.update(
        squad_predict_case(
            config_name=args.config,
            batch=args.batch,
            limit=args.limit or 200,
            rounds=args.reps,
            seq=args.squad_seq,
        )
    )
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=list(FOLDERS), default="sst-2")
    p.add_argument(
        "--mode",
        choices=["infer", "savedmodel", "export", "litert", "export_litert", "train", "squad"],
    )
    p.add_argument("--variant", choices=["padded", "length_aware"], default="length_aware")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--limit", type=int, default=0, help="examples (0: dev set / what steps need)")
    p.add_argument("--steps", type=int, default=3, help="train: steps per timed rep")
    p.add_argument("--warmup", type=int, default=2, help="train: untimed steps first")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--squad_seq", type=int, default=384)
    p.add_argument("--spm", default=os.path.join(DATA, "spm", "de-30k-clean.model"))
    p.add_argument("--config", default="base")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--saved_model", default="/tmp/real_text_saved_model")
    p.add_argument("--litert_file", default="/tmp/real_text_litert/classifier.tflite")
    p.add_argument("--probs_out", help="write the probabilities here (.npy)")
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np
    import tensorflow as tf

    from data_pipeline.classification.benchmark_files import label_names, read_task
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    result = dict(
        system="ours",
        task=args.task,
        mode=args.mode,
        variant={"export": "savedmodel", "export_litert": "litert"}.get(args.mode, args.mode)
        if args.mode in ("savedmodel", "export", "litert", "export_litert")
        else args.variant,
        batch=args.batch,
        seq=args.seq,
        dtype=args.dtype,
        config=args.config,
        versions=dict(
            tensorflow=tf.__version__,
            keras=keras.__version__,
            numpy=np.__version__,
            python=platform.python_version(),
        ),
        cpu_count=os.cpu_count(),
        loadavg_at_start=[round(x, 2) for x in os.getloadavg()],
    )
    if args.mode == "squad":
        return emit(squad(args, result))
    tokenizer = AlbertTokenizer(args.spm)
    labels = label_names(args.task)
    if args.mode == "train":
        return emit(train(args, result, labels, tokenizer))
    examples = read_task(os.path.join(DATA, "glue", FOLDERS[args.task]), args.task, "dev")
    examples = examples[: args.limit or len(examples)]
    result["examples"] = len(examples)
    if args.mode == "export":
        start = time.perf_counter()
        result["saved_model"] = export(args, labels, examples[0].text_b is not None)
        result["export_s"] = round(time.perf_counter() - start, 3)
        return emit(result)
    if args.mode == "export_litert":
        start = time.perf_counter()
        result["litert_file"] = export_litert(args, labels, examples[0].text_b is not None)
        result["export_s"] = round(time.perf_counter() - start, 3)
        return emit(result)
    run = {"infer": infer, "savedmodel": savedmodel, "litert": litert}[args.mode]
    result, probs = run(args, result, examples, labels, tokenizer)
    if args.probs_out:
        np.save(args.probs_out, probs)
    emit(result)


if __name__ == "__main__":
    main()
