"""Exports of WordPiece models (`--vocab_file`, the official Chinese ALBERTs' vocab.txt):
the encoder and multiple-choice SavedModels, on-device LiteRT files whose tokenizer runs in
the file (data_pipeline.tokenization.baked_wordpiece), and run_pretraining's --export_dir. Each is
compared with the Python tokenizer's ids and the in-memory model's outputs on real Chinese
text (ChnSentiCorp, Chinese news)."""

import json
import os

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, tiny_config
from tests.support.in_process import run_command
from tests.support.tf_serving_ops import WORDPIECE_OPS, assert_stock_server_links

MAX_SEQ = 128
LONG = 12000  # (the longest line of `_lines` has 9,093 pieces)
BAD = [
    "",
    "   ",
    "字" * 600,
    "HELLO\x00WORLD Ärger\x00Über ΟΔΥΣΣΕΥΣ",
    "a\x01b \x7f c\u200bd\u3000e\u2028f",
    "１２３，ｆｕｌｌ－ｗｉｄｔｈ ﬁ",
    "x" * 100 + " " + "y" * 101 + " " + "é" * 101,
]


def _chnsenticorp(count=None):
    path = SHARED_DATA / "chinese" / "ChnSentiCorp" / "dev.tsv"
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [line.split("\t")[0] for line in lines][:count]


def _config():
    # LONG positions: the encoder's .tflite packs every line of `_lines` untruncated (an
    # export longer than the model's positions is refused)
    return tiny_config(vocab_size=21128, max_position_embeddings=LONG)


@pytest.fixture(scope="module")
def models(tmp_path_factory, wordpiece_vocab):
    """{kind: (model, fine-tuned directory)}: a tiny classifier and multiple-choice model
    (random weights) saved with the WordPiece vocabulary."""
    import keras

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.models import AlbertClassifier, AlbertMultipleChoice
    from data_pipeline.tokenization.spec import TokenizerSpec

    vocab = TokenizerSpec.from_files(vocab_file=wordpiece_vocab)

    tmp = tmp_path_factory.mktemp("wp-models")
    keras.utils.set_random_seed(5)
    info = dict(max_seq_length=MAX_SEQ, do_lower_case=True, text_pair=False, regression=False)
    out = {}
    classifier = AlbertClassifier(_config(), 2, dropout=0.0)
    classifier.build()
    task = dict(info, kind="classifier", labels=["negative", "positive"])
    out["classifier"] = (
        classifier,
        save_finetuned(classifier, str(tmp / "cls"), TaskInfo.build(**task), vocab),
    )
    choice = AlbertMultipleChoice(_config(), dropout=0.0)
    choice.build()
    task = dict(info, kind="multiple_choice", labels=None, num_choices=3, text_pair=True)
    out["multiple_choice"] = (
        choice,
        save_finetuned(choice, str(tmp / "mc"), TaskInfo.build(**task), vocab),
    )
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory, models):
    """{kind: (SavedModel version, .tflite)} of the classifier and multiple-choice models;
    "encoder": (None, the classifier's encoder as a .tflite of max_seq_length 12,000, long
    enough for every line of `_lines` untruncated). The encoder SavedModel is
    run_pretraining's (`pretrained`)."""
    from albert_tf.serving.export import export_formats, export_tflite

    tmp = tmp_path_factory.mktemp("wp-export")
    out = {}
    for kind in ("classifier", "multiple_choice"):
        paths = export_formats(kind, models[kind][1], str(tmp / kind), ("savedmodel", "tflite"))
        out[kind] = tuple(paths)
    encoder = models["classifier"][1]
    out["encoder"] = (
        None,
        export_tflite("encoder", encoder, str(tmp / "enc"), max_seq_length=LONG)[0],
    )
    return out


def test_every_savedmodel_op_is_one_the_stock_tf_serving_links(exported, pretrained):
    """The WordPiece classifier, multiple choice and (run_pretraining's) encoder."""
    versions = [exported["classifier"][0], exported["multiple_choice"][0], pretrained[1]]
    for version in versions:
        assert WORDPIECE_OPS <= assert_stock_server_links(version), version


