"""On-device models (albert_tf.serving.litert) used as an app developer would: exported
from fine-tuned model directories, run in a fresh process that imports only the LiteRT
interpreter, tensorflow-text's op registrar and the runner, and compared with the
SavedModel of the same directory on real dev examples and on bad input."""

import json
import os

import numpy as np
import pytest

from tests.serving.test_export import _finetuned
from tests.support.harness import ROOT as HARNESS_ROOT
from tests.support.in_process import run_command
from tests.support.serving_client import lite_client
from tests.support.tf_serving_ops import SENTENCEPIECE_OPS, assert_stock_server_links

ROOT = str(HARNESS_ROOT)

BAD = [
    "",
    "   ",
    "word " * 20000,
    "HELLO\x00WORLD Ärger\x00Über",
    "a\x01b \x7f c\u200bd",
    "1,2,3 and 2014, 12,5 Tage",
    "``quoted'' text",
]
INVALID_UTF8 = b"caf\xc3 \xff\xfe ok"


@pytest.fixture(scope="module")
def spm(tok):
    return tok.model_file


@pytest.fixture(scope="module")
def exported(tmp_path_factory, spm):
    """{kind: (fine-tuned directory, SavedModel version, {quantization: .tflite})}: one
    export of each kind; the classifier at every precision."""
    from albert_tf.serving.export import export_formats

    tmp = tmp_path_factory.mktemp("litert")
    made = {
        "classifier": _finetuned(tmp / "classifier", spm, text_pair=True)[1],
        "multiple_choice": _finetuned(
            tmp / "mc", spm, kind="multiple_choice", labels=None, num_choices=3, text_pair=True
        )[1],
        "squad": _finetuned(tmp / "squad", spm, kind="squad", doc_stride=16, max_query_length=16)[
            1
        ],
    }
    out = {}
    for kind, directory in made.items():
        quantize = ("float32", "float16", "int8") if kind == "classifier" else ("float32",)
        paths = export_formats(
            kind, directory, str(tmp / f"export-{kind}"), ("savedmodel", "tflite"), quantize
        )
        files = {p.rsplit("-", 1)[1].split(".")[0]: p for p in paths[1:]}
        out[kind] = (directory, paths[0], files)
    encoder = export_formats(
        "encoder", made["classifier"], str(tmp / "export-encoder"), ("savedmodel", "tflite")
    )
    out["encoder"] = (made["classifier"], encoder[0], {"float32": encoder[1]})
    return out


def test_every_savedmodel_op_is_one_the_stock_tf_serving_links(exported):
    """The text-pair classifier, multiple choice, SQuAD and encoder SavedModels."""
    for kind, (_, version, _) in exported.items():
        assert SENTENCEPIECE_OPS <= assert_stock_server_links(version), kind


def _saved(version):
    import tensorflow as tf

    return tf.saved_model.load(version)


def _pairs(shared_data, count=40):
    lines = (shared_data / "glue" / "MRPC" / "dev.tsv").read_text().splitlines()[1 : count + 1]
    rows = [line.split("\t") for line in lines]
    return [r[3] for r in rows], [r[4] for r in rows]


