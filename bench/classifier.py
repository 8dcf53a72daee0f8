"""Fine-tuning and evaluation throughput of the classifier on real SST-2 sentences.

    python -m bench.classifier [--config base] [--cases float32,bfloat16]

ALBERT-base (random weights: speed does not depend on them), SST-2 dev sentences
($ALBERT_TF_DATA/glue/SST-2) tokenized with the ALBERT-recipe SentencePiece model, padded to
max_seq_length 128. "train" is the trainer's classification step (AdamW, cross-entropy,
all-reduce, global clip), batch 32; "eval" is the forward pass of the prediction loop,
batch 64. Each case runs in its own process (its own peak RSS); medians of a few loops.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def run_case(dtype: str, args) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from albert_tf import AlbertConfig
    from albert_tf.training import ClassificationTask, Trainer, TrainerConfig
    from data_pipeline.classification.benchmark_files import label_names, read_task
    from data_pipeline.classification.features import convert_examples
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(os.path.join(DATA, "spm", "de-30k-clean.model"))
    examples = read_task(os.path.join(DATA, "glue", "SST-2"), "sst-2", "dev")
    features = convert_examples(examples, tok, args.seq, label_names("sst-2"))
    features = {k: v.astype(np.int32) for k, v in features.items()}
    config = AlbertConfig.preset(args.config)

    def fn(ctx):
        return (
            tf.data.Dataset.from_tensor_slices(features)
            .repeat()
            .batch(args.train_batch, drop_remainder=True)
        )

    trainer = Trainer(
        ClassificationTask(config, num_labels=2),
        TrainerConfig(
            output_dir=os.path.join(args.tmp, dtype),
            num_train_steps=10**6,
            learning_rate=1e-5,
            optimizer="adamw",
            steps_per_loop=args.steps_per_loop,
            save_checkpoints_steps=10**6,
            dtype=dtype,
        ),
        tf.distribute.get_strategy(),
        fn,
        log=lambda *_: None,
    )
    n = tf.constant(args.steps_per_loop)
    trainer._train_loop(trainer.train_iterator, n)  # trace + warm up
    train_times = []
    for _ in range(args.loops):
        t = time.perf_counter()
        float(trainer._train_loop(trainer.train_iterator, n)["count"])
        train_times.append(time.perf_counter() - t)
    train_rate = statistics.median(args.train_batch * args.steps_per_loop / t for t in train_times)

    forward = tf.function(lambda b: trainer.model(b, training=False)["logits"])
    batches = [
        {
            k: tf.constant(features[k][i : i + args.eval_batch])
            for k in ("input_ids", "input_mask", "segment_ids")
        }
        for i in range(0, args.eval_batch * args.eval_batches, args.eval_batch)
    ]
    forward(batches[0]).numpy()
    eval_times = []
    for _ in range(args.loops):
        t = time.perf_counter()
        for b in batches:
            forward(b).numpy()
        eval_times.append(time.perf_counter() - t)
    eval_rate = statistics.median(args.eval_batch * len(batches) / t for t in eval_times)
    return {
        "dtype": dtype,
        "train_examples_per_s": round(train_rate, 2),
        "eval_examples_per_s": round(eval_rate, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case")
    p.add_argument("--cases", default="float32,bfloat16")
    p.add_argument("--config", default="base")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--train_batch", type=int, default=32)
    p.add_argument("--eval_batch", type=int, default=64)
    p.add_argument("--eval_batches", type=int, default=4)
    p.add_argument("--steps_per_loop", type=int, default=2)
    p.add_argument("--loops", type=int, default=3)
    p.add_argument("--tmp", default="/tmp/albert-bench-classifier")
    p.add_argument("--json_out")
    args = p.parse_args()
    if args.case:
        print("RESULT " + json.dumps(run_case(args.case, args)), flush=True)
        return
    if not os.path.isdir(DATA):
        sys.exit(f"needs $ALBERT_TF_DATA ({DATA})")
    passthrough = [
        f"--{k}={getattr(args, k)}"
        for k in (
            "config",
            "seq",
            "train_batch",
            "eval_batch",
            "eval_batches",
            "steps_per_loop",
            "loops",
            "tmp",
        )
    ]
    from bench.cases import run_cases

    results = run_cases("bench.classifier", args.cases.split(","), passthrough)
    print(
        f"\nSST-2 sentences, ALBERT-{args.config}, max_seq_length {args.seq}, "
        f"{os.cpu_count()} cores (train batch {args.train_batch}, eval batch "
        f"{args.eval_batch})\n"
    )
    print("| dtype | fine-tuning examples/s | eval examples/s | peak RSS MiB |")
    print("|---|---|---|---|")
    for r in results:
        print(
            f"| {r['dtype']} | {r['train_examples_per_s']} | {r['eval_examples_per_s']} | "
            f"{r['peak_rss_mib']} |"
        )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
