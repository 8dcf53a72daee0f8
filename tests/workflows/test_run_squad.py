"""run_squad.py end to end on slices of the real SQuAD dev sets (tiny model, few steps):
features, training, predictions, official scoring, v2.0 thresholds kept honest, and the
exported SavedModel answering exactly as the runner."""

import json

import pytest

from tests.support.in_process import run_command
from tests.support.serving_client import served
from tests.support.tf_serving_ops import WORDPIECE_OPS, assert_stock_server_links

TINY = {
    "vocab_size": 30000,
    "embedding_size": 32,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
}


def _slices(shared_data, tmp_path, version, **ranges):
    """SQuAD files holding articles [a, b) of the dev set, one per name."""
    with open(shared_data / "squad" / f"dev-{version}.json") as f:
        data = json.load(f)
    paths = {}
    for name, (a, b) in ranges.items():
        path = tmp_path / f"{name}-{version}.json"
        path.write_text(json.dumps({"version": data["version"], "data": data["data"][a:b]}))
        paths[name] = path
    return paths


def _run(tmp_path, shared_data, out, *extra):
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))
    run = run_command(
        "run_squad.py",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=128",
        "--doc_stride=64",
        "--max_query_length=32",
        "--train_batch_size=16",
        "--predict_batch_size=64",
        "--learning_rate=1e-3",
        "--steps_per_loop=10",
        *extra,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _questions(path):
    with open(path) as f:
        data = json.load(f)
    return [
        (qa["id"], qa["question"], p["context"])
        for a in data["data"]
        for p in a["paragraphs"]
        for qa in p["qas"]
    ]


@pytest.mark.slow
def test_squad_v1_train_predict_score_and_serve(tmp_path, shared_data):
    from data_pipeline.squad import evaluation as squad_eval

    files = _slices(shared_data, tmp_path, "v1.1", train=(0, 2), dev=(40, 41))
    out, export = tmp_path / "v1", tmp_path / "serving"
    run = _run(
        tmp_path,
        shared_data,
        out,
        f"--train_file={files['train']}",
        f"--predict_file={files['dev']}",
        "--train_step=20",
        "--do_train",
        "--do_predict",
        "--do_eval",
        f"--export_dir={export}",
        "--export_format=savedmodel",
        "--export_format=tflite",
        "--export_quantize=float32",
    )
    assert "converted" in run.stdout and "features" in run.stdout
    predictions = json.loads((out / "predictions.json").read_text())
    # The on-device file (windows in, span logits out) with the runner's Python windows:
    # run_squad's own answers.
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.squad.examples import read_squad

    lite = export / "litert" / "squad-float32.tflite"
    assert f"LiteRT: {lite}" in run.stdout
    on_device, _, _ = LiteModel(str(lite)).predict_squad(read_squad(files["dev"]))
    assert on_device == predictions
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    questions = _questions(files["dev"])
    assert set(predictions) == {q for q, _, _ in questions} == set(nbest)
    assert not (out / "null_odds.json").exists()
    for qid, candidates in nbest.items():
        assert candidates[0]["text"] == predictions[qid]
        assert abs(sum(c["probability"] for c in candidates) - 1) < 1e-4
    report = json.loads((out / "eval_results.json").read_text())
    with open(files["dev"]) as f:
        assert report["scores"] == squad_eval.evaluate(json.load(f), predictions)
    # Predicted in batches padded to max_seq_length (static shapes, as on TPUs) rather than
    # grouped by length: the same answers (the fine-tuned model the export holds).
    padded = tmp_path / "padded"
    _run(
        tmp_path,
        shared_data,
        padded,
        f"--init_checkpoint={export / '1' / 'assets.extra' / 'finetuned'}",
        f"--predict_file={files['dev']}",
        "--do_predict",
        "--pad_to_max_seq_length",
    )
    assert json.loads((padded / "predictions.json").read_text()) == predictions
    padded_nbest = json.loads((padded / "nbest_predictions.json").read_text())
    assert {q: [c["text"] for c in v] for q, v in padded_nbest.items()} == {
        q: [c["text"] for c in v] for q, v in nbest.items()
    }
    # The SavedModel, asked as a serving client asks it: every answer the runner's.
    answers = served(
        export / "1",
        {"question": [q for _, q, _ in questions], "context": [c for _, _, c in questions]},
    )
    for (qid, _, context), answer, s, e in zip(
        questions, answers["answer"], answers["start"], answers["end"]
    ):
        assert answer.decode() == predictions[qid], qid
        assert context[s:e] == predictions[qid]
    # Bad input has defined behaviour: no context → no answer (-1); an empty question,
    # non-ASCII text and a 3,000-word context (windowed) mixed in one batch → answers
    # taken from their context; invalid UTF-8 bytes read as U+FFFD.
    long_context = " ".join(f"word{i}" for i in range(3000))
    contexts = ["", "Ada wrote it.", "Ada © wrote it.", long_context]
    odd = served(export / "1", {"question": ["what?", "", "who?", "where?"], "context": contexts})
    answers = [a.decode() for a in odd["answer"]]
    assert answers[0] == "" and odd["start"][0] == -1 and odd["end"][0] == -1
    for context, answer, s, e in zip(contexts[1:], answers[1:], odd["start"][1:], odd["end"][1:]):
        assert answer and context[s:e] == answer
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from albert_tf.serving.export import build_module

    module = build_module("squad", str(export / "1" / "assets.extra" / "finetuned"))
    out = module.answer(tf.constant([b"who?"]), tf.constant([b"Ada \xff wrote it."]))
    assert out["answer"].numpy()[0].decode() in "Ada \ufffd wrote it."


@pytest.mark.slow
@pytest.mark.parametrize("head", ["albert", "bert"])
def test_squad_v2_thresholds_are_tuned_on_held_out_data(tmp_path, shared_data, head):
    """Both v2.0 heads: the official ALBERT head (beam + answer class, the default) and the
    BERT-style null score. The SavedModel and the on-device file answer as the runner."""
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.squad import evaluation as squad_eval
    from data_pipeline.squad.examples import read_squad
    from data_pipeline.squad.postprocess import predictions_at_threshold

    files = _slices(shared_data, tmp_path, "v2.0", train=(0, 2), dev=(30, 31), tune=(31, 32))
    out, export = tmp_path / "v2", tmp_path / "serving"
    _run(
        tmp_path,
        shared_data,
        out,
        f"--train_file={files['train']}",
        f"--predict_file={files['dev']}",
        f"--tune_threshold_on={files['tune']}",
        "--version_2_with_negative",
        f"--squad_head={head}",
        "--train_step=20",
        "--do_train",
        "--do_predict",
        "--do_eval",
        f"--export_dir={export}",
        "--export_format=savedmodel",
        "--export_format=tflite",
        "--export_quantize=float32",
    )
    assert json.loads((out / "run_config.json").read_text())["squad_head"] == head
    report = json.loads((out / "eval_results.json").read_text())
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    null_odds = json.loads((out / "null_odds.json").read_text())
    with open(files["dev"]) as f:
        dev = json.load(f)
    with open(files["tune"]) as f:
        tune = json.load(f)
    at = report["at_threshold"]
    assert at["threshold"] == 0.0 and {"HasAns_f1", "NoAns_f1", "exact", "f1"} <= set(at)
    tuned = report["tuned_threshold"]
    assert tuned["tuned_on"] == str(files["tune"])
    # The tuned threshold is a property of the tuning file alone ...
    assert report["oracle_threshold_on_this_set"]["best_f1"] >= tuned["f1"] - 1e-9
    # ... and applying it to the dev predictions gives the reported scores.
    applied = predictions_at_threshold(nbest, null_odds, tuned["threshold"])
    assert squad_eval.evaluate(dev, applied)["f1"] == pytest.approx(tuned["f1"])
    assert set(null_odds) == {q for q, _, _ in _questions(files["dev"])}
    del tune
    # The exported v2 model uses the tuned threshold and says no answer where the runner
    # would: same answers, and a no-answer probability for each.
    questions = _questions(files["dev"])
    answers = served(
        export / "1",
        {"question": [q for _, q, _ in questions], "context": [c for _, _, c in questions]},
    )
    for (qid, _, _), answer, p in zip(
        questions, answers["answer"], answers["no_answer_probability"]
    ):
        assert answer.decode() == applied[qid], qid
        assert 0.0 <= p <= 1.0
    lite = LiteModel(str(export / "litert" / "squad-float32.tflite"))
    assert lite.metadata["squad_head"] == head
    assert lite.predict_squad(read_squad(files["dev"]))[0] == applied


def test_bad_command_lines_are_clear_errors(tmp_path, shared_data):
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(TINY))
    base = [
        "run_squad.py",
        f"--output_dir={tmp_path}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={config}",
        "--max_seq_length=128",  # (the tiny config's positions)
    ]
    train = _slices(shared_data, tmp_path, "v1.1", train=(0, 1))["train"]
    from albert_tf import AlbertConfig, AlbertEncoder, save_checkpoint

    encoder = AlbertEncoder(AlbertConfig.from_dict(TINY))
    encoder.build()
    save_checkpoint(encoder, str(tmp_path / "encoder"))
    for extra, message in (
        (
            [
                "--do_predict",
                f"--predict_file={train}",
                f"--init_checkpoint={tmp_path / 'encoder'}",
            ],
            "error: --do_predict/--do_eval without --do_train: span_head is at random "
            "initialization",
        ),
        (["--do_train"], "--do_train needs --train_file"),
        (
            [
                "--do_train",
                f"--train_file={train}",
                "--train_batch_size=15",
                "--grad_accum_steps=2",
            ],
            "error: --train_batch_size=15 must be divisible by --grad_accum_steps=2 × 1 replicas",
        ),
        (["--do_predict", f"--predict_file={tmp_path / 'nowhere.json'}"], "SQuAD file not found"),
        (
            [
                "--do_predict",
                f"--predict_file={shared_data / 'squad' / 'dev-v1.1.json'}",
                f"--tune_threshold_on={shared_data / 'squad' / 'dev-v2.0.json'}",
            ],
            "--tune_threshold_on is for SQuAD v2.0",
        ),
        (
            ["--do_predict", f"--predict_file={train}", "--version_2_with_negative"]
            + ["--eval_metric=cmrc2018"],
            "error: --eval_metric cmrc2018 scores answerable questions only",
        ),
    ):
        run = run_command(*base, *extra)
        assert run.returncode == 1 and message in run.stderr, run.stderr[-1000:]