@pytest.mark.slow
def test_every_kind_runs_in_a_fresh_interpreter_process_like_the_savedmodel(
    tmp_path, exported, shared_data
):
    import tensorflow as tf

    a, b = _pairs(shared_data)
    a, b = a + BAD, b + BAD[::-1]
    from data_pipeline.classification.multiple_choice import read_race

    race = read_race(str(shared_data / "race" / "expmrc-race-dev.json"))[:6]
    passages = [e.context for e in race] + ["", "kurz"]
    questions = [e.question for e in race] + ["was?", "wer _"]
    options = [list(e.options)[:3] for e in race] + [["a", "b", ""], ["x", "", ""]]
    squad_q = ["Wann fährt der Bus?", "Wer kommt?", ""]
    squad_c = ["Der Bus fährt um 8 Uhr ab. " * 12 + "Anna kommt zu spät.", "Anna kommt.", ""]
    requests = {
        f"cls_{q}": {"model": p, "method": "classify", "args": [a, b]}
        for q, p in exported["classifier"][2].items()
    }
    requests["tok"] = {
        "model": exported["classifier"][2]["float32"],
        "method": "tokenize",
        "args": [a, b],
    }
    requests["mc"] = {
        "model": exported["multiple_choice"][2]["float32"],
        "method": "choose",
        "args": [passages, questions, options],
    }
    requests["enc"] = {
        "model": exported["encoder"][2]["float32"],
        "method": "embed",
        "args": [a[:8] + BAD],
    }
    requests["squad"] = {
        "model": exported["squad"][2]["float32"],
        "method": "answer",
        "args": [squad_q, squad_c],
    }
    got = lite_client(tmp_path, requests)

    cls = _saved(exported["classifier"][1]).signatures["serving_default"]
    want = cls(text_a=tf.constant(a), text_b=tf.constant(b))
    p = want["probabilities"].numpy()
    np.testing.assert_allclose(got["cls_float32/probabilities"], p, atol=1e-5)
    np.testing.assert_allclose(got["cls_float32/logits"], want["logits"].numpy(), atol=1e-5)
    assert got["cls_float32/label"].tolist() == want["label"].numpy().tolist()
    # float16 weights: within float16's rounding; int8 weights: within a few 1e-3.
    assert np.abs(got["cls_float16/probabilities"] - p).max() < 2e-3
    assert np.abs(got["cls_int8/probabilities"] - p).max() < 2e-2
    assert np.abs(got["cls_int8/probabilities"] - p).max() > 0  # (really quantized)

    ids = _saved(exported["classifier"][1]).signatures["tokenize"](
        text_a=tf.constant(a), text_b=tf.constant(b)
    )
    length = got["tok/input_ids"].shape[1]
    assert length == int(ids["input_mask"].numpy().sum(1).max())  # the longest row
    for key in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(got[f"tok/{key}"], ids[key].numpy()[:, :length])

    mc = _saved(exported["multiple_choice"][1]).signatures["serving_default"]
    want = mc(
        passage=tf.constant(passages),
        question=tf.constant(questions),
        options=tf.constant(options),
    )
    probabilities = want["probabilities"].numpy()
    np.testing.assert_allclose(got["mc/probabilities"], probabilities, atol=1e-5)
    # The choice is the SavedModel's wherever its best option leads by more than the two
    # runtimes' rounding; where two options tie within it, the file picks one of the best.
    ordered = np.sort(probabilities, axis=1)
    clear = ordered[:, -1] - ordered[:, -2] > 2e-5  # (each side within 1e-5)
    np.testing.assert_array_equal(got["mc/choice"][clear], want["choice"].numpy()[clear])
    picked = probabilities[np.arange(len(probabilities)), got["mc/choice"]]
    np.testing.assert_allclose(picked, ordered[:, -1], atol=1e-5)

    enc = _saved(exported["encoder"][1]).signatures["embed"](text=tf.constant(a[:8] + BAD))
    for key in ("pooled_output", "sequence_output", "input_mask"):
        np.testing.assert_allclose(got[f"enc/{key}"], enc[key].numpy(), atol=1e-5)

    squad = _saved(exported["squad"][1]).signatures["serving_default"]
    want = squad(question=tf.constant(squad_q), context=tf.constant(squad_c))
    answers = json.loads(str(got["squad/answers"]))
    assert [x["answer"] for x in answers] == [x.decode() for x in want["answer"].numpy()]
    assert [x["start"] for x in answers] == want["start"].numpy().tolist()
    assert [x["end"] for x in answers] == want["end"].numpy().tolist()
    np.testing.assert_allclose([x["score"] for x in answers], want["score"].numpy(), atol=1e-4)


def test_invalid_utf8_and_row_counts_are_handled_as_the_savedmodel(exported):
    import tensorflow as tf

    from albert_tf.serving.tflite_predict import LiteModel

    model = LiteModel(exported["classifier"][2]["float32"])
    got = model.classify([INVALID_UTF8, "x"], ["", INVALID_UTF8])
    want = _saved(exported["classifier"][1]).signatures["serving_default"](
        text_a=tf.constant([INVALID_UTF8, b"x"]), text_b=tf.constant([b"", INVALID_UTF8])
    )
    np.testing.assert_allclose(got["probabilities"], want["probabilities"].numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="text_a has 2 rows but text_b has 1"):
        model.classify(["a", "b"], ["c"])
    empty = model.classify([], [])
    assert empty["probabilities"].shape == (0, 2)


def test_metadata_travels_in_the_file(exported, spm):
    from albert_tf.serving.tflite_predict import SPM_NAME, LiteModel, read_metadata
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    path = exported["classifier"][2]["int8"]
    meta = LiteModel(path).metadata
    assert meta["labels"] == ["negative", "positive"] and meta["max_seq_length"] == 48
    assert meta["vocab_sha256"] == AlbertTokenizer(spm).checksum
    assert meta["quantization"] == "int8" and meta["task"] == "classifier"
    assert json.load(open(path + ".json"))["vocab_sha256"] == meta["vocab_sha256"]
    squad = exported["squad"][2]["float32"]
    assert read_metadata(squad)[SPM_NAME] == open(spm, "rb").read()


def test_sizes_shrink_with_precision(exported):
    sizes = {q: os.path.getsize(p) for q, p in exported["classifier"][2].items()}
    assert sizes["int8"] < sizes["float16"] < sizes["float32"]