def _packed(tok, texts_a, texts_b=None, length=MAX_SEQ):
    from data_pipeline.classification.features import _pack

    rows = [
        _pack(tok, tok.encode(a), tok.encode(texts_b[i]) if texts_b else [], length)
        for i, a in enumerate(texts_a)
    ]
    return {
        k: np.array([r[i] for r in rows], np.int32)
        for i, k in enumerate(("input_ids", "input_mask", "segment_ids"))
    }


def _multiple_choice_inputs():
    passages = _chnsenticorp(6)
    questions = ["这条评论的态度是_的。", "作者满意吗？"] * 3
    options = [["正面", "负面", "中立"], ["满意", "不满意", ""]] * 3
    return passages, questions, options


def test_multiple_choice_savedmodel_tokenizes_and_chooses_as_in_memory(
    exported, models, wordpiece_vocab
):
    """The multiple-choice SavedModel of a WordPiece model: its vocab.txt under assets/,
    the Python tokenizer's ids (tokenize), the in-memory model's logits (within 1e-5)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, as any client loads them)

    from data_pipeline.classification.examples import MultipleChoiceExample
    from data_pipeline.classification.features import convert_multiple_choice
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    version = exported["multiple_choice"][0]
    assert (
        open(os.path.join(version, "assets", "vocab.txt"), "rb").read()
        == open(wordpiece_vocab, "rb").read()
    )
    loaded = tf.saved_model.load(version)
    passages, questions, options = _multiple_choice_inputs()
    got = loaded.signatures["serving_default"](
        passage=tf.constant(passages), question=tf.constant(questions), options=tf.constant(options)
    )
    tok = WordPieceTokenizer(wordpiece_vocab)
    examples = [
        MultipleChoiceExample(str(i), p, q, tuple(o for o in opts if o), 0)
        for i, (p, q, opts) in enumerate(zip(passages, questions, options))
    ]
    f = convert_multiple_choice(examples, tok, MAX_SEQ, 3)
    want = models["multiple_choice"][0](
        {k: f[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    )["logits"].numpy()
    logits = got["logits"].numpy()
    np.testing.assert_allclose(logits[0::2], want[0::2], atol=1e-5)  # three options
    np.testing.assert_allclose(logits[1::2, :2], want[1::2, :2], atol=1e-5)  # two
    assert got["probabilities"].numpy()[1::2, 2].max() < 1e-6  # the "" option
    packed = loaded.signatures["tokenize"](
        text_a=tf.constant(passages), text_b=tf.constant(questions)
    )
    want = _packed(tok, passages, questions)
    for key in want:
        np.testing.assert_array_equal(packed[key].numpy(), want[key])


def _lines():
    """Every line of ChnSentiCorp dev and of the Chinese news corpus, and the bad input."""
    news = SHARED_DATA / "corpus" / "zh_news"
    lines = _chnsenticorp()
    for name in ("news_zh_1.txt", "thucnews_1000.txt"):
        lines += [x for x in (news / name).read_text(encoding="utf-8").splitlines() if x.strip()]
    return lines + BAD


def test_litert_tokenizer_in_the_file_gives_the_python_ids(exported, wordpiece_vocab):
    """The .tflite file tokenizes raw text itself (FastSentencepiece with BERT's basic
    tokenization baked in, FastWordpiece): through the LiteRT interpreter, every line of
    ChnSentiCorp dev and the Chinese news gets `WordPieceTokenizer.encode`'s ids, and so
    do the bad inputs (NUL deleted by the runner, full-width forms kept, words of over 100
    characters one [UNK])."""
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    model = LiteModel(exported["encoder"][1])
    tok = WordPieceTokenizer(wordpiece_vocab)
    meta = model.metadata
    assert meta["tokenizer"] == "wordpiece" and meta["vocab_sha256"] == tok.checksum
    lines = _lines()
    differ = []
    for first in range(0, len(lines), 64):
        batch = lines[first : first + 64]
        got = model.tokenize(batch, [""] * len(batch))
        for i, (line, ids) in enumerate(zip(batch, tok.encode_batch(batch))):
            assert len(ids) <= LONG - 2, len(ids)  # (not truncated: every id is compared)
            row = got["input_ids"][i]
            if row[1 : len(ids) + 1].tolist() != ids or row[len(ids) + 1] != tok.sep_id:
                differ.append(line)
    assert len(lines) > 2400 and differ == [], differ[:3]
    assert tok.encode("y" * 101) == [tok.unk_id] and tok.unk_id not in tok.encode("x" * 100)


@pytest.mark.parametrize("kind", ["classifier", "multiple_choice"])
def test_litert_outputs_equal_the_savedmodel(exported, kind):
    """Each .tflite (float32) against the SavedModel of the same model: probabilities,
    logits and choices within 1e-5 on real Chinese lines and bad input."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, as any client loads them)

    from albert_tf.serving.tflite_predict import LiteModel

    saved = tf.saved_model.load(exported[kind][0]).signatures
    lite = LiteModel(exported[kind][1])
    texts = _chnsenticorp(24) + BAD
    if kind == "classifier":
        got = lite.classify(texts)
        want = saved["serving_default"](text_a=tf.constant(texts))
        keys = ("probabilities", "logits")
        assert got["label"].tolist() == want["label"].numpy().tolist()
    else:
        passages, questions, options = _multiple_choice_inputs()
        got = lite.choose(passages, questions, options)
        want = saved["serving_default"](
            passage=tf.constant(passages),
            question=tf.constant(questions),
            options=tf.constant(options),
        )
        keys = ("probabilities",)
        np.testing.assert_array_equal(got["choice"], want["choice"].numpy())
    for key in keys:
        np.testing.assert_allclose(got[key], want[key].numpy(), atol=1e-5, err_msg=key)


