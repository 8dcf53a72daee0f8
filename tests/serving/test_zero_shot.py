"""Zero-shot classification (`--task zero_shot`): a random Hugging Face
AlbertForSequenceClassification with NLI labels, imported by `convert --source transformers`
and exported by `python -m albert_tf.serving.export --task zero_shot`, scores real sentences
as `transformers.pipeline("zero-shot-classification")` on the same model and tokenizer:
SST-2 dev single-label, GoEmotions dev multi-label (and a template of its own), one label,
texts the premise truncation cuts. Bad requests and a classifier that is no NLI model are
refused with one line."""

import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SentencePiece op kernels)

from tests.support.harness import SHARED_DATA
from tests.support.in_process import run_command
from tests.support.tf_serving_ops import SENTENCEPIECE_OPS, assert_stock_server_links

S = 64  # the model's sequence length (its max_position_embeddings)
TOL = 1e-5
NLI = {0: "contradiction", 1: "entailment", 2: "neutral"}


def _sst2(n=32):
    """The first `n` SST-2 dev sentences, their tokenization undone ("it 's ." → "it's.")."""
    path = SHARED_DATA / "glue" / "SST-2" / "dev.tsv"
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    lines = path.read_text(encoding="utf-8").splitlines()[1 : n + 1]
    texts = [line.split("\t")[0].strip() for line in lines]
    texts = [re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", t) for t in texts]
    return [re.sub(r" ([.,!?;:])", r"\1", t) for t in texts]


def _goemotions(n=24):
    path = SHARED_DATA / "multilabel" / "goemotions" / "dev.tsv"
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    lines = path.read_text(encoding="utf-8").splitlines()[1 : n + 1]
    return [line.split("\t")[0] for line in lines]


class ReferencePieces:
    """What the pipeline asks of its tokenizer, answered with the reference SentencePiece
    pieces (`data_pipeline`'s AlbertTokenizer, the official tokenization, which our graph
    tokenizer equals): Hugging Face's own tokenizer segments a space before punctuation
    otherwise (" ." → "." where SentencePiece gives "▁", "."), a difference of tokenizers,
    not of zero-shot classification. Truncation "only_first" at `length`, as Hugging Face
    does it: the premise is cut, the hypothesis kept."""

    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    pad_token = "<pad>"

    def __init__(self, tok, length):
        self.tok, self.length = tok, length

    def __call__(self, pairs, truncation=None, **_):
        import torch

        ((premise, hypothesis),) = pairs  # (the pipeline sends one pair a call)
        a, b = self.tok.encode(premise), self.tok.encode(hypothesis)
        if truncation == "only_first":
            a = a[: max(0, self.length - 3 - len(b))]
        ids = [self.tok.cls_id, *a, self.tok.sep_id, *b, self.tok.sep_id]
        types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        return {
            "input_ids": torch.tensor([ids]),
            "token_type_ids": torch.tensor([types]),
            "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
        }


@pytest.fixture(scope="module")
def nli(tmp_path_factory):
    """(Hugging Face model, its tokenizer, our zero-shot SavedModel), the SavedModel
    exported by the command line from the model's conversion."""
    import transformers

    from albert_tf.checkpoints.convert import convert
    from tests.support.references import hf_model

    spm = SHARED_DATA / "spm" / "de-30k-clean.model"
    if not spm.exists():
        pytest.skip(f"real data not available: {spm} is absent")
    tmp = tmp_path_factory.mktemp("zero-shot")
    hf = hf_model(
        tmp / "hf",
        "AlbertForSequenceClassification",
        vocab_size=30000,
        max_position_embeddings=S,
        id2label=NLI,
        label2id={v: k for k, v in NLI.items()},
    )
    (tmp / "hf" / "spiece.model").write_bytes(spm.read_bytes())
    convert("transformers", str(tmp / "hf"), str(tmp / "ours"))
    run = run_command(
        "-m",
        "albert_tf.serving.export",
        "--task=zero_shot",
        f"--init_checkpoint={tmp / 'ours'}",
        f"--export_dir={tmp / 'serving'}",
    )
    assert run.returncode == 0, run.report()
    assert f"exported zero_shot: {tmp / 'serving' / '1'}" in run.stdout
    hf_tok = transformers.AlbertTokenizer.from_pretrained(str(tmp / "hf"))
    hf_tok.model_max_length = S  # (its pipeline truncates "only_first" at this length)
    # transformers 5's AlbertTokenizer leaves token_type_ids out of the model's inputs, so
    # its pipeline would read the hypothesis as segment 0; ALBERT's NLI models are trained
    # with it as segment 1 (run_classifier, the official code, transformers 4), as ours.
    hf_tok.model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    loaded = tf.saved_model.load(str(tmp / "serving" / "1"))
    return hf, hf_tok, loaded


def _ours(loaded, texts, labels, template="", multi_label=False):
    out = loaded.signatures["serving_default"](
        text=tf.constant(texts, tf.string),
        candidate_labels=tf.constant(labels, tf.string),
        hypothesis_template=tf.constant(template),
        multi_label=tf.constant(multi_label),
    )
    return {k: v.numpy() for k, v in out.items()}


def _same_pieces(tok, hf_tok, texts, hypotheses):
    """The texts that Hugging Face's tokenizer splits into the reference pieces, as it
    does every hypothesis (checked), and that fit S with the longest hypothesis."""

    def ids(t):
        return [tok.cls_id, *tok.encode(t), tok.sep_id]

    assert all(hf_tok(h)["input_ids"] == ids(h) for h in hypotheses)
    longest = max(len(ids(h)) for h in hypotheses)
    return [t for t in texts if hf_tok(t)["input_ids"] == ids(t) and len(ids(t)) + longest <= S]


def _difference(nli, texts, labels, tok=None, template=None, multi_label=False):
    """The largest |ours - pipeline| of the scores (candidate order), the pipeline with
    the reference pieces (`tok`) or its own tokenizer (None); the labels sorted by score
    agree wherever no two scores are within TOL."""
    from transformers import pipeline

    hf, hf_tok, loaded = nli
    pipe = pipeline("zero-shot-classification", model=hf, tokenizer=hf_tok, device="cpu")
    if tok is not None:
        pipe.tokenizer = ReferencePieces(tok, S)
    kwargs = {"multi_label": multi_label}
    if template is not None:
        kwargs["hypothesis_template"] = template
    got = _ours(loaded, texts, labels, template or "", multi_label)
    worst = 0.0
    for i, text in enumerate(texts):
        want = pipe(text, candidate_labels=labels, **kwargs)
        by_label = dict(zip(want["labels"], want["scores"]))
        theirs = np.array([by_label[label] for label in labels])
        worst = max(worst, float(np.abs(got["scores"][i] - theirs).max()))
        if np.all(np.abs(np.diff(np.sort(theirs))) > TOL):
            assert [x.decode() for x in got["labels"][i]] == want["labels"], text
        np.testing.assert_allclose(
            got["sorted_scores"][i], np.sort(theirs)[::-1], atol=TOL, err_msg=text
        )
    if len(labels) > 1 and not multi_label:
        np.testing.assert_allclose(got["scores"].sum(-1), 1.0, atol=1e-6)
    return worst


@pytest.mark.slow
def test_sst2_single_label_equals_the_pipeline(nli, tok):
    texts = _sst2()
    # Two texts longer than the model reads: only the premise is cut, as the pipeline cuts.
    texts += [" ".join(texts[:6]), " ".join(texts[6:14])]
    assert len(tok.encode(texts[-1])) > S
    labels = ["positive", "negative"]
    assert _difference(nli, texts, labels, tok) <= TOL  # measured 1.8e-7
    # End to end with Hugging Face's own tokenizer, where it gives the reference pieces.
    hypotheses = [f"This example is {x}." for x in labels]
    same = _same_pieces(tok, nli[1], _sst2(128), hypotheses)
    assert len(same) >= 32
    assert _difference(nli, same[:32], labels) <= TOL  # measured 1.8e-7


@pytest.mark.slow
def test_goemotions_multi_label_equals_the_pipeline(nli, tok):
    labels = ["joy", "anger", "sadness", "surprise", "gratitude"]
    texts = _goemotions()
    assert _difference(nli, texts, labels, tok, multi_label=True) <= TOL  # measured 1.3e-7
    template = "The writer feels {}."
    worst = _difference(nli, texts, labels, tok, template, multi_label=True)
    assert worst <= TOL  # measured 1.6e-7
    assert _difference(nli, texts, labels, tok) <= TOL  # single-label: measured 1.0e-7
    hypotheses = [f"This example is {x}." for x in labels]
    same = _same_pieces(tok, nli[1], _goemotions(64), hypotheses)
    assert len(same) >= 24
    assert _difference(nli, same[:24], labels, multi_label=True) <= TOL  # measured 1.3e-7


@pytest.mark.slow
def test_one_label_is_scored_alone_as_the_pipeline_does(nli, tok):
    texts = _sst2(8)
    worst = _difference(nli, texts, ["positive"], tok)  # multi_label False: still alone
    assert worst <= TOL  # measured 8.9e-8
    got = _ours(nli[2], texts, ["positive"])
    assert np.all((got["scores"] > 0) & (got["scores"] < 1))


@pytest.mark.slow
def test_bad_requests_fail_with_one_line_before_the_model(nli):
    import time

    loaded = nli[2]
    empty = _ours(loaded, [], ["a", "b"])
    assert empty["scores"].shape == (0, 2) and empty["labels"].shape == (0, 2)
    cases = [
        (dict(labels=[]), "candidate_labels is empty: give at least one candidate label"),
        (dict(template="no slot"), "no slot"),
        (dict(template="{} or {}"), "exactly once and no other brace"),
        # 100,000 pairs: refused before anything is tokenized or run.
        (dict(texts=["a sentence"] * 20000, labels=list("abcde")), "= 100000 pairs; this"),
        (dict(texts=["x" * 3_000_000]), "the request holds 3000040 bytes of text"),
    ]
    for change, says in cases:
        args = dict(texts=["good", "bad"], labels=["p", "q"], template="")
        args.update(change)
        start = time.perf_counter()
        with pytest.raises(tf.errors.InvalidArgumentError, match=None) as e:
            _ours(loaded, args["texts"], args["labels"], args["template"])
        assert time.perf_counter() - start < 10
        assert says in e.value.message, e.value.message


def _classifier_dir(tmp_path, **task):
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.harness import tiny_config

    spm = SHARED_DATA / "spm" / "de-30k-clean.model"
    if not spm.exists():
        pytest.skip(f"real data not available: {spm} is absent")
    info = TaskInfo.build("classifier", max_seq_length=32, **task)
    model = info.model(tiny_config(vocab_size=30000))
    model.build()
    directory = str(tmp_path / "classifier")
    return save_finetuned(model, directory, info, TokenizerSpec.from_files(str(spm)))


@pytest.mark.parametrize(
    "task, says",
    [
        ({"labels": ["negative", "positive"]}, "none of its labels starts with 'entail'"),
        ({"regression": True}, "it is a regression model"),
        ({"labels": ["entailment", "other"], "text_pair": False}, "it reads single texts"),
    ],
    ids=["no_entailment", "regression", "single_text"],
)
def test_a_classifier_that_is_no_nli_model_is_refused_in_one_line(tmp_path, task, says):
    from albert_tf.serving.export import export

    directory = _classifier_dir(tmp_path, **task)
    with pytest.raises(ValueError) as e:
        export("zero_shot", directory, str(tmp_path / "serving"))
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{directory}: labels [")
    assert says in message
    assert not (tmp_path / "serving" / "1").exists()


def test_an_rte_classifier_serves_with_its_not_entailment_as_contradiction(tmp_path):
    """[entailment, not_entailment]: entailment 0, against 1 (Hugging Face's rule), and the
    exported task.json of the version records both."""
    import json

    from albert_tf.serving.export import export

    directory = _classifier_dir(tmp_path, labels=["entailment", "not_entailment"])
    version = export("zero_shot", directory, str(tmp_path / "serving"))
    with open(f"{version}/assets.extra/finetuned/task.json") as f:
        recorded = json.load(f)
    assert recorded["kind"] == "zero_shot"
    assert (recorded["entailment_id"], recorded["contradiction_id"]) == (0, 1)
    assert recorded["hypothesis_template"] == "This example is {}."
    assert SENTENCEPIECE_OPS <= assert_stock_server_links(version)  # (TF Serving's ops)
    loaded = tf.saved_model.load(version)
    got = _ours(loaded, ["Das ist gut.", ""], ["gut", "schlecht", "egal"], multi_label=True)
    logits = got["logits"]
    want = 1 / (1 + np.exp(-(logits[..., 0] - logits[..., 1])))
    np.testing.assert_allclose(got["scores"], want, atol=1e-6)
    assert got["scores"].shape == (2, 3) and logits.shape == (2, 3, 2)


def test_no_on_device_file_is_written(tmp_path):
    from albert_tf.serving.export import export_formats

    directory = _classifier_dir(tmp_path, labels=["contradiction", "entailment", "neutral"])
    with pytest.raises(ValueError) as e:
        export_formats("zero_shot", directory, str(tmp_path / "serving"), ("savedmodel", "tflite"))
    assert str(e.value) == (
        f"{directory}: no on-device zero-shot classifier file is written yet; export the "
        "savedmodel format"
    )
    assert not (tmp_path / "serving" / "1").exists()
