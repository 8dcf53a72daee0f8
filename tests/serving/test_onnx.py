"""ONNX files (albert_tf.serving.onnx_export, `--export_format onnx`) and their runner
(albert_tf.serving.onnx_predict): every kind exported once from a tiny model over the real
SentencePiece model, run by ONNX Runtime and compared with the SavedModel module of the
same weights on real dev slices (SST-2, STS-B, GoEmotions, movie reviews, RACE, SQuAD,
CoNLL-2003): outputs within 1e-5, the runner's answers on raw text equal to the
SavedModel's. The int8 option, and bad input on the command line (in-process)."""

import json

import numpy as np
import pytest

from tests.serving.test_export import _finetuned
from tests.support.harness import SHARED_DATA, tiny_config
from tests.support.in_process import run_command

TOL = 1e-5
S = 48  # the fine-tuned models' max_seq_length (test_export._finetuned)
NLI = ["entailment", "not_entailment"]


def _lines(path, count, skip=1):
    return path.read_text(encoding="utf-8").splitlines()[skip : skip + count]


@pytest.fixture(scope="module")
def real_data():
    """../shared/data, or skip (as the `shared_data` fixture, for the module's fixtures)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(scope="module")
def data(real_data):
    """Real slices: SST-2 / GoEmotions sentences, STS-B pairs, movie reviews, RACE, SQuAD,
    CoNLL sentences (as texts and words)."""
    from data_pipeline.classification.multiple_choice import read_race
    from data_pipeline.squad.examples import read_squad
    from data_pipeline.tagging.data import read_conll

    sts = [r.split("\t") for r in _lines(real_data / "glue" / "STS-B" / "dev.tsv", 16)]
    reviews = [
        json.loads(r)["text"]
        for r in _lines(real_data / "long_documents" / "movie_reviews" / "dev.jsonl", 3, 0)
    ]
    conll = read_conll(str(real_data / "ner" / "conll2003" / "dev.txt"))[:24]
    squad = read_squad(str(real_data / "squad" / "dev-v1.1.json"))[:6]
    race = read_race(str(real_data / "race" / "expmrc-race-dev.json"))[:4]
    return {
        "sst2": [r.split("\t")[0] for r in _lines(real_data / "glue" / "SST-2" / "dev.tsv", 32)]
        + ["", "word " * 300],
        "sts": ([r[7] for r in sts], [r[8] for r in sts]),
        "goemotions": [
            r.split("\t")[0]
            for r in _lines(real_data / "multilabel" / "goemotions" / "dev.tsv", 16)
        ],
        "reviews": reviews + ["a short one .", ""],
        "conll": [" ".join(s.tokens) for s in conll],
        "squad": ([e.question for e in squad], [e.context for e in squad]),
        "race": (
            [e.context for e in race],
            [e.question for e in race],
            [list(e.options) for e in race],
        ),
    }


def _pretrainer(directory):
    """A tiny pretraining checkpoint with its MLM head (fill-mask), peaked probabilities."""
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.models import AlbertPretrainer

    keras.utils.set_random_seed(1)
    model = AlbertPretrainer(tiny_config(vocab_size=30000, max_position_embeddings=64))
    model.build()
    save_checkpoint(model, str(directory))
    return str(directory)


def _tagger(directory, spm):
    import keras

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec

    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
    info = TaskInfo.build(
        "token_classifier", labels=labels, max_seq_length=S, doc_stride=16, do_lower_case=True
    )
    keras.utils.set_random_seed(0)
    model = info.model(tiny_config(vocab_size=30000, max_position_embeddings=64))
    model.build()
    rng = np.random.default_rng(0)
    for w in model.weights:  # (large head weights: the tags vary by word)
        if "classifier_head" in w.path:
            w.assign(rng.normal(0.0, 0.0 if "bias" in w.path else 4.0, w.shape).astype("float32"))
    return save_finetuned(model, str(directory), info, TokenizerSpec.from_files(spm))


@pytest.fixture(scope="module")
def made(tmp_path_factory, real_data):
    """{name: (kind, init_checkpoint, [.onnx paths], options)}: each kind exported once as
    ONNX (the classifier also int8, by the command line), from tiny models over the real
    SentencePiece model."""
    from albert_tf.serving.export import export_formats

    spm = str(real_data / "spm" / "de-30k-clean.model")
    tmp = tmp_path_factory.mktemp("onnx")
    classifier = _finetuned(tmp / "classifier", spm)[1]
    nli = _finetuned(tmp / "nli", spm, labels=NLI, text_pair=True)[1]
    sources = {
        "classifier": ("classifier", classifier, {}),
        "pair": ("classifier", nli, {}),  # (a text-pair classifier: the NLI model)
        "multi_label": ("classifier", _finetuned(tmp / "ml", spm, multi_label=True)[1], {}),
        "documents": ("classifier", _finetuned(tmp / "docs", spm, doc_stride=20)[1], {}),
        "multiple_choice": (
            "multiple_choice",
            _finetuned(
                tmp / "mc", spm, kind="multiple_choice", labels=None, num_choices=4, text_pair=True
            )[1],
            {},
        ),
        "squad": (
            "squad",
            _finetuned(
                tmp / "squad",
                spm,
                kind="squad",
                doc_stride=16,
                max_query_length=16,
                max_windows=200,
            )[1],
            {},
        ),
        "token_classifier": ("token_classifier", _tagger(tmp / "ner", spm), {}),
        "encoder": ("encoder", classifier, {"pooling": "mean"}),
        "fill_mask": (
            "fill_mask",
            _pretrainer(tmp / "pre"),
            {"tokenizer": spm, "max_seq_length": S},
        ),
        "zero_shot": ("zero_shot", nli, {}),
    }
    # The classifier by the command line (its flags: --export_format onnx --onnx_quantize).
    ran = run_command(
        "-m",
        "albert_tf.serving.export",
        "--task=classifier",
        f"--init_checkpoint={classifier}",
        f"--export_dir={tmp / 'export-classifier'}",
        "--export_format=onnx",
        "--onnx_quantize=float32,int8",
    )
    assert ran.returncode == 0, ran.report()
    paths = [line.split(": ", 1)[1] for line in ran.stdout.splitlines() if line.startswith("exp")]
    out = {"classifier": ("classifier", classifier, paths, {})}
    for name, (kind, source, options) in sources.items():
        if name in out:
            continue
        if "tokenizer" in options:
            from data_pipeline.tokenization.spec import TokenizerSpec

            options = dict(options, tokenizer=TokenizerSpec.from_files(options["tokenizer"]))
        paths = export_formats(
            kind,
            source,
            str(tmp / f"export-{name}"),
            ("onnx",),
            **options,
        )
        out[name] = (kind, source, paths, options)
    return out


_MODULES = {}  # name → the SavedModel module; (name, method) → its method traced once


def _saved(made, name, method):
    """The SavedModel module's `method` (what its signature of that name runs: classify,
    choose, embed, answer, tag, fill_mask, tokenize) of the same weights, built in memory
    as `export` builds it, traced for this call alone (not every signature): numpy / list
    inputs → numpy outputs."""
    import tensorflow as tf

    from albert_tf.serving.export import build_module

    if name not in _MODULES:
        kind, source, _, options = made[name]
        _MODULES[name] = build_module(kind, source, **options)
    if (name, method) not in _MODULES:
        _MODULES[name, method] = tf.function(getattr(_MODULES[name], method))
    fn = _MODULES[name, method]

    def call(**inputs):
        out = fn(**{k: tf.constant(v) for k, v in inputs.items()})
        return {k: v.numpy() for k, v in out.items()}

    return call


def _onnx(made, name, which=0):
    from albert_tf.serving.onnx_predict import OnnxModel

    return OnnxModel(made[name][2][which], num_threads=1)


def _worst(got: dict, want: dict, keys) -> float:
    return max(float(np.abs(np.asarray(got[k]) - np.asarray(want[k])).max()) for k in keys)


def test_files_and_the_vocabulary_beside_them(made):
    import os

    paths = made["classifier"][2]
    folder = os.path.dirname(paths[0])
    assert [os.path.basename(p) for p in paths] == ["classifier.onnx", "classifier-int8.onnx"]
    record = json.load(open(os.path.join(folder, "tokenizer.json")))
    assert record["kind"] == "sentencepiece" and record["file"] == "spm.model"
    meta = json.load(open(paths[0] + ".json"))
    assert meta["format"] == "albert-onnx/1" and meta["task"] == "classifier"
    assert meta["vocab_sha256"] == record["sha256"] and meta["text_inputs"] == ["text_a"]
    assert os.path.getsize(paths[1]) < 0.4 * os.path.getsize(paths[0])


def test_classifier_equals_the_savedmodel_on_sst2(made, data):
    texts = data["sst2"]
    want = _saved(made, "classifier", "classify")(text_a=texts, text_b=[""] * len(texts))
    model = _onnx(made, "classifier")
    got = model.classify(texts)
    assert _worst(got, want, ("probabilities", "logits")) <= TOL
    assert list(got["label"]) == [x.decode() for x in want["label"]]
    # The session alone, on the SavedModel's own ids (its tokenize signature).
    ids = _saved(made, "classifier", "tokenize")(text_a=texts, text_b=[""] * len(texts))
    ours = model.tokenize(texts, [""] * len(texts))
    width = ours["input_ids"].shape[1]
    assert width == ids["input_mask"].sum(1).max()
    for k in ours:
        np.testing.assert_array_equal(ours[k], ids[k][:, :width])
    raw = model.session.run(["logits"], {k: ids[k][:, :width] for k in ours})[0]
    assert np.abs(raw - want["logits"]).max() <= TOL


def test_int8_is_close_to_float32_and_smaller(made, data):
    texts = data["sst2"]
    f32, int8 = _onnx(made, "classifier", 0), _onnx(made, "classifier", 1)
    a, b = f32.classify(texts), int8.classify(texts)
    # 2e-3 on probabilities: int8 weights (per tensor, scale max|w| / 127) and activations
    # quantized per call move this model's logits by ~1e-4 (measured 3.1e-4; probabilities
    # 7.5e-5), and a two-class softmax moves by at most a quarter of its logits' change.
    assert 0 < np.abs(a["logits"] - b["logits"]).max()  # (quantized: not the same model)
    assert np.abs(a["probabilities"] - b["probabilities"]).max() <= 2e-3
    assert list(a["label"]) == list(b["label"])
    assert int8.metadata["quantization"] == "int8"


def test_text_pairs_on_sts_b(made, data):
    a, b = data["sts"]
    want = _saved(made, "pair", "classify")(text_a=a, text_b=b)
    got = _onnx(made, "pair").classify(a, b)
    assert _worst(got, want, ("probabilities", "logits")) <= TOL


def test_multi_label_on_goemotions(made, data):
    texts = data["goemotions"]
    want = _saved(made, "multi_label", "classify")(text_a=texts, text_b=[""] * len(texts))
    got = _onnx(made, "multi_label").classify(texts)
    assert _worst(got, want, ("probabilities", "logits")) <= TOL
    np.testing.assert_array_equal(got["label"], np.vectorize(bytes.decode)(want["label"]))


def test_long_documents_on_movie_reviews(made, data):
    texts = data["reviews"]
    want = _saved(made, "documents", "classify")(text_a=texts, text_b=[""] * len(texts))
    got = _onnx(made, "documents").classify(texts)
    assert _worst(got, want, ("probabilities", "logits")) <= TOL


def test_multiple_choice_on_race(made, data):
    passages, questions, options = data["race"]
    options = [o + [""] * (4 - len(o)) for o in options[:-1]] + [["ja", "", "nein", ""]]
    want = _saved(made, "multiple_choice", "choose")(
        passage=passages, question=questions, options=options
    )
    got = _onnx(made, "multiple_choice").choose(passages, questions, options)
    assert _worst(got, want, ("probabilities", "logits")) <= TOL
    np.testing.assert_array_equal(got["choice"], want["choice"])


def test_encoder_on_sts_b(made, data):
    texts = data["sts"][0] + data["sts"][1]
    want = _saved(made, "encoder", "embed")(text=texts)
    model = _onnx(made, "encoder")
    got = model.embed(texts)
    assert _worst(got, want, ("embeddings", "pooled_output", "sequence_output")) <= TOL
    vectors = model.vectors(texts)  # (length-sorted groups: the tokenize path)
    assert np.abs(vectors - want["embeddings"]).max() <= TOL


def test_squad_answers_on_squad_dev(made, data):
    questions, contexts = data["squad"]
    want = _saved(made, "squad", "answer")(question=questions, context=contexts)
    got = _onnx(made, "squad").answer(questions, contexts)
    assert [g["answer"] for g in got] == [x.decode() for x in want["answer"]]
    assert [g["start"] for g in got] == list(want["start"])
    assert np.abs(np.array([g["score"] for g in got]) - want["score"]).max() <= 1e-4


def test_squad_windows_equal_the_function_converted(made, data):
    """ONNX Runtime on run_squad's windows of real questions = the ids-in TensorFlow
    function the file was converted from."""
    from albert_tf.modeling.packing import packed_tokens
    from albert_tf.serving.registry import SERVING
    from albert_tf.serving.resolve import resolve
    from data_pipeline.squad.examples import SquadExample
    from data_pipeline.squad.features import convert_squad_examples

    kind, source, _, _ = made["squad"]
    fn = SERVING[kind].onnx(resolve(kind, source))[0]["serving_default"]
    model = _onnx(made, "squad")
    questions, contexts = data["squad"]
    examples = [SquadExample(str(i), q, c, []) for i, (q, c) in enumerate(zip(questions, contexts))]
    f = convert_squad_examples(examples, model.sentencepiece(), S, 16, 16)
    ids = {k: f[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    assert len(ids["input_ids"]) > len(examples)  # (several windows a context)
    with packed_tokens():  # as converted (padding's logits: -1e4 exactly, not -1e4 + noise)
        want = {k: v.numpy() for k, v in fn(**ids).items()}
    assert _worst(model.run(**ids), want, ("start_logits", "end_logits")) <= TOL


def test_token_classifier_on_conll(made, data):
    texts = data["conll"]
    want = _saved(made, "token_classifier", "tag")(text=texts)
    got = _onnx(made, "token_classifier").tag(texts)
    for i, g in enumerate(got):
        n = want["num_words"][i]
        assert g["tags"] == [x.decode() for x in want["tags"][i][:n]]
        assert np.abs(np.array(g["tag_scores"]) - want["tag_scores"][i][:n]).max() <= TOL
    assert {t for g in got for t in g["tags"]} - {"O"}  # (entities found)


def test_fill_mask_on_sentences(made, data):
    short = [" ".join(t.split()[:16]) for t in data["sst2"][:24]]  # (within max_seq_length)
    texts = [t.replace(" the ", " [MASK] ", 1) for t in short if " the " in t]
    texts += ["[MASK] [MASK] ist schön ."]
    want = _saved(made, "fill_mask", "fill_mask")(text=texts)
    got = _onnx(made, "fill_mask").fill(texts)
    for i, masks in enumerate(got):
        for m, candidates in enumerate(masks):
            assert [c["token_id"] for c in candidates] == list(want["token_ids"][i, m])
            scores = np.array([c["score"] for c in candidates])
            assert np.abs(scores - want["scores"][i, m]).max() <= TOL


def test_zero_shot_on_sst2(made, data):
    texts, labels = data["sst2"][:8], ["gut", "schlecht", "egal"]
    model = _onnx(made, "zero_shot")
    for multi in (False, True):
        want = _saved(made, "zero_shot", "classify")(
            text=texts, candidate_labels=labels, hypothesis_template="", multi_label=multi
        )
        got = model.classify(texts, labels, "", multi)
        assert _worst(got, want, ("scores", "sorted_scores", "logits")) <= TOL
        np.testing.assert_array_equal(got["labels"], np.vectorize(bytes.decode)(want["labels"]))


def test_the_command_answers_as_the_model_and_refuses_bad_input(made, data, tmp_path):
    """onnx_predict in-process: raw text lines → the same answers as `OnnxModel`; a missing,
    damaged or foreign file, a file of a kind without a runner, a request beyond the
    file's limits and a fill-mask text without a mask: one `error:` line, exit 1."""
    import onnx

    def predict(model, lines):
        (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return run_command(
            "-m",
            "albert_tf.serving.onnx_predict",
            f"--model={model}",
            f"--input={tmp_path / 'in.txt'}",
        )

    texts = data["sst2"][:4] + ["   "]
    ran = predict(made["classifier"][2][0], texts)
    assert ran.returncode == 0, ran.report()
    answers = [json.loads(line) for line in ran.stdout.splitlines()]
    want = _onnx(made, "classifier").classify(texts[:4])
    assert [a.get("label") for a in answers] == list(want["label"]) + [None]
    assert answers[-1] == {"line": 5}

    squad = json.dumps({"question": "Wer?", "context": "Anna kommt heute. " * 2000})
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\x08\x07 not a model" * 10)
    foreign = onnx.load(made["classifier"][2][0])
    meta = json.loads(foreign.metadata_props[0].value)
    foreign.metadata_props[0].value = json.dumps(dict(meta, task="summarizer"))
    onnx.save(foreign, str(tmp_path / "foreign.onnx"))
    cases = {
        "missing": (tmp_path / "absent.onnx", ["text"], "no such file"),
        "corrupt": (corrupt, ["text"], "not an ONNX model"),
        "wrong kind": (tmp_path / "foreign.onnx", ["text"], "has no runner"),
        "over-long": (made["squad"][2][0], [squad], "at most"),
        "no mask": (made["fill_mask"][2][0], ["kein Platzhalter hier"], "[MASK]"),
    }
    for name, (model, lines, words) in cases.items():
        ran = predict(model, lines)
        errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
        assert ran.returncode == 1 and len(errors) == 1 and words in errors[0], (name, ran.report())


def test_the_runners_flags_reach_the_exporter():
    """A runner's `--export_format onnx --onnx_quantize ...` become the export functions'
    arguments (albert_tf.serving.formats, the one owner); a precision ONNX has not is
    refused in one line."""
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES
    from albert_tf.serving.formats import export_formats
    from data_pipeline.command import UsageError

    run = ["run_classifier.py", "--task_name=sst-2", "--data_dir=d", "--output_dir=o"]
    parse = command(FAMILIES["classifier"]).parse
    s = parse(run + ["--export_format=savedmodel", "--export_format=onnx", "--onnx_quantize=int8"])
    assert export_formats(s) == {
        "formats": ("savedmodel", "onnx"),
        "quantize": ("float32",),
        "onnx_quantize": ("int8",),
        "dtype": "float32",
    }
    assert export_formats(parse(run))["onnx_quantize"] == ("float32",)
    with pytest.raises(UsageError, match="--onnx_quantize=float16 is not one of float32, int8"):
        parse(run + ["--onnx_quantize=float16"])


def test_a_wordpiece_squad_model_answers_cmrc_as_its_savedmodel(tmp_path, wordpiece_vocab):
    """A WordPiece vocabulary lies beside the ONNX file (LiteRT's SQuAD files must carry a
    SentencePiece model inside and refuse it): CMRC 2018 dev questions answered as the
    SavedModel answers them, the Chinese contexts windowed by the runner's Python code."""
    import keras
    import tensorflow as tf

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.models import AlbertQuestionAnswering
    from albert_tf.serving.export import build_module, export_formats
    from albert_tf.serving.onnx_predict import OnnxModel
    from data_pipeline.tokenization.spec import TokenizerSpec

    keras.utils.set_random_seed(3)
    model = AlbertQuestionAnswering(tiny_config(vocab_size=21128, max_position_embeddings=64))
    model.build()
    info = TaskInfo.build(
        kind="squad", max_seq_length=S, do_lower_case=True, doc_stride=16, max_query_length=16
    )
    spec = TokenizerSpec.from_files(vocab_file=wordpiece_vocab)
    directory = save_finetuned(model, str(tmp_path / "squad"), info, spec)
    (path,) = export_formats("squad", directory, str(tmp_path / "export"), ("onnx",))
    assert json.load(open(tmp_path / "export" / "onnx" / "tokenizer.json"))["file"] == "vocab.txt"
    cmrc = json.load(open(SHARED_DATA / "chinese" / "expmrc-cmrc2018-dev.json", encoding="utf-8"))
    paragraphs = [p for article in cmrc["data"][:3] for p in article["paragraphs"][:1]]
    pairs = [(qa["question"], p["context"]) for p in paragraphs for qa in p["qas"][:2]]
    questions, contexts = [q for q, _ in pairs], [c for _, c in pairs]
    want = tf.function(build_module("squad", directory).answer)(
        tf.constant(questions), tf.constant(contexts)
    )
    got = OnnxModel(path, num_threads=1).answer(questions, contexts)
    assert [g["answer"] for g in got] == [x.decode() for x in want["answer"].numpy()]
    assert [g["start"] for g in got] == list(want["start"].numpy())


def test_every_kind_answers_in_a_fresh_process_as_here(made, data, tmp_path):
    """A client process that imports ONNX Runtime and the runner, never TensorFlow or Keras,
    gets from every kind's file exactly the answers this process gets (which the tests
    above hold to the SavedModel's)."""
    from tests.support.serving_client import ONNX_HEAVY, lite_client

    passages, questions, options = data["race"]
    options = [o + [""] * (4 - len(o)) for o in options]
    short = [" ".join(t.split()[:16]) for t in data["sst2"][:24]]
    masked = [t.replace(" the ", " [MASK] ", 1) for t in short if " the " in t]
    calls = {
        "classifier": ("classify", [data["sst2"]]),
        "int8": ("classify", [data["sst2"]]),
        "pair": ("classify", list(data["sts"])),
        "multi_label": ("classify", [data["goemotions"]]),
        "documents": ("classify", [data["reviews"]]),
        "multiple_choice": ("choose", [passages, questions, options]),
        "encoder": ("embed", [data["sts"][0]]),
        "squad": ("answer", list(data["squad"])),
        "token_classifier": ("tag", [data["conll"]]),
        "fill_mask": ("fill", [masked]),
        "zero_shot": ("classify", [data["sst2"][:8], ["gut", "schlecht"], "", True]),
    }
    paths = {name: made[name][2][0] for name in calls if name in made}
    paths["int8"] = made["classifier"][2][1]
    requests = {
        name: {"model": paths[name], "method": method, "args": args}
        for name, (method, args) in calls.items()
    }
    got = lite_client(tmp_path, requests, heavy=ONNX_HEAVY)
    for name, (method, args) in calls.items():
        model = _onnx(made, "classifier", 1) if name == "int8" else _onnx(made, name)
        here = getattr(model, method)(*args)
        if isinstance(here, list):
            assert json.loads(str(got[f"{name}/answers"])) == json.loads(json.dumps(here)), name
            continue
        for key, value in here.items():
            np.testing.assert_array_equal(got[f"{name}/{key}"], value, err_msg=f"{name}/{key}")