def test_litert_encoder_embeds_as_in_memory(exported, models, wordpiece_vocab):
    """The encoder .tflite against the in-memory encoder on the Python tokenizer's ids:
    pooled and sequence outputs within 1e-5, zeros at padding."""
    from albert_tf.serving.tflite_predict import LiteModel
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    tok = WordPieceTokenizer(wordpiece_vocab)
    texts = _chnsenticorp(16) + BAD[:2] + BAD[4:]
    texts = [t for t in texts if len(tok.encode(t)) <= 510]  # (compared packed to 512)
    assert len(texts) > 12
    out = LiteModel(exported["encoder"][1]).embed(texts)
    inputs = _packed(tok, texts, length=512)
    want = models["classifier"][0].encoder(inputs, training=False)
    length = out["sequence_output"].shape[1]
    assert length == LONG and not out["input_mask"][:, 512:].any()
    np.testing.assert_array_equal(out["input_mask"][:, :512], inputs["input_mask"])
    np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-5)
    real = inputs["input_mask"][:, :, None].astype(bool)
    np.testing.assert_allclose(
        out["sequence_output"][:, :512], np.where(real, want["sequence_output"], 0), atol=1e-5
    )


def test_squad_litert_of_a_wordpiece_model_is_refused_before_writing(tmp_path, models):
    from albert_tf.serving.export import export_formats

    with pytest.raises(ValueError, match="on-device SQuAD files of WordPiece models are not"):
        export_formats(
            "squad", models["classifier"][1], str(tmp_path / "out"), ("savedmodel", "tflite")
        )
    assert not (tmp_path / "out").exists()