def test_runner_cli_predicts_from_stdin_and_names_a_bad_line(tmp_path, exported):
    model = exported["classifier"][2]["float32"]
    text = "ein guter Film\tja\n\nschlecht\xff\tnein\n".encode("latin-1")  # (invalid UTF-8)
    run = run_command("-m", "albert_tf.serving.tflite_predict", "--model", model, stdin=text)
    assert run.returncode == 0, run.report()
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert rows[1] == {"line": 2}  # the blank line: answered, empty
    rows = [row for row in rows if "probabilities" in row]
    assert len(rows) == 2 and set(rows[0]["probabilities"]) == {"negative", "positive"}
    assert abs(sum(rows[1]["probabilities"].values()) - 1) < 1e-5
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"question": "a", "context": "b"}\n{not json\n')
    squad = exported["squad"][2]["float32"]
    run = run_command("-m", "albert_tf.serving.tflite_predict", "--model", squad, "--input", bad)
    assert run.returncode == 1
    assert f"{bad}:2: invalid JSON" in run.stderr


def test_runner_answers_exactly_one_line_per_input_line(tmp_path, exported):
    """The input is split at "\n" only (a trailing "\r" dropped): U+2028,
    a form feed and \x1c..\x1e stay inside their line, blank lines are answered empty, and
    every answer carries its input line number; each answer equals the line classified
    alone."""
    from albert_tf.serving.tflite_predict import LiteModel

    model = exported["classifier"][2]["float32"]
    lines = [
        "ein guter Film\u2028mit Zeilentrenner\tja",
        "",
        "Seite eins\fSeite zwei\tnein",
        "   ",
        "Feld\x1cGruppe\x1dSatz\x1e\tvielleicht",
        "Windows-Zeile\tja",
    ]
    path = tmp_path / "input.txt"
    path.write_bytes(("\n".join(lines[:-1]) + "\n" + lines[-1] + "\r\n").encode("utf-8"))
    run = run_command(
        "-m",
        "albert_tf.serving.tflite_predict",
        "--model",
        model,
        "--input",
        path,
        "--batch_size=2",
    )
    assert run.returncode == 0, run.report()
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [row["line"] for row in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[1] == {"line": 2} and rows[3] == {"line": 4}
    lite = LiteModel(model)
    for row, line in zip(rows, lines):
        if not line.strip():
            continue
        a, b = line.split("\t")
        want = lite.classify([a], [b])["probabilities"][0]
        got = [row["probabilities"][k] for k in ("negative", "positive")]
        np.testing.assert_allclose(got, want, atol=1e-6)
    bad = run_command("-m", "albert_tf.serving.tflite_predict", "--input", path)
    assert bad.returncode == 2 and "--model" in bad.stderr


def test_a_step_litert_cannot_express_fails_loudly_naming_it(tmp_path):
    import tensorflow as tf

    from albert_tf.serving.litert import LiteRTError, convert, with_metadata

    fn = tf.function(
        lambda text: {"lower": tf.strings.lower(text)},
        input_signature=[tf.TensorSpec([None], tf.string, "text")],
    )
    with pytest.raises(LiteRTError, match="LiteRT cannot express these steps.*StringLower"):
        with_metadata(convert({"serving_default": fn}), {})


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["wikitext-2/valid.txt", "zh_news/news_zh_1.txt"])
def test_litert_ids_equal_python_on_a_corpus_file(tmp_path, spm, shared_data, corpus):
    """Every line of a real corpus file through the LiteRT tokenizer (the interpreter):
    the Python tokenizer's ids, except lines with a run of over 500 characters without a
    space, where FastSentencepiece and Python SentencePiece may break a near-tie
    differently (data_pipeline.tokenization.baked_normalization)."""
    from albert_tf.serving.export import export_tflite
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    _, directory = _finetuned(tmp_path, spm, positions=512)  # (512-token packs need 512)
    path = export_tflite("encoder", directory, str(tmp_path / "lite"), max_seq_length=512)[0]
    model = LiteModel(path)
    tok = AlbertTokenizer(spm)
    lines = [line for line in (shared_data / "corpus" / corpus).read_text().splitlines()]
    lines = [line for line in lines if line.strip()]
    differ = []
    for first in range(0, len(lines), 64):
        batch = lines[first : first + 64]
        got = model.tokenize(batch, [""] * len(batch))
        for i, (line, ids) in enumerate(zip(batch, tok.encode_batch(batch))):
            n = min(len(ids), 510)
            row = got["input_ids"][i]
            if row[1 : n + 1].tolist() != ids[:n] or row[n + 1] != tok.sep_id:
                differ.append(line)
    assert len(lines) > 20
    assert all(max(len(w) for w in line.split()) > 500 for line in differ), differ[:3]
    assert len(differ) <= len(lines) // 100