def test_wordpiece_vocab_larger_than_the_model_is_a_clear_error(tmp_path, wordpiece_vocab):
    """run_squad --vocab_file goes through the runners' tokenizer checks: a vocab.txt with
    more entries than the config's vocab_size is one line naming both; nothing is written."""
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(dict(TINY, vocab_size=21000)))
    run = run_command(
        "run_squad.py",
        f"--output_dir={tmp_path / 'out'}",
        f"--vocab_file={wordpiece_vocab}",
        f"--albert_config_file={config}",
        "--max_seq_length=128",
        "--do_predict",
        "--predict_file=x.json",
    )
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode == 1 and len(errors) == 1, run.stderr[-1000:]
    assert f"--vocab_file={wordpiece_vocab} has 21,128 pieces, but vocab_size=21,000" in errors[0]
    assert not (tmp_path / "out").exists()


def test_cmrc_wordpiece_train_predict_score_and_serve(tmp_path, shared_data, wordpiece_vocab):
    """run_squad with a WordPiece vocab.txt (`--vocab_file`, 21,128 entries like the
    official Chinese ALBERTs') on CMRC 2018 slices: answers located through BERT's basic
    tokenizer (each CJK character a token), predictions taken from their contexts, the
    CMRC 2018 metric (`--eval_metric cmrc2018`), the fine-tuned directory holding the
    vocab.txt, and the SavedModel answering raw Chinese text exactly as the runner."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, as any client loads them)

    from data_pipeline.squad import cmrc_evaluation

    with open(shared_data / "chinese" / "expmrc-cmrc2018-dev.json") as f:
        data = json.load(f)
    files = {}
    for name, (a, b) in {"train": (0, 40), "dev": (300, 320)}.items():
        files[name] = tmp_path / f"cmrc-{name}.json"
        files[name].write_text(json.dumps({"version": data["version"], "data": data["data"][a:b]}))
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(dict(TINY, vocab_size=21128)))
    out, export = tmp_path / "cmrc", tmp_path / "serving"
    run = run_command(
        "run_squad.py",
        f"--output_dir={out}",
        f"--vocab_file={wordpiece_vocab}",
        f"--albert_config_file={config}",
        f"--train_file={files['train']}",
        f"--predict_file={files['dev']}",
        "--eval_metric=cmrc2018",
        "--max_seq_length=128",
        "--doc_stride=64",
        "--max_query_length=32",
        "--train_batch_size=16",
        "--predict_batch_size=64",
        "--learning_rate=1e-3",
        "--train_step=10",
        "--steps_per_loop=10",
        "--do_train",
        "--do_predict",
        "--do_eval",
        f"--export_dir={export}",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "boundary_inside_piece" not in run.stdout and "unalignable" not in run.stdout
    questions = _questions(files["dev"])
    predictions = json.loads((out / "predictions.json").read_text())
    assert set(predictions) == {q for q, _, _ in questions}
    for qid, _, context in questions:
        assert predictions[qid] and predictions[qid] in context, qid
    report = json.loads((out / "eval_results.json").read_text())
    assert report["metric"] == "cmrc2018"
    dev = json.loads(files["dev"].read_text())
    assert report["scores"] == cmrc_evaluation.evaluate(dev, predictions)
    assert report["scores"]["total"] == len(questions) and report["scores"]["skip"] == 0
    # The fine-tuned directory records the vocabulary; the SavedModel holds it as an asset.
    version = export / "1"
    finetuned = version / "assets.extra" / "finetuned"
    vocab = open(wordpiece_vocab, "rb").read()
    assert (finetuned / "vocab.txt").read_bytes() == vocab
    assert json.loads((finetuned / "task.json").read_text())["vocab_file"] == "vocab.txt"
    assert (version / "assets" / "vocab.txt").read_bytes() == vocab
    assert WORDPIECE_OPS <= assert_stock_server_links(version)  # (TF Serving's ops)
    # The SavedModel answers every question as the runner did, offsets into the context.
    serve = tf.saved_model.load(str(version)).signatures["serving_default"]
    served = serve(
        question=tf.constant([q for _, q, _ in questions]),
        context=tf.constant([c for _, _, c in questions]),
    )
    answers = [a.decode() for a in served["answer"].numpy()]
    for (qid, _, context), answer, s, e in zip(
        questions, answers, served["start"].numpy(), served["end"].numpy()
    ):
        assert answer == predictions[qid], qid
        assert context[s:e] == answer
    # No context → no answer; invalid UTF-8 reads as U+FFFD; a 3,000-character context
    # is windowed in the graph; an empty question still gets an answer from its context.
    contexts = ["", "中\ufffd国 Wi-Fi", "北京大学" * 750]
    odd = serve(
        question=tf.constant(["什么？", "", "哪里？"]),
        context=tf.constant([b"", b"\xe4\xb8\xad\xff\xe5\x9b\xbd Wi-Fi", contexts[2].encode()]),
    )
    answers = [a.decode() for a in odd["answer"].numpy()]
    assert answers[0] == "" and odd["start"].numpy()[0] == odd["end"].numpy()[0] == -1
    starts, ends = odd["start"].numpy(), odd["end"].numpy()
    for context, answer, s, e in zip(contexts[1:], answers[1:], starts[1:], ends[1:]):
        assert answer and context[s:e] == answer
