"""Distillation from a model of another framework and vocabulary: a Hugging Face BERT
classifier (PyTorch, its own WordPiece vocabulary) as the teacher of a tiny ALBERT, through
`--teacher_logits_file`; the student against the same student on the labels alone.

    python -m experiments.hf_teacher [--output_dir out/hf_teacher] [--labelled 1000] \\
        [--unlabelled 20000] [--teacher_examples 20000] [--seeds 2] [--steps 600]

Built from ../shared/data only (nothing is copied into the repository); needs torch,
transformers and tokenizers (the project's test-only dependencies):

- teacher: `BertForSequenceClassification` (H 128, 2 layers, 2 heads, FFN 512) with a
  WordPiece vocabulary of 8,000 learned by `tokenizers` from SST-2's training sentences,
  trained 2 epochs (AdamW, lr 1e-3, batch 32) on `--teacher_examples` training sentences,
  saved with `save_pretrained` — a teacher that has seen more labels than the student;
- its logits: `python -m albert_tf.tools.hf_teacher_logits` over every training sentence
  of the student (labelled and unlabelled), keyed by text;
- student: the `STUDENT` of experiments.finetuning_controls (a tiny ALBERT from scratch,
  the shared German SentencePiece model), run_classifier.py on `--labelled` SST-2 training
  sentences, `--steps` steps, `--seeds` seeds (`--num_runs`): on the labels alone, then
  with `--teacher_logits_file` and `--distill_unlabelled_file` (`--unlabelled` other
  training sentences, their labels withheld).

Reported: the teacher's dev accuracy, and per student setting the median, min and max dev
accuracy over seeds (SST-2 dev, 872 sentences).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from experiments.finetuning_controls import STUDENT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
SST2 = os.path.join(DATA, "glue", "SST-2")
SPM = os.path.join(DATA, "spm", "de-30k-clean.model")


def _rows(split: str) -> list[tuple[str, int]]:
    with open(os.path.join(SST2, f"{split}.tsv"), encoding="utf-8") as f:
        lines = f.read().splitlines()[1:]
    return [(t, int(y)) for t, y in (line.split("\t") for line in lines)]


def _run(args: list, log: str) -> None:
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, stdout=f, stderr=f)
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(map(str, args))}; see {log}")


def train_teacher(out: str, train, dev, seed: int = 0) -> tuple[str, float]:
    """The teacher's save_pretrained directory and its dev accuracy (reused if saved)."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    where = os.path.join(out, "teacher")
    if os.path.exists(os.path.join(where, "teacher.json")):
        with open(os.path.join(where, "teacher.json")) as f:
            return where, json.load(f)["dev_accuracy"]
    os.makedirs(where, exist_ok=True)
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator((t for t, _ in train), vocab_size=8000)
    wordpiece.save_model(where)
    tokenizer = BertTokenizerFast(os.path.join(where, "vocab.txt"), do_lower_case=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        max_position_embeddings=128,
        num_labels=2,
        id2label={0: "0", 1: "1"},
        label2id={"0": 0, "1": 1},
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(2):
        order = torch.randperm(len(train), generator=generator).tolist()
        model.train()
        for i in range(0, len(order) - 31, 32):
            batch = [train[j] for j in order[i : i + 32]]
            enc = tokenizer(
                [t for t, _ in batch],
                padding=True,
                truncation=True,
                max_length=64,
                return_tensors="pt",
            )
            loss = model(**enc, labels=torch.tensor([y for _, y in batch])).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(dev), 128):
            batch = dev[i : i + 128]
            enc = tokenizer(
                [t for t, _ in batch],
                padding=True,
                truncation=True,
                max_length=64,
                return_tensors="pt",
            )
            predicted = model(**enc).logits.argmax(-1).tolist()
            correct += sum(p == y for p, (_, y) in zip(predicted, batch))
    model.save_pretrained(where)
    tokenizer.save_pretrained(where)
    accuracy = correct / len(dev)
    with open(os.path.join(where, "teacher.json"), "w") as f:
        json.dump({"dev_accuracy": accuracy, "train_examples": len(train)}, f)
    return where, accuracy


