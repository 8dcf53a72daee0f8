"""Hugging Face ALBERT task models in: `convert --source transformers` of every head class
(config.json `architectures` decides) gives a fine-tuned model directory whose model
reproduces Hugging Face's logits on random weights, with the labels of `id2label`."""

import numpy as np
import pytest

from tests.support.harness import random_batch


def _hf_task_model(directory, cls_name, seed=0, **config):
    """A Hugging Face `cls_name` with every parameter random, saved with save_pretrained."""
    from tests.support.references import hf_model

    return hf_model(directory, cls_name, seed, **config)


def _torch(batch, choices=None):
    import torch

    def t(x):
        x = torch.tensor(x, dtype=torch.long)
        return x.reshape(-1, choices, x.shape[-1]) if choices else x

    return dict(
        input_ids=t(batch["input_ids"]),
        attention_mask=t(batch["input_mask"]),
        token_type_ids=t(batch["segment_ids"]),
    )


def _ours(batch, choices=None):
    keys = ("input_ids", "input_mask", "segment_ids")
    if choices:
        return {k: batch[k].reshape(-1, choices, batch[k].shape[-1]) for k in keys}
    return {k: batch[k] for k in keys}


@pytest.mark.parametrize(
    "cls_name, config, kind",
    [
        (
            "AlbertForSequenceClassification",
            {"id2label": {0: "contradiction", 1: "entailment", 2: "neutral"}},
            "classifier",
        ),
        ("AlbertForSequenceClassification", {"num_labels": 1}, "classifier"),
        ("AlbertForMultipleChoice", {}, "multiple_choice"),
        ("AlbertForQuestionAnswering", {"num_labels": 2}, "squad"),
    ],
    ids=["classifier", "regression", "multiple_choice", "squad"],
)
def test_task_heads_convert_with_hugging_face_logits(tmp_path, cls_name, config, kind):
    import torch

    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.finetuned import load_finetuned

    hf = _hf_task_model(tmp_path / "hf", cls_name, **config)
    (tmp_path / "hf" / "spiece.model").write_bytes(b"the vocabulary travels")
    report = convert("transformers", str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert report["task"]["kind"] == kind and not report["unrecognized_source_keys"]
    assert not report["unused_source_variables"]
    model, task = load_finetuned(str(tmp_path / "ours"))
    assert (tmp_path / "ours" / "spm.model").read_bytes() == b"the vocabulary travels"

    choices = 3 if kind == "multiple_choice" else None
    batch = random_batch(batch=6 if choices else 3, seq=11)
    with torch.no_grad():
        want = hf(**_torch(batch, choices))
    got = model(_ours(batch, choices), training=False)
    if kind == "squad":
        real = batch["input_mask"].astype(bool)  # (ours puts -1e4 on padding)
        for ours, theirs in (("start_logits", want.start_logits), ("end_logits", want.end_logits)):
            np.testing.assert_allclose(got[ours].numpy()[real], theirs.numpy()[real], atol=1e-5)
        return
    np.testing.assert_allclose(got["logits"].numpy(), want.logits.numpy(), atol=1e-5)
    if kind == "classifier" and "id2label" in config:
        assert list(task.details.labels) == ["contradiction", "entailment", "neutral"]
        assert task.details.regression is False
    if config.get("num_labels") == 1:
        assert task.details.regression is True and got["logits"].shape[-1] == 1


def _randomized(model, seed=1):
    """`model` with every weight drawn at 0.3 (heads, biases and LayerNorms included)."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(0.0, 0.3, w.shape).astype(np.float32))
    return model


@pytest.mark.parametrize(
    "kind", ["pretraining", "encoder", "classifier", "regression", "multiple_choice", "squad"]
)
def test_models_leave_as_hugging_face_directories_and_come_back(tmp_path, kind):
    """ours → convert --to transformers → `from_pretrained` with no missing or unexpected
    keys and our outputs (1e-5) → convert --source transformers → our outputs again."""
    import torch
    import transformers

    from albert_tf import AlbertEncoder, AlbertPretrainer, save_checkpoint
    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.finetuned import load_finetuned, save_finetuned
    from albert_tf.checkpoints.loading import load_checkpoint
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.harness import tiny_config

    config = tiny_config()
    vocab = tmp_path / "spm.model"
    vocab.write_bytes(b"a vocabulary")
    tasks = {
        "classifier": {"kind": "classifier", "labels": ["no", "yes", "maybe"], "regression": False},
        "regression": {"kind": "classifier", "labels": [], "regression": True},
        "multiple_choice": {"kind": "multiple_choice"},
        "squad": {"kind": "squad"},
    }
    if kind in ("pretraining", "encoder"):
        ours = _randomized(
            AlbertPretrainer(config) if kind == "pretraining" else AlbertEncoder(config)
        )
        save_checkpoint(ours, str(tmp_path / "ours"), config)
    else:
        ours = TaskInfo.build(**tasks[kind]).model(config)
        ours.build()
        _randomized(ours)
        save_finetuned(
            ours,
            str(tmp_path / "ours"),
            TaskInfo.build(**tasks[kind], do_lower_case=True),
            TokenizerSpec.from_files(str(vocab)),
        )
    report = export_transformers(str(tmp_path / "ours"), str(tmp_path / "hf"))
    cls = getattr(transformers, report["architecture"])
    hf, info = cls.from_pretrained(
        str(tmp_path / "hf"), output_loading_info=True, attn_implementation="eager"
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    hf.eval()

    choices = 3 if kind == "multiple_choice" else None
    batch = random_batch(batch=6 if choices else 3, seq=11)
    with torch.no_grad():
        theirs = hf(**_torch(batch, choices))
    mine = ours(_ours(batch, choices), training=False)
    real = batch["input_mask"].astype(bool)
    if kind == "pretraining":
        pairs = [(mine["sop_logits"].numpy(), theirs.sop_logits.numpy())]
    elif kind == "encoder":
        pairs = [(mine["pooled_output"].numpy(), theirs.pooler_output.numpy())]
    elif kind == "squad":
        pairs = [(mine["start_logits"].numpy()[real], theirs.start_logits.numpy()[real])]
    else:
        pairs = [(mine["logits"].numpy(), theirs.logits.numpy())]
    for a, b in pairs:
        np.testing.assert_allclose(a, b, atol=1e-5)
    if kind == "classifier":
        assert hf.config.id2label == {0: "no", 1: "yes", 2: "maybe"}
    if kind not in ("pretraining", "encoder"):
        assert (tmp_path / "hf" / "spiece.model").read_bytes() == b"a vocabulary"

    convert("transformers", str(tmp_path / "hf"), str(tmp_path / "back"))
    if kind in ("pretraining", "encoder"):
        back = AlbertPretrainer(config) if kind == "pretraining" else AlbertEncoder(config)
        back.build()
        load_checkpoint(back, str(tmp_path / "back"))
    else:
        back, task = load_finetuned(str(tmp_path / "back"))
        assert task.kind == tasks[kind]["kind"]
    again = back(_ours(batch, choices), training=False)
    for key in mine:
        if key in again and (key != "pooled_output" or kind == "encoder"):
            np.testing.assert_allclose(again[key].numpy(), mine[key].numpy(), atol=1e-6)


def _texts_with_numbers(shared_data, count=400):
    """SQuAD v1.1 dev contexts holding a digit before a comma ("May 21, 2013,"): where the
    official digit-comma rule applies."""
    import json
    import re

    with open(shared_data / "squad" / "dev-v1.1.json", encoding="utf-8") as f:
        articles = json.load(f)["data"]
    contexts = [p["context"] for a in articles for p in a["paragraphs"]]
    return [c for c in contexts if re.search(r"\d,", c)][:count]


def test_the_vocabulary_travels_and_tokenizes_as_ours(tmp_path, tok, shared_data):
    """A fine-tuned directory exported to Hugging Face: `AutoTokenizer.from_pretrained` (the
    fast tokenizer, from the tokenizer.json shipped beside spiece.model) gives our packed ids
    on every SST-2 dev sentence and on edge cases (accents, quotes, control characters,
    digit-commas); on SQuAD contexts full of numbers, any difference is a tie: the same
    characters cut into pieces of equal total score, which two Viterbi searches may break
    either way. (transformers' own conversion of spiece.model differed on most sentences.)"""
    import transformers

    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.harness import tiny_config

    task = {"kind": "classifier", "labels": ["a", "b"], "regression": False, "do_lower_case": True}
    task = TaskInfo.build(**task)
    model = task.model(tiny_config(vocab_size=tok.vocab_size))
    model.build()
    save_finetuned(model, str(tmp_path / "ours"), task, TokenizerSpec.from_files(tok.model_file))
    export_transformers(str(tmp_path / "ours"), str(tmp_path / "hf"))
    assert (tmp_path / "hf" / "tokenizer.json").exists()
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert type(hf).__name__.startswith("AlbertTokenizer")
    lines = (shared_data / "glue" / "SST-2" / "dev.tsv").read_text().splitlines()[1:]
    edge = [
        "Über die Brücke, sagt sie.",
        "Ein  ``Test'' mit 3,5 Tagen",
        "HELLO world",
        "1,2,3 and 2014, 12,5 Tage; Seite 12, 7,",
        "ex-wife -- slow film . ( see ) \u00a3 5 \u20ac",
        # (not U+001C-001F: Python's split, so the official normalization, reads them as
        # spaces; transformers 5's AlbertTokenizer keeps its own normalizer, not the
        # shipped one, and SentencePiece's map deletes them there)
        "a\x01b \x7f c\u200bd",
        "   ",
    ]
    texts = [line.split("\t")[0] for line in lines] + edge
    assert len(texts) == 872 + len(edge)
    for text in texts:
        assert hf(text)["input_ids"] == [tok.cls_id, *tok.encode(text), tok.sep_id], text
    a, b = tok.encode("film ."), tok.encode("ex-wife")
    pair = hf("film .", "ex-wife", return_token_type_ids=True)
    assert pair["input_ids"] == [tok.cls_id, *a, tok.sep_id, *b, tok.sep_id]
    assert pair["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    numbers = _texts_with_numbers(shared_data)
    pieces = _pieces_and_scores(tok.model_file)
    score = dict(pieces)
    ties = 0
    for text in numbers:
        want = [pieces[i][0] for i in tok.encode(text)]
        got = [pieces[i][0] for i in hf(text, add_special_tokens=False)["input_ids"]]
        if got != want:
            ties += 1
            assert "".join(got) == "".join(want), text
            total = [sum(score[p] for p in pieces) for pieces in (got, want)]
            assert total[0] == pytest.approx(total[1], abs=1e-4), (text, got, want)
    assert len(numbers) == 400 and ties <= 4, ties
    # The model's positions bound the tokenizer: pipelines truncate a longer text.
    positions = model.config.max_position_embeddings
    assert hf.model_max_length == positions
    assert len(hf("wort " * 2 * positions, truncation=True)["input_ids"]) == positions


def _pieces_and_scores(model_file):
    """(piece, score) of every piece of the SentencePiece model, by id."""
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    return [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]


@pytest.mark.parametrize("kind", ["classifier", "encoder"])
def test_models_leave_as_keras_hub_presets(tmp_path, tok, kind):
    """ours → convert --to keras_hub → KerasHub's own from_preset: the backbone's outputs
    and the classifier's logits within 1e-5, the vocabulary in the preset."""
    import keras_hub

    from albert_tf import AlbertEncoder, save_checkpoint
    from albert_tf.checkpoints.export_keras_hub import export_keras_hub
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.harness import tiny_config

    config = tiny_config(vocab_size=tok.vocab_size)
    task = {
        "kind": "classifier",
        "labels": ["a", "b", "c"],
        "regression": False,
        "max_seq_length": 32,
    }
    if kind == "classifier":
        task = TaskInfo.build(**task)
        ours = task.model(config)
        ours.build()
        _randomized(ours)
        save_finetuned(ours, str(tmp_path / "ours"), task, TokenizerSpec.from_files(tok.model_file))
        encoder = ours.encoder
    else:
        ours = encoder = _randomized(AlbertEncoder(config))
        save_checkpoint(ours, str(tmp_path / "ours"), config)
    report = export_keras_hub(
        str(tmp_path / "ours"),
        str(tmp_path / "kh"),
        tokenizer=TokenizerSpec.from_files(tok.model_file),
    )
    assert report["written"] == (
        "AlbertTextClassifier" if kind == "classifier" else "AlbertBackbone"
    )
    batch = random_batch(vocab_size=tok.vocab_size, batch=3, seq=11)
    inputs = {
        "token_ids": batch["input_ids"],
        "segment_ids": batch["segment_ids"],
        "padding_mask": batch["input_mask"],
    }
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(tmp_path / "kh"))
    theirs = backbone(inputs)
    mine = encoder(_ours(batch), training=False)
    for key in ("sequence_output", "pooled_output"):
        a, b = np.asarray(theirs[key]), mine[key].numpy()
        if key == "sequence_output":
            a, b = a[batch["input_mask"] == 1], b[batch["input_mask"] == 1]
        np.testing.assert_allclose(a, b, atol=1e-5)
    if kind == "classifier":
        classifier = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "kh"))
        logits = np.asarray(classifier(inputs))  # (call: token ids; predict takes strings)
        np.testing.assert_allclose(logits, ours(_ours(batch))["logits"].numpy(), atol=1e-5)
        tokenizer = keras_hub.models.AlbertTokenizer.from_preset(str(tmp_path / "kh"))
        assert tokenizer.proto == tok.model_proto or tokenizer.vocabulary_size() == tok.vocab_size


def test_the_albert_v2_head_has_no_foreign_class_and_says_so(tmp_path, tok):
    """--squad_head albert: no Hugging Face class holds it (a clear error); KerasHub gets
    the backbone and the report names the head left behind."""
    import keras_hub

    from albert_tf.checkpoints import CheckpointError
    from albert_tf.checkpoints.export_keras_hub import export_keras_hub
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.harness import tiny_config

    task = {"kind": "squad", "squad_head": "albert", "version_2_with_negative": True}
    task = TaskInfo.build(**task)
    model = task.model(tiny_config(vocab_size=tok.vocab_size))
    model.build()
    save_finetuned(model, str(tmp_path / "ours"), task, TokenizerSpec.from_files(tok.model_file))
    with pytest.raises(CheckpointError, match="no Hugging Face class"):
        export_transformers(str(tmp_path / "ours"), str(tmp_path / "hf"))
    report = export_keras_hub(str(tmp_path / "ours"), str(tmp_path / "kh"))
    assert report["written"] == "AlbertBackbone" and report["not_written"] == ["squad_v2_head"]
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(tmp_path / "kh"))
    assert backbone.count_params() == model.encoder.count_params()