# --- run_pretraining --export_dir and the export tool on its checkpoint ----------------------


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, wordpiece_vocab):
    """A few steps of run_pretraining on WordPiece records of Chinese news, with
    --vocab_file and --export_dir: (run directory, SavedModel version)."""
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data
    from tests.support.tiny import WORKFLOW as TINY

    tmp = tmp_path_factory.mktemp("wp-pretrain-export")
    news = SHARED_DATA / "corpus" / "zh_news" / "news_zh_1.txt"
    corpus = tmp / "news.txt"
    corpus.write_text(
        "".join(news.read_text(encoding="utf-8").splitlines(keepends=True)[:80]), "utf-8"
    )
    cfg = DataConfig.from_flags(
        input_file=str(corpus),
        output_dir=str(tmp / "records"),
        vocab_file=wordpiece_vocab,
        max_seq_length=64,
        max_predictions_per_seq=10,
        dupe_factor=1,
        num_output_shards=1,
    )
    create_pretraining_data(cfg, progress_every=1e9)
    config = tmp / "albert_config.json"
    config.write_text(json.dumps(dict(TINY, vocab_size=21128)))
    run = run_command(
        "run_pretraining.py",
        f"--input_file={cfg.output_dir}/*.tfrecord",
        f"--albert_config_file={config}",
        f"--vocab_file={wordpiece_vocab}",
        f"--output_dir={tmp / 'run'}",
        f"--export_dir={tmp / 'export'}",
        "--train_batch_size=8",
        "--num_train_steps=2",
        "--num_warmup_steps=1",
        "--steps_per_loop=2",
        "--save_checkpoints_steps=2",
        timeout=300,
    )
    assert run.returncode == 0, run.report()
    assert f"SavedModel: {tmp / 'export' / '1'}" in run.stdout
    return tmp / "run", str(tmp / "export" / "1")


