"""NER fine-tuning throughput: run_ner's training step (our Trainer with
TokenClassificationTask, batches grouped by length) against Hugging Face's
`AlbertForTokenClassification` with dynamic padding on PyTorch CPU, on CoNLL-2003 train
sentences.

    python -m bench.ner_train                              # ALBERT-base, batch 32
    python -m bench.ner_train --config tiny --steps 2      # a quick check

Setting: a random-weight model of --config's sizes (bench.ner_serving's CONFIGS;
CoNLL-2003's 9 tags from its train file; speed does not depend on the weights), the
German SentencePiece model of the real data lower-cased, max_seq_length 128, batch
--batch, AdamW at run_ner's learning rate (5e-5), float32. Both sides train on the same
--limit sentences drawn at random from CoNLL-2003 train (seed 0; 0: as many as the steps
need).
  ours  `python -m bench.ner_train --case ours`: as run_ner builds it: the sentences'
        tagging_features records (windows of 128 with doc_stride 64), the Trainer
        (TokenClassificationTask, classifier dropout 0.1, steps_per_loop 1, no XLA) over
        `dataset(length_buckets=LENGTH_BUCKETS)` (run_ner's default --length_buckets: windows
        of similar length batched together, each batch padded to its bucket); step times
        are the trainer's own (metrics.jsonl);
  hf    bench/peers/ner_train_hf.py: the usual Hugging Face recipe (words tokenized with
        is_split_into_words, the word's tag on its first piece, -100 elsewhere,
        DataCollatorForTokenClassification padding each batch to its longest row).
Each system runs in its own process: --warmup untimed steps, then --reps × --steps timed;
examples/s = the median over the reps. The processes run interleaved, peer, ours, peer;
the table gives each run with its peak RSS (VmHWM) and tokens computed / present (the
batches' rows × padded length against their real tokens), and ours / the peers' median.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench.ner_serving import CONFIGS, CONLL, ROOT, SPM
from bench.peers.process_memory import peak_rss_mb

LEARNING_RATE = 5e-5  # run_ner's default


def subset(count: int, limit: int) -> list[int]:
    """`limit` of `count` sentence indices drawn at random (seed 0), sorted; the peer draws
    the same ones (bench/peers/ner_train_hf.py)."""
    import numpy as np

    if limit >= count:
        return list(range(count))
    return sorted(int(i) for i in np.random.default_rng(0).choice(count, limit, False))


def ours(args) -> dict:
    """Our fine-tuning steps (the module docstring's `ours`); the RESULT fields."""
    import keras
    import tensorflow as tf

    from albert_tf import AlbertConfig
    from albert_tf.training import Trainer
    from albert_tf.training.config import TrainerConfig
    from albert_tf.training.distribution import make_strategy
    from albert_tf.training.token_classification import TokenClassificationTask
    from data_pipeline.length_buckets import LENGTH_BUCKETS
    from data_pipeline.tagging.data import discover_labels, read_conll
    from data_pipeline.tagging.features import tagging_features
    from data_pipeline.tokenization.spec import TokenizerSpec

    total = args.warmup + args.reps * args.steps
    train = read_conll(os.path.join(CONLL, "train.txt"))
    labels = discover_labels(train)
    chosen = [train[i] for i in subset(len(train), args.limit or args.batch * total)]
    work = tempfile.mkdtemp(prefix="ner_train-")
    try:
        source = os.path.join(work, "train.txt")
        with open(source, "w", encoding="utf-8") as f:
            for s in chosen:
                f.writelines(f"{t} {g}\n" for t, g in zip(s.tokens, s.tags))
                f.write("\n")
        tokenizer = TokenizerSpec.from_files(SPM, do_lower_case=True).build()
        data = tagging_features(source, "train", tokenizer, work, labels, 128, 64)
        keras.utils.set_random_seed(0)
        seed = 12345
        config = TrainerConfig(
            output_dir=os.path.join(work, "run"),
            num_train_steps=total,
            learning_rate=LEARNING_RATE,
            optimizer="adamw",
            steps_per_loop=1,
            save_checkpoints_steps=10**9,
            seed=seed,
        )
        task = TokenClassificationTask(
            AlbertConfig(vocab_size=30000, **CONFIGS[args.config]), len(labels)
        )

        def batches(ctx=None):
            return data.dataset(
                args.batch,
                is_training=True,
                seed=seed,
                input_context=ctx,
                length_buckets=LENGTH_BUCKETS,
            )

        trainer = Trainer(
            task,
            config,
            make_strategy("default"),
            batches,
            log=lambda line: print(line, file=sys.stderr, flush=True),
        )
        trainer.train()
        with open(os.path.join(config.output_dir, "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f if '"train"' in line]
        computed = present = 0  # the same batches again (same seed, same reader)
        for i, b in enumerate(batches().take(total)):
            if i >= args.warmup:
                computed += int(tf.size(b["input_ids"]))
                present += int(tf.reduce_sum(b["input_mask"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    step_s = [args.batch / r["examples_per_second"] for r in rows][args.warmup :]
    reps = [sum(step_s[r * args.steps : (r + 1) * args.steps]) for r in range(args.reps)]
    return {
        "system": "ours",
        "examples_per_s": args.batch * args.steps / statistics.median(reps),
        "loss_first_last": [round(rows[0]["loss"], 4), round(rows[-1]["loss"], 4)],
        "tokens_computed": computed,
        "tokens_present": present,
        "peak_rss_mb": peak_rss_mb(),
    }


def run(cmd: list[str], env: dict) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{' '.join(cmd[:3])} failed:\n{out.stderr[-2000:]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="base")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=3, help="timed steps per rep")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--limit", type=int, default=0, help="train sentences (0: what steps need)")
    p.add_argument("--case", choices=["ours"], help="(internal) run one side in this process")
    args = p.parse_args(argv)
    if args.case == "ours":
        print("RESULT " + json.dumps(ours(args)), flush=True)
        return 0
    common = []
    for name in ("config", "batch", "steps", "reps", "warmup", "limit"):
        common += [f"--{name}", str(getattr(args, name))]
    commands = {
        "hf": [
            sys.executable,
            os.path.join(ROOT, "bench", "peers", "ner_train_hf.py"),
            "--conll",
            os.path.join(CONLL, "train.txt"),
            "--spm",
            SPM,
            *common,
        ],
        "ours": [sys.executable, "-m", "bench.ner_train", "--case", "ours", *common],
    }
    envs = {
        "hf": dict(os.environ, PYTHONPATH=""),
        "ours": dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"),
    }
    print(f"{args.config}, batch {args.batch}, CoNLL-2003 train, load {os.getloadavg()[0]:.1f}")
    print(f"{'run':<5} {'examples/s':>10} {'tokens computed/present':>24} {'peak RSS MB':>12}")
    rows = []
    for system in ("hf", "ours", "hf"):  # interleaved: peer, ours, peer
        r = run(commands[system], envs[system])
        rows.append(r)
        share = r["tokens_computed"] / max(1, r["tokens_present"])
        print(
            f"{system:<5} {r['examples_per_s']:>10.2f} {share:>24.2f} "
            f"{r['peak_rss_mb']:>12.0f}  [{time.strftime('%H:%M:%S')}]",
            flush=True,
        )
    peer = statistics.median([rows[0]["examples_per_s"], rows[2]["examples_per_s"]])
    print(
        f"ours / hf = {rows[1]['examples_per_s'] / peer:.2f} (target ≥ 2), "
        f"load {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
