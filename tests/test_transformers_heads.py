"""Hugging Face ALBERT task models in: `convert --source transformers` of every head class
(config.json `architectures` decides) gives a fine-tuned model directory whose model
reproduces Hugging Face's logits on random weights, with the labels of `id2label`."""

import json

import numpy as np
import pytest

from conftest import random_batch


def _hf_task_model(directory, cls_name, seed=0, **config):
    """A Hugging Face `cls_name` with every parameter random, saved with save_pretrained."""
    import torch
    import transformers

    fields = dict(
        vocab_size=99,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=37,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.0,
        max_position_embeddings=40,
    )
    fields.update(config)
    torch.manual_seed(seed)
    hf_config = transformers.AlbertConfig(attn_implementation="eager", **fields)
    model = getattr(transformers, cls_name)(hf_config).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    model.save_pretrained(directory)
    return model


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
        assert task["labels"] == ["contradiction", "entailment", "neutral"]
        assert task["regression"] is False
    if config.get("num_labels") == 1:
        assert task["regression"] is True and got["logits"].shape[-1] == 1


def test_token_classification_is_refused_naming_why(tmp_path):
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.checkpoints.convert import convert

    _hf_task_model(tmp_path / "hf", "AlbertForTokenClassification", num_labels=5)
    with pytest.raises(CheckpointError, match="AlbertForTokenClassification.*no token-class"):
        convert("transformers", str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"]
