"""The whole Chinese workflow with a WordPiece vocab.txt, one tiny model carried
through every step as a user of the official Chinese ALBERTs runs it:

  create_pretraining_data --vocab_file (zh_news)  →  run_pretraining
    →  run_classifier ChnSentiCorp (sentences) and AFQMC (sentence pairs)
       --init_checkpoint --export_dir
    →  run_squad CMRC 2018 --init_checkpoint --eval_metric cmrc2018 --export_dir
    →  the SavedModels, loaded as a serving client loads them, answer raw Chinese text.

Each step checks what it hands to the next (the records name their tokenizer, the
fine-tuned directories and SavedModels carry the vocab.txt); the SavedModels must give the
runners' own predictions. The model is tiny and trains for a few steps: this checks the
plumbing, ids and offsets, not accuracy."""

import json

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


def test_the_savedmodels_answer_raw_chinese_text_as_the_runners(chain):
    """Loaded as a serving client loads them (tests/support/serving_client.served: no graph
    calls back into Python), the SavedModels give, from raw strings, the ChnSentiCorp and
    AFQMC labels run_classifier predicted for their test sets and the CMRC answers run_squad
    predicted for the dev questions."""
    from tests.support.serving_client import served

    lines = (CHNSENTICORP / "test.tsv").read_text(encoding="utf-8").splitlines()[1:41]
    sentences = [line.split("\t")[1] for line in lines]
    felt = [
        row.split("\t")[1]
        for row in (chain["chnsenticorp"] / "CHNSENTICORP.tsv")
        .read_text(encoding="utf-8")
        .splitlines()[1:41]
    ]
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
    feeling = served(chain["chnsenticorp_serving"], {"text_a": sentences})
    labels = served(
        chain["afqmc_serving"], {"text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs]}
    )
    found = served(
        chain["cmrc_serving"],
        {"question": [q for _, q, _ in qas], "context": [c for _, _, c in qas]},
    )
    got = {
        "sentiment": [x.decode() for x in feeling["label"]],
        "labels": [x.decode() for x in labels["label"]],
        "answers": [x.decode() for x in found["answer"]],
    }
    assert got["sentiment"] == felt
    assert got["labels"] == predicted
    runner = json.loads((chain["cmrc"] / "predictions.json").read_text(encoding="utf-8"))
    assert got["answers"] == [runner[qid] for qid, _, _ in qas]
    assert all(a and a in c for a, (_, _, c) in zip(got["answers"], qas))


def test_wordpiece_features_and_the_savedmodel_tokenize_as_the_tokenizer(chain):
    """ChnSentiCorp with the 21,128-entry vocab.txt (the official Chinese ALBERTs'): the
    cached features hold its ids ([CLS] first, few [UNK]: Chinese characters are pieces of
    their own), and the SavedModel's tokenize signature gives the Python tokenizer's ids for
    raw Chinese text with ASCII in it."""
    import glob

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, as any client loads them)

    from data_pipeline.records import read_records
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    tok = WordPieceTokenizer(chain["vocab"])
    cache = glob.glob(f"{chain['chnsenticorp']}/cache/**/*.tfrecord", recursive=True)
    [cached] = [p for p in cache if "dev" in p]
    ids = [
        list(tf.train.Example.FromString(r).features.feature["input_ids"].int64_list.value)
        for r in read_records(cached)
    ]
    assert len(ids) > 100 and all(row[0] == tok.cls_id for row in ids)
    flat = [i for row in ids for i in row if i != tok.pad_id]
    assert flat.count(tok.unk_id) < 0.01 * len(flat)
    loaded = tf.saved_model.load(str(chain["chnsenticorp_serving"]))
    texts = ["这家酒店的服务很好，房间也干净。", "太差了，再也不来了！Wi-Fi 2024"]
    packed = loaded.signatures["tokenize"](text_a=tf.constant(texts), text_b=tf.constant(["", ""]))
    for row, text in zip(packed["input_ids"].numpy(), texts):
        want = [tok.cls_id, *tok.encode(text), tok.sep_id]
        assert list(row[: len(want)]) == want and not row[len(want) :].any()
