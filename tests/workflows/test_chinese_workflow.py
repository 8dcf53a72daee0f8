"""The whole Chinese workflow with a WordPiece vocab.txt, one tiny model carried
through every step as a user of the official Chinese ALBERTs runs it:

  create_pretraining_data --vocab_file (zh_news)  →  run_pretraining
    →  run_classifier ChnSentiCorp (sentences) and AFQMC (sentence pairs)
       --init_checkpoint --export_dir
    →  run_squad CMRC 2018 --init_checkpoint --eval_metric cmrc2018 --export_dir
    →  a fresh Python process that loads the SavedModels and answers raw Chinese text.

Each step checks what it hands to the next (the records name their tokenizer, the
fine-tuned directories and SavedModels carry the vocab.txt); the fresh process must give the
runners' own predictions. The model is tiny and trains for a few steps: this checks the
plumbing, ids and offsets, not accuracy."""

import json
import sys

import pytest

from tests.support.harness import SHARED_DATA
from tests.support.in_process import run_command
from tests.support.tiny import WORKFLOW, tiny_fields

CONFIG = tiny_fields(WORKFLOW, vocab_size=21128, max_position_embeddings=128)  # CMRC windows of 128
AFQMC = SHARED_DATA / "chinese" / "AFQMC"
CHNSENTICORP = SHARED_DATA / "chinese" / "ChnSentiCorp"
CMRC = SHARED_DATA / "chinese" / "expmrc-cmrc2018-dev.json"


@pytest.fixture(scope="module")
def chain(tmp_path_factory, wordpiece_vocab):
    """Runs the workflow once; {name: path} of what each step wrote."""
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data

    if not CMRC.exists():
        pytest.skip(f"real data not available: {CMRC} is absent")
    tmp = tmp_path_factory.mktemp("zh-chain")
    config = tmp / "albert_config.json"
    config.write_text(json.dumps(CONFIG))
    vocab = f"--vocab_file={wordpiece_vocab}"
    news = (SHARED_DATA / "corpus" / "zh_news" / "news_zh_1.txt").read_text(encoding="utf-8")
    corpus = tmp / "news.txt"
    corpus.write_text(news, encoding="utf-8")
    records = tmp / "records"
    meta = create_pretraining_data(
        DataConfig.from_flags(
            input_file=str(corpus),
            output_dir=str(records),
            vocab_file=wordpiece_vocab,
            max_seq_length=64,
            max_predictions_per_seq=10,
            dupe_factor=2,
            num_output_shards=1,
        ),
        progress_every=1e9,
    )
    assert meta["tokenizer"]["kind"] == "wordpiece" and meta["instances"] > 100
    pretrained = tmp / "pretrained"
    run = run_command(
        "run_pretraining.py",
        f"--input_file={records}/*.tfrecord",
        f"--albert_config_file={config}",
        vocab,
        f"--output_dir={pretrained}",
        "--train_batch_size=16",
        "--max_seq_length=64",
        "--num_train_steps=10",
        "--num_warmup_steps=2",
        "--steps_per_loop=5",
        "--save_checkpoints_steps=10",
        "--learning_rate=1e-3",
        timeout=300,
    )
    assert run.returncode == 0, run.report()
    common = [vocab, f"--albert_config_file={config}", f"--init_checkpoint={pretrained}"]
    common += ["--learning_rate=1e-3", "--steps_per_loop=10", "--do_train", "--do_predict"]
    for task, data_dir in (("chnsenticorp", CHNSENTICORP), ("afqmc", AFQMC)):
        run = run_command(
            "run_classifier.py",
            f"--task_name={task}",
            f"--data_dir={data_dir}",
            f"--output_dir={tmp / task}",
            "--max_seq_length=64",
            "--max_train_examples=640",
            "--train_batch_size=32",
            "--train_step=10",
            "--eval_batch_size=256",
            "--do_eval",
            f"--export_dir={tmp / f'{task}-serving'}",
            *common,
            timeout=300,
        )
        assert run.returncode == 0, run.report()
        assert "init_checkpoint: " in run.stdout + run.stderr
    with open(CMRC) as f:
        data = json.load(f)
    cmrc_files = {}
    for name, (a, b) in {"train": (0, 40), "dev": (300, 320)}.items():
        cmrc_files[name] = tmp / f"cmrc-{name}.json"
        sliced = {"version": data["version"], "data": data["data"][a:b]}
        cmrc_files[name].write_text(json.dumps(sliced, ensure_ascii=False), encoding="utf-8")
    cmrc = tmp / "cmrc"
    run = run_command(
        "run_squad.py",
        f"--output_dir={cmrc}",
        f"--train_file={cmrc_files['train']}",
        f"--predict_file={cmrc_files['dev']}",
        "--eval_metric=cmrc2018",
        "--max_seq_length=128",
        "--doc_stride=64",
        "--max_query_length=32",
        "--train_batch_size=16",
        "--predict_batch_size=64",
        "--train_step=10",
        "--do_eval",
        f"--export_dir={tmp / 'cmrc-serving'}",
        *common,
        timeout=300,
    )
    assert run.returncode == 0, run.report()
    return dict(
        tmp=tmp,
        vocab=wordpiece_vocab,
        records=records,
        pretrained=pretrained,
        chnsenticorp=tmp / "chnsenticorp",
        chnsenticorp_serving=tmp / "chnsenticorp-serving" / "1",
        afqmc=tmp / "afqmc",
        afqmc_serving=tmp / "afqmc-serving" / "1",
        cmrc=cmrc,
        cmrc_dev=cmrc_files["dev"],
        cmrc_serving=tmp / "cmrc-serving" / "1",
    )


