"""Continued (domain-adaptive) pretraining: a model pretrained on one corpus continues on
another, with and without domain words added to its vocabulary; held-out masked-LM
accuracy on both domains before and after.

    python -m experiments.continued_pretraining [--output_dir out/continued_pretraining] \\
        [--pretrain_steps 2000] [--steps 300] [--seeds 1,2] [--learning_rates 5e-4,2e-3] \\
        [--new_words 200] [--arms old,ext,replay,same]

Built from ../shared/data only (nothing is copied into the repository), at a scale this
machine runs in minutes — the figures say which way each choice moves held-out accuracy,
not what an ALBERT-base would reach:

- the "released" model: a SentencePiece model (4,000 pieces, ALBERT's recipe) and `TINY`
  (E 32, H 64, 2 layers, no dropout) pretrained `--pretrain_steps` LAMB steps (batch 64,
  lr 2e-3) on WikiText-2's valid split (old domain; its test split held out);
- the new domain: the State of the Union addresses (continued pretraining) with the
  inaugural addresses held out — political speeches, another register and vocabulary;
- continued pretraining (docs/design/trainer.md, "Continued pretraining"): run_pretraining
  with `--init_checkpoint` (encoder, masked-LM and sentence-order heads restored; the
  optimizer state and the step are not: a new run), `--steps` LAMB steps, 10% warmup, at
  each of `--learning_rates`, each seed of `--seeds`;
- with an extended vocabulary: the `--new_words` most frequent words of the new domain's
  training text that the old tokenizer splits into 3 or more pieces, added with
  albert-extend-vocab (new rows = the mean of their old pieces' rows); the new domain's
  records re-made with the extended tokenizer, then the same continued runs;
- with replay: the old vocabulary, continued on the new domain's records and the old
  domain's training records together (one record stream of both; about 58% new domain);
- the control `same`: the same continued run on the old domain's own training records,
  which separates what a restart itself costs (a new optimizer state and warmup) from
  what the new domain costs.

Held-out accuracy is measured by run_pretraining itself (its end-of-run evaluation at
learning rate 0, one step: the weights as loaded) over every held-out record. With the
extended vocabulary the held-out text is tokenized differently (fewer, longer pieces, so
the masked positions are other tokens): its figure is reported beside, not subtracted from,
the others.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

from experiments.finetuning_controls import TINY as CONTROLS_TINY

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
VOCAB = 4000
SEQ, PREDS, BATCH = 64, 10, 64
TINY = {**CONTROLS_TINY, "vocab_size": VOCAB, "max_position_embeddings": SEQ}
TINY.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
CORPORA = {
    "wiki_train": os.path.join(DATA, "corpus", "wikitext-2", "valid.txt"),
    "wiki_eval": os.path.join(DATA, "corpus", "wikitext-2", "test.txt"),
    "speech_train": os.path.join(DATA, "corpus", "en_speeches", "state_union", "*.txt"),
    "speech_eval": os.path.join(DATA, "corpus", "en_speeches", "inaugural", "*.txt"),
}


def _run(args: list, log: str) -> None:
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, stdout=f, stderr=f)
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(map(str, args))}; see {log}")


def _done(path: str) -> bool:
    return os.path.exists(path)


def tokenizer(out: str) -> str:
    prefix = os.path.join(out, "wiki")
    if not _done(prefix + ".model"):
        _run(
            [
                "-m",
                "data_pipeline.tokenization.train_tokenizer",
                f"--input_file={CORPORA['wiki_train']}",
                f"--model_prefix={prefix}",
                f"--vocab_size={VOCAB}",
                "--split_sentences",
                "--num_threads=2",
            ],
            prefix + ".log",
        )
    return prefix + ".model"


def records(out: str, name: str, spm: str, tag: str = "") -> str:
    """create_pretraining_data of corpus `name` with `spm` → its records' glob."""
    where = os.path.join(out, f"records{tag}", name)
    if not _done(os.path.join(where, "meta_data.json")):
        _run(
            [
                "-m",
                "data_pipeline.pretraining.create_pretraining_data",
                f"--input_file={CORPORA[name]}",
                f"--output_dir={where}",
                f"--spm_model_file={spm}",
                f"--max_seq_length={SEQ}",
                f"--max_predictions_per_seq={PREDS}",
                f"--dupe_factor={2 if name.endswith('train') else 1}",
                "--num_workers=1",
                "--num_output_shards=1",
            ],
            where + ".log",
        )
    return os.path.join(where, "*.tfrecord")


def tiny_config(out: str) -> str:
    config = os.path.join(out, "albert_config.json")
    with open(config, "w") as f:
        json.dump(TINY, f)
    return config


def pretrain(run: str, config: str, data: str, steps: int, lr: float, seed: int, init=None):
    """A run_pretraining run (reused when its last checkpoint is there) → its directory."""
    if not _done(os.path.join(run, "checkpoints", f"ckpt-{steps}.index")):
        args = [
            "run_pretraining.py",
            f"--albert_config_file={config}",
            f"--input_file={data}",
            f"--output_dir={run}",
            f"--train_batch_size={BATCH}",
            f"--num_train_steps={steps}",
            f"--num_warmup_steps={max(1, steps // 10)}",
            f"--learning_rate={lr}",
            "--optimizer=lamb",
            f"--steps_per_loop={min(50, steps)}",
            f"--save_checkpoints_steps={steps}",
            f"--seed={seed}",
        ]
        _run(args + ([f"--init_checkpoint={init}"] if init else []), run + ".log")
    return run


