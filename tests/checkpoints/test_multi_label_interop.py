"""A multi-label classifier as task.json (multi_label, thresholds), as a Hugging Face
AlbertForSequenceClassification with problem_type "multi_label_classification" (out and
back), and its loss: Hugging Face's BCEWithLogitsLoss on the same logits and labels."""

import json

import numpy as np
import pytest

from albert_tf.checkpoints.task_info import TaskInfo
from tests.support.harness import random_batch

LABELS = ["anger", "joy", "love", "fear"]


def test_task_json_fields_and_their_checks(tmp_path):
    info = TaskInfo.build(
        kind="classifier", labels=LABELS, multi_label=True, thresholds=[0.3, 0.5, 0.7, 0.25]
    )
    assert info.details.multi_label and info.details.thresholds == (0.3, 0.5, 0.7, 0.25)
    plain = TaskInfo.build(kind="classifier", labels=LABELS, multi_label=True)
    assert plain.details.decision_thresholds() == (0.5,) * 4
    for bad, message in (
        (dict(multi_label=True, thresholds=[0.5]), "'thresholds' has 1 values for 4 labels"),
        (dict(thresholds=[0.5] * 4), "'thresholds' are for a multi-label classifier"),
        (dict(multi_label=True, thresholds=[0.5, 0.5, 1.0, 0.5]), r"must be in \(0, 1\)"),
        (dict(multi_label=True, thresholds=["x"] * 4), "field 'thresholds' must be"),
    ):
        with pytest.raises(ValueError, match=message):
            TaskInfo.build(kind="classifier", labels=LABELS, **bad)


def test_loss_equals_hugging_face_bce_with_logits(tmp_path):
    """Hugging Face's AlbertForSequenceClassification computes its multi-label loss from
    its own logits; ours on the same logits and labels (a mean over examples and labels)
    agrees within 1e-6, and so for saturated logits against BCEWithLogitsLoss itself."""
    import tensorflow as tf
    import torch

    from albert_tf.training import divisors
    from albert_tf.training.multi_label import MultiLabelClassificationTask
    from tests.support.harness import tiny_config
    from tests.support.references import hf_model

    hf = hf_model(str(tmp_path / "hf"), "AlbertForSequenceClassification", num_labels=4)
    hf.config.problem_type = "multi_label_classification"
    batch = random_batch(batch=5, seq=11)
    gold = (np.random.default_rng(2).random([5, len(LABELS)]) < 0.4).astype(np.float32)
    with torch.no_grad():
        out = hf(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
            labels=torch.tensor(gold),
        )
    task = MultiLabelClassificationTask(tiny_config(), num_labels=len(LABELS))
    assert task.best_metric == "micro_f1"

    def ours(logits):
        step = {"label_ids": tf.constant(gold)}
        terms = task.terms(step, {"logits": tf.constant(logits)})
        den = divisors(task.losses, task.denominators(step), task.denominator_offsets)
        return float(terms["task_loss"] / den["task_loss"])

    assert float(out.loss) > 0
    assert ours(out.logits.numpy()) == pytest.approx(float(out.loss), abs=1e-6)
    saturated = 40 * out.logits.numpy()
    with torch.no_grad():
        want = torch.nn.BCEWithLogitsLoss()(torch.tensor(saturated), torch.tensor(gold))
    assert ours(saturated) == pytest.approx(float(want), abs=1e-6)


def test_multi_label_leaves_as_hugging_face_and_comes_back(tmp_path):
    import torch
    import transformers

    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.finetuned import load_finetuned, save_finetuned
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.harness import tiny_config

    vocab = tmp_path / "spm.model"
    vocab.write_bytes(b"a vocabulary")
    fields = dict(kind="classifier", labels=LABELS, multi_label=True, thresholds=[0.4] * 4)
    ours = TaskInfo.build(**fields).model(tiny_config())
    ours.build()
    rng = np.random.default_rng(1)
    for w in ours.weights:
        w.assign(rng.normal(0.0, 0.3, w.shape).astype(np.float32))
    info = TaskInfo.build(**fields, do_lower_case=True)
    save_finetuned(ours, str(tmp_path / "ours"), info, TokenizerSpec.from_files(str(vocab)))
    export_transformers(str(tmp_path / "ours"), str(tmp_path / "hf"))
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["problem_type"] == "multi_label_classification"
    assert config["id2label"] == {str(i): n for i, n in enumerate(LABELS)}
    hf, loading = transformers.AlbertForSequenceClassification.from_pretrained(
        str(tmp_path / "hf"), output_loading_info=True, attn_implementation="eager"
    )
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    batch = random_batch(batch=3, seq=11)
    with torch.no_grad():
        theirs = hf.eval()(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
        )
    keys = ("input_ids", "input_mask", "segment_ids")
    mine = ours({k: batch[k] for k in keys}, training=False)["logits"].numpy()
    np.testing.assert_allclose(mine, theirs.logits.numpy(), atol=1e-5)

    report = convert("transformers", str(tmp_path / "hf"), str(tmp_path / "back"))
    assert report["task"]["multi_label"] is True
    back, task = load_finetuned(str(tmp_path / "back"))
    assert task.details.multi_label and list(task.details.labels) == LABELS
    assert task.details.regression is False
    assert task.details.decision_thresholds() == (0.5,) * 4  # Hugging Face keeps none
    again = back({k: batch[k] for k in keys}, training=False)["logits"].numpy()
    np.testing.assert_allclose(again, mine, atol=1e-6)