def test_every_step_hands_on_the_vocabulary_and_its_results(chain):
    """The fine-tuned directories and SavedModels carry the vocab.txt; AFQMC is evaluated
    and its test set predicted; CMRC is scored with the CMRC 2018 metric. (Both runs
    restored the pretrained encoder: the fixture checks their "init_checkpoint:" lines.)"""
    vocab = open(chain["vocab"], "rb").read()
    for name in ("chnsenticorp_serving", "afqmc_serving", "cmrc_serving"):
        assert (chain[name] / "assets" / "vocab.txt").read_bytes() == vocab
        finetuned = chain[name] / "assets.extra" / "finetuned"
        assert json.loads((finetuned / "task.json").read_text())["vocab_file"] == "vocab.txt"
    for task, test_rows in (("chnsenticorp", 1200), ("afqmc", 3861)):
        final = json.loads((chain[task] / "eval_results.json").read_text())["final"]
        assert 0.0 <= final["accuracy"] <= 1.0
        rows = (chain[task] / f"{task.upper()}.tsv").read_text(encoding="utf-8").splitlines()
        assert len(rows) == 1 + test_rows
    cmrc = json.loads((chain["cmrc"] / "eval_results.json").read_text())
    assert cmrc["metric"] == "cmrc2018" and cmrc["scores"]["total"] == 29


FRESH = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # its ops, as any client loads them
sentiment_dir, afqmc_dir, cmrc_dir, sentences, pairs, questions = sys.argv[1:7]
sentences, pairs = json.load(open(sentences)), json.load(open(pairs))
questions = json.load(open(questions))
sentiment = tf.saved_model.load(sentiment_dir).signatures["serving_default"]
feeling = sentiment(text_a=tf.constant(sentences))
classify = tf.saved_model.load(afqmc_dir).signatures["serving_default"]
out = classify(text_a=tf.constant([a for a, _ in pairs]), text_b=tf.constant([b for _, b in pairs]))
answer = tf.saved_model.load(cmrc_dir).signatures["serving_default"]
found = answer(question=tf.constant([q for q, _ in questions]),
               context=tf.constant([c for _, c in questions]))
print(json.dumps({
    "sentiment": [x.decode() for x in feeling["label"].numpy()],
    "labels": [x.decode() for x in out["label"].numpy()],
    "answers": [x.decode() for x in found["answer"].numpy()],
}, ensure_ascii=False))
"""


def test_a_fresh_process_answers_raw_chinese_text_as_the_runners(chain):
    """A new interpreter that imports nothing of ours loads both SavedModels and, from raw
    strings, gives the ChnSentiCorp and AFQMC labels run_classifier predicted for their test
    sets and the CMRC answers run_squad predicted for the dev questions."""
    import subprocess

    tmp = chain["tmp"]
    lines = (CHNSENTICORP / "test.tsv").read_text(encoding="utf-8").splitlines()[1:41]
    sentences = [line.split("\t")[1] for line in lines]
    felt = [
        row.split("\t")[1]
        for row in (chain["chnsenticorp"] / "CHNSENTICORP.tsv")
        .read_text(encoding="utf-8")
        .splitlines()[1:41]
    ]
    (tmp / "sentences.json").write_text(json.dumps(sentences, ensure_ascii=False), "utf-8")
    test_lines = (AFQMC / "test.txt").read_text(encoding="utf-8").splitlines()[:40]
    pairs = [line.split("\t")[:2] for line in test_lines]
    predicted = [
        row.split("\t")[1]
        for row in (chain["afqmc"] / "AFQMC.tsv").read_text(encoding="utf-8").splitlines()[1:41]
    ]
    data = json.loads(chain["cmrc_dev"].read_text(encoding="utf-8"))
    qas = [
        (qa["id"], qa["question"], p["context"])
        for a in data["data"]
        for p in a["paragraphs"]
        for qa in p["qas"]
    ][:30]
    (tmp / "pairs.json").write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
    questions = [(q, c) for _, q, c in qas]
    (tmp / "questions.json").write_text(json.dumps(questions, ensure_ascii=False), "utf-8")
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            FRESH,
            str(chain["chnsenticorp_serving"]),
            str(chain["afqmc_serving"]),
            str(chain["cmrc_serving"]),
            str(tmp / "sentences.json"),
            str(tmp / "pairs.json"),
            str(tmp / "questions.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["sentiment"] == felt
    assert got["labels"] == predicted
    runner = json.loads((chain["cmrc"] / "predictions.json").read_text(encoding="utf-8"))
    assert got["answers"] == [runner[qid] for qid, _, _ in qas]
    assert all(a and a in c for a, (_, _, c) in zip(got["answers"], qas))
