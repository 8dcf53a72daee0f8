"""Evaluation throughput on real dev sets: batches padded to max_seq_length against batches
grouped by length and padded to their bucket (`classifier_dataset(length_buckets=...)`, what
run_classifier evaluates and predicts with).

    python bench/real_text.py [--config base] [--tasks sst-2,mrpc,rte] [--batch 32]

ALBERT-base, random weights (speed does not depend on them), the ALBERT-recipe
SentencePiece model of ../shared/data, max_seq_length 128. One case = the whole dev set
through `predict_logits` (records → tf.data → the model's traced forward pass → logits in
file order), as run_classifier's evaluation runs it. Padded and length-aware alternate
(padded, bucketed, padded, ...; --rounds each) so that the machine's drift falls on both;
the table gives medians, the ratio, and tokens computed / tokens present. Logits of the
two paths must agree within 1e-4 (printed).

This is the first part of issue 15's bench (ours only; the peers' real-text modes and the
fine-tuning and SQuAD cases are not here yet).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")
FOLDERS = {"sst-2": "SST-2", "mrpc": "MRPC", "rte": "RTE", "sts-b": "STS-B", "cola": "CoLA"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="base")
    p.add_argument("--tasks", default="sst-2,mrpc,rte")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from albert_tf import AlbertConfig
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.training.prediction import predict_logits
    from data_pipeline.classification.data import label_names, read_task
    from data_pipeline.classification.features import classifier_dataset, convert_examples
    from data_pipeline.length_buckets import LENGTH_BUCKETS
    from data_pipeline.records import cached_features
    from data_pipeline.tokenization import AlbertTokenizer

    tok = AlbertTokenizer(os.path.join(DATA, "spm", "de-30k-clean.model"))
    config = AlbertConfig.preset(args.config)
    tmp = tempfile.mkdtemp(prefix="real_text-")
    rows = []
    for task in args.tasks.split(","):
        examples = read_task(os.path.join(DATA, "glue", FOLDERS[task]), task, "dev")
        labels = label_names(task)
        features = convert_examples(examples, tok, args.seq, labels, {})
        path, count, _ = cached_features(os.path.join(tmp, task), task, lambda f=features: f)
        model = AlbertClassifier(config, len(labels) if labels else 1)
        model.build()
        present = int(features["input_mask"].sum())
        times = {False: [], True: []}
        logits, computed = {}, {}
        for _ in range(args.rounds):
            for aware in (False, True):
                ds = classifier_dataset(
                    path, args.batch, args.seq, labels is None, drop_remainder=False,
                    length_buckets=LENGTH_BUCKETS if aware else None,
                )  # fmt: skip
                if aware not in logits:  # warm-up pass (traces), also the reference logits
                    logits[aware] = predict_logits(model, ds, order_by="example_index")["logits"]
                    computed[aware] = sum(int(tf.size(b["input_ids"])) for b in ds)
                start = time.perf_counter()
                predict_logits(model, ds, order_by="example_index")
                times[aware].append(time.perf_counter() - start)
        padded, bucketed = (statistics.median(times[k]) for k in (False, True))
        diff = float(np.abs(logits[True] - logits[False]).max())
        rows.append((task, count, count / padded, count / bucketed, padded / bucketed,
                     computed[False] / present, computed[True] / present, diff))  # fmt: skip
        print(f"{task}: done", flush=True)
    print(
        f"\nEvaluation, ALBERT-{args.config} (random weights), max_seq_length {args.seq}, "
        f"batch {args.batch}, {os.cpu_count()} CPUs, TF {tf.__version__}, medians of "
        f"{args.rounds} interleaved rounds\n"
    )
    print(
        "| task | examples | padded ex/s | length-aware ex/s | ratio "
        "| tokens computed / present (padded, length-aware) | max abs Δ logits |"
    )
    print("|---|---|---|---|---|---|---|")
    for task, n, a, b, r, tp, tb, d in rows:
        print(f"| {task} | {n} | {a:.1f} | {b:.1f} | {r:.2f}× | {tp:.2f} / {tb:.2f} | {d:.1e} |")


if __name__ == "__main__":
    main()