def held_out_accuracy(out: str, model: str, config: str, data: str, name: str) -> float:
    """`model`'s masked-LM accuracy on every record of `data` (run_pretraining's evaluation
    at learning rate 0 after one step: the weights as loaded)."""
    run = os.path.join(out, "eval", name)
    if not _done(os.path.join(run, "metrics.jsonl")):
        _run(
            [
                "run_pretraining.py",
                f"--input_file={data}",
                f"--eval_input_file={data}",
                f"--output_dir={run}",
                f"--init_checkpoint={model}",
                f"--albert_config_file={config}",
                f"--train_batch_size={BATCH}",
                f"--eval_batch_size={BATCH}",
                "--max_eval_steps=100000",
                "--num_train_steps=1",
                "--num_warmup_steps=0",
                "--learning_rate=0",
                "--steps_per_loop=1",
            ],
            run + ".log",
        )
    with open(os.path.join(run, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if r.get("split") == "eval"][-1]["mlm_accuracy"]


def domain_words(spm: str, n: int) -> list[str]:
    """The `n` most frequent words of the new domain's training text that `spm` splits
    into 3 or more pieces."""
    import glob

    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=spm)
    counts = collections.Counter()
    for path in sorted(glob.glob(CORPORA["speech_train"])):
        with open(path, encoding="utf-8", errors="replace") as f:  # (some are Latin-1)
            counts.update(re.findall(r"[a-z]+", f.read().lower()))
    long = [w for w, c in counts.most_common() if c >= 5 and len(sp.encode(w)) >= 3]
    return long[:n]


def extend(out: str, released: str, spm: str, n: int) -> tuple[str, str]:
    """albert-extend-vocab of the released model with the domain words → (dir, spm)."""
    where = os.path.join(out, "extended")
    if not _done(os.path.join(where, "spm.model")):
        words = os.path.join(out, "domain_words.txt")
        with open(words, "w", encoding="utf-8") as f:
            f.write("\n".join(domain_words(spm, n)) + "\n")
        _run(
            [
                "-m",
                "albert_tf.checkpoints.extend_vocab",
                f"--init_checkpoint={released}",
                f"--spm_model_file={spm}",
                f"--new_pieces={words}",
                f"--output_dir={where}",
            ],
            where + ".log",
        )
    return where, os.path.join(where, "spm.model")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "continued_pretraining"))
    p.add_argument("--pretrain_steps", type=int, default=2000)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--learning_rates", default="5e-4,2e-3")
    p.add_argument("--new_words", type=int, default=200)
    p.add_argument("--arms", default="old,ext,replay,same")
    a = p.parse_args(argv)
    if not os.path.isdir(os.path.join(DATA, "corpus")):
        raise SystemExit(f"no shared data at {DATA} (set ALBERT_TF_DATA)")
    out = a.output_dir
    os.makedirs(out, exist_ok=True)
    spm = tokenizer(out)
    data = {name: records(out, name, spm) for name in CORPORA}
    config = tiny_config(out)
    released = pretrain(
        os.path.join(out, "released"), config, data["wiki_train"], a.pretrain_steps, 2e-3, 0
    )
    ext_dir, ext_spm = extend(out, released, spm, a.new_words)
    ext_config = os.path.join(ext_dir, "albert_config.json")
    ext_data = {name: records(out, name, ext_spm, "_ext") for name in CORPORA}
    vocabularies = {"old": (released, config, data), "ext": (ext_dir, ext_config, ext_data)}
    # arm → (vocabulary, continued-pretraining records)
    arms = {
        "old": ("old", data["speech_train"]),
        "ext": ("ext", ext_data["speech_train"]),
        "replay": ("old", f"{data['speech_train']},{data['wiki_train']}"),
        "same": ("old", data["wiki_train"]),  # (control: the old domain again)
    }

    rows = []

    def report(label, model, vocab, tag):
        _, cfg, d = vocabularies[vocab]
        wiki = held_out_accuracy(out, model, cfg, d["wiki_eval"], f"{tag}_wiki")
        speech = held_out_accuracy(out, model, cfg, d["speech_eval"], f"{tag}_speech")
        rows.append((label, wiki, speech))
        print(f"{label:<44} {wiki:>10.4f} {speech:>12.4f}", flush=True)

    print(f"{'model':<44} {'wiki acc':>10} {'speech acc':>12}")
    report("released (old domain only)", released, "old", "released")
    report("released, vocabulary extended (no training)", ext_dir, "ext", "extended")
    summary = collections.defaultdict(list)
    for lr in a.learning_rates.split(","):
        for seed in map(int, a.seeds.split(",")):
            for arm in a.arms.split(","):
                vocab, train = arms[arm]
                init, cfg, _ = vocabularies[vocab]
                tag = f"cont_{arm}_lr{lr}_s{seed}"
                run = os.path.join(out, tag)
                pretrain(run, cfg, train, a.steps, float(lr), seed, init)
                report(f"continued, {arm}, lr {lr}, seed {seed}", run, vocab, tag)
                summary[arm, lr].append(rows[-1][1:])
    print("\nmedian over seeds (wiki acc, speech acc):")
    for (arm, lr), values in summary.items():
        wiki, speech = (statistics.median(v[i] for v in values) for i in (0, 1))
        print(f"  {arm}, lr {lr}: {wiki:.4f}, {speech:.4f}")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"args": vars(a), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