def student(out: str, name: str, labelled: str, a, extra: list) -> list[float]:
    """run_classifier.py of STUDENT on the labelled file → its runs' final dev accuracy."""
    run = os.path.join(out, name)
    if not os.path.exists(os.path.join(run, f"run_{a.seeds - 1}", "eval_results.json")):
        config = os.path.join(out, "student_config.json")
        with open(config, "w") as f:
            json.dump(STUDENT, f)
        _run(
            [
                "run_classifier.py",
                "--task_name=tsv",
                f"--train_file={labelled}",
                f"--dev_file={os.path.join(SST2, 'dev.tsv')}",
                "--text_a_column=sentence",
                "--label_column=label",
                f"--output_dir={run}",
                f"--spm_model_file={SPM}",
                f"--albert_config_file={config}",
                "--max_seq_length=64",
                "--train_batch_size=32",
                "--eval_batch_size=256",
                f"--train_step={a.steps}",
                "--learning_rate=1e-3",
                f"--num_runs={a.seeds}",
                "--do_train",
                "--do_eval",
                *extra,
            ],
            run + ".log",
        )
    accuracies = []
    for i in range(a.seeds):
        with open(os.path.join(run, f"run_{i}", "eval_results.json")) as f:
            accuracies.append(json.load(f)["final"]["accuracy"])
    return accuracies


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output_dir", default=os.path.join(ROOT, "out", "hf_teacher"))
    p.add_argument("--labelled", type=int, default=1000)
    p.add_argument("--unlabelled", type=int, default=20000)
    p.add_argument("--teacher_examples", type=int, default=20000)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--steps", type=int, default=600)
    a = p.parse_args(argv)
    if not os.path.isdir(SST2):
        raise SystemExit(f"no shared data at {DATA} (set ALBERT_TF_DATA)")
    out = a.output_dir
    os.makedirs(out, exist_ok=True)
    train, dev = _rows("train"), _rows("dev")
    seen = set()  # (SST-2's train repeats some sentences; a text names one example)
    train = [r for r in train if not (r[0] in seen or seen.add(r[0]))]
    teacher, teacher_accuracy = train_teacher(out, train[: a.teacher_examples], dev)
    # The student's examples: the first `labelled` distinct training sentences with their
    # labels, the next `unlabelled` ones' texts without (the same split, disjoint).
    labelled_rows = train[: a.labelled]
    unlabelled_rows = train[a.labelled : a.labelled + a.unlabelled]
    labelled = os.path.join(out, "labelled.tsv")
    with open(labelled, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in labelled_rows))
    unlabelled = os.path.join(out, "unlabelled.txt")
    with open(unlabelled, "w", encoding="utf-8") as f:
        f.write("".join(f"{t}\n" for t, _ in unlabelled_rows))
    texts = os.path.join(out, "teacher_texts.txt")
    with open(texts, "w", encoding="utf-8") as f:
        f.write("".join(f"{t}\n" for t, _ in labelled_rows + unlabelled_rows))
    logits = os.path.join(out, "teacher_logits.jsonl")
    if not os.path.exists(logits):
        _run(
            [
                "-m",
                "albert_tf.tools.hf_teacher_logits",
                f"--model={teacher}",
                f"--input_file={texts}",
                f"--output_file={logits}",
                "--max_seq_length=64",
            ],
            logits + ".log",
        )
    alone = student(out, "labels_alone", labelled, a, [])
    distilled = student(
        out,
        "hf_teacher",
        labelled,
        a,
        [f"--teacher_logits_file={logits}", f"--distill_unlabelled_file={unlabelled}"],
    )
    print(f"teacher (HF BERT, {a.teacher_examples} labels): dev accuracy {teacher_accuracy:.4f}")
    for name, values in (("labels alone", alone), ("HF teacher's logits", distilled)):
        print(
            f"student, {name}: dev accuracy {statistics.median(values):.4f} "
            f"[{min(values):.4f}, {max(values):.4f}] over {a.seeds} seeds"
        )
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(
            {
                "args": vars(a),
                "teacher": teacher_accuracy,
                "labels_alone": alone,
                "hf_teacher": distilled,
            },
            f,
            indent=1,
        )


if __name__ == "__main__":
    main()