def test_run_pretraining_exports_a_wordpiece_encoder(pretrained, wordpiece_vocab):
    """run_pretraining --vocab_file --export_dir: the encoder SavedModel holds the vocab.txt,
    tokenizes as the Python tokenizer and embeds as the trained checkpoint in memory."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, as any client loads them)

    from albert_tf.checkpoints import load_checkpoint
    from albert_tf.checkpoints.export_encoder import checkpoint_config
    from albert_tf.modeling.encoder import AlbertEncoder
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    run, version = pretrained
    assert (
        open(os.path.join(version, "assets", "vocab.txt"), "rb").read()
        == open(wordpiece_vocab, "rb").read()
    )
    texts = _chnsenticorp(10)
    loaded = tf.saved_model.load(version)
    tok = WordPieceTokenizer(wordpiece_vocab)
    inputs = _packed(tok, texts, length=64)
    packed = loaded.signatures["tokenize"](
        text_a=tf.constant(texts), text_b=tf.constant([""] * len(texts))
    )
    np.testing.assert_array_equal(packed["input_ids"].numpy(), inputs["input_ids"])
    config, _ = checkpoint_config(str(run / "checkpoints"))
    encoder = AlbertEncoder(config)
    encoder.build()
    load_checkpoint(encoder, str(run / "checkpoints"))
    want = encoder(inputs, training=False)
    out = loaded.signatures["embed"](text=tf.constant(texts))
    np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-5)
    real = inputs["input_mask"][:, :, None].astype(bool)
    np.testing.assert_allclose(
        out["sequence_output"].numpy(), np.where(real, want["sequence_output"], 0), atol=1e-5
    )


def test_export_tool_checks_the_runs_tokenizer(pretrained, wordpiece_vocab, tmp_path, tok, capsys):
    """`albert_tf.serving.export --task encoder` on the run's checkpoint: with the run's
    vocab.txt it writes a SavedModel at the run's sequence length; another vocab.txt or a
    SentencePiece model is a one-line error naming the run's run_config.json, and nothing
    is written."""
    from albert_tf.serving.export import build_module, export, main
    from data_pipeline.tokenization.spec import TokenizerSpec

    run, _ = pretrained
    checkpoints = str(run / "checkpoints")
    version = export(
        "encoder",
        checkpoints,
        str(tmp_path / "ok"),
        tokenizer=TokenizerSpec.from_files(vocab_file=wordpiece_vocab),
    )
    assert os.path.exists(os.path.join(version, "assets", "vocab.txt"))
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, as any client loads them)

    packed = tf.saved_model.load(version).signatures["tokenize"](
        text_a=tf.constant(["你好"]), text_b=tf.constant([""])
    )
    assert packed["input_ids"].shape == (1, 64)  # the run's sequence length (not 128)
    other = tmp_path / "vocab.txt"
    other.write_bytes(open(wordpiece_vocab, "rb").read() + b"[unused-extra-token]\n")
    with pytest.raises(
        ValueError,
        match=r"run_config.json: the model was pretrained on records of a WordPiece "
        r"vocab.txt of sha256 .* but --vocab_file=",
    ):
        build_module(
            "encoder", checkpoints, tokenizer=TokenizerSpec.from_files(vocab_file=str(other))
        )
    code = main(
        [
            "export",
            "--task=encoder",
            f"--init_checkpoint={checkpoints}",
            f"--spm_model_file={tok.model_file}",
            f"--export_dir={tmp_path / 'bad'}",
        ]
    )
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == 1 and len(errors) == 1, errors
    assert (
        f"{run / 'run_config.json'}: the model was pretrained on records of a WordPiece "
        "vocab.txt, but --spm_model_file=" in errors[0]
    )
    assert not (tmp_path / "bad" / "1").exists()


# --- Hugging Face and KerasHub ----------------------------------------------------------------


def test_hugging_face_directory_tokenizes_and_computes_as_ours(tmp_path, models, wordpiece_vocab):
    """convert --to transformers of a WordPiece model: vocab.txt + a BertTokenizer config,
    the Chinese ALBERTs' layout on the hub. transformers' AutoTokenizer from the directory
    gives our ids on every line of ChnSentiCorp dev and the Chinese news; AlbertModel and
    AlbertForSequenceClassification give our encoder outputs and logits (1e-5); converted
    back, the fine-tuned directory holds the vocab.txt again."""
    import torch
    import transformers

    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    model, directory = models["classifier"]
    hf_dir = str(tmp_path / "hf")
    report = export_transformers(directory, hf_dir)
    assert report["vocabulary"] == "vocab.txt"
    assert (
        open(os.path.join(hf_dir, "vocab.txt"), "rb").read() == open(wordpiece_vocab, "rb").read()
    )
    hf_tok = transformers.AutoTokenizer.from_pretrained(hf_dir)
    assert type(hf_tok).__name__.startswith("BertTokenizer")
    tok = WordPieceTokenizer(wordpiece_vocab)
    lines = _lines()[: -len(BAD)]
    theirs = hf_tok(lines, add_special_tokens=False)["input_ids"]
    assert [i for i, (a, b) in enumerate(zip(theirs, tok.encode_batch(lines))) if a != b] == []

    texts = _chnsenticorp(8)
    batch = hf_tok(texts, padding="max_length", truncation=True, max_length=MAX_SEQ)
    inputs = _packed(tok, texts)
    np.testing.assert_array_equal(batch["input_ids"], inputs["input_ids"])
    torch_inputs = dict(
        input_ids=torch.tensor(inputs["input_ids"], dtype=torch.long),
        attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
        token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
    )
    mine = model(inputs, training=False)
    encoded = model.encoder(inputs, training=False)
    for cls in (transformers.AlbertModel, transformers.AlbertForSequenceClassification):
        hf = cls.from_pretrained(hf_dir, attn_implementation="eager").eval()
        with torch.no_grad():
            out = hf(**torch_inputs)
        if cls is transformers.AlbertModel:
            real = inputs["input_mask"].astype(bool)
            np.testing.assert_allclose(
                out.last_hidden_state.numpy()[real],
                encoded["sequence_output"].numpy()[real],
                atol=1e-5,
            )
            np.testing.assert_allclose(
                out.pooler_output.numpy(), encoded["pooled_output"].numpy(), atol=1e-5
            )
        else:
            np.testing.assert_allclose(out.logits.numpy(), mine["logits"].numpy(), atol=1e-5)
    back = convert("transformers", hf_dir, str(tmp_path / "back"))
    assert back["vocabulary"] == "vocab.txt"
    task = TaskInfo.read(str(tmp_path / "back"))
    assert open(task.tokenizer().path, "rb").read() == open(wordpiece_vocab, "rb").read()


def test_keras_hub_preset_of_a_wordpiece_model_is_refused_naming_why(tmp_path, models):
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.checkpoints.export_keras_hub import export_keras_hub

    with pytest.raises(CheckpointError, match="AlbertTokenizer reads SentencePiece models only"):
        export_keras_hub(models["classifier"][1], str(tmp_path / "kh"))
    assert not (tmp_path / "kh").exists()
