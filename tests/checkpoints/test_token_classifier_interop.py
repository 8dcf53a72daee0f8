"""AlbertForTokenClassification both ways: `convert --source transformers` of a Hugging Face
directory gives a token_classifier directory (tags from id2label, no pooler expected) with
Hugging Face's logits; `convert --to transformers` of ours loads with `from_pretrained`
with no missing or unexpected keys, the same logits and the same id2label."""

import json

import numpy as np

from tests.support.harness import random_batch, tiny_config

TAGS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]


def _torch(batch):
    import torch

    return dict(
        input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
        attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
        token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
    )


def _ours(batch):
    return {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}


def test_hugging_face_token_classifier_converts_with_its_logits_and_tags(tmp_path):
    import torch

    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.finetuned import load_finetuned
    from tests.support.references import hf_model

    id2label = dict(enumerate(TAGS))
    hf = hf_model(tmp_path / "hf", "AlbertForTokenClassification", id2label=id2label)
    (tmp_path / "hf" / "spiece.model").write_bytes(b"the vocabulary travels")
    report = convert("transformers", str(tmp_path / "hf"), str(tmp_path / "ours"))
    assert report["task"]["kind"] == "token_classifier"
    assert report["task"]["labels"] == TAGS
    assert not report["unused_source_variables"] and not report["unrecognized_source_keys"]
    assert report["pooler_from_source"] is False  # (AlbertForTokenClassification has none)
    task = json.loads((tmp_path / "ours" / "task.json").read_text())
    assert "text_pair" not in task and task["spm_model"] == "spm.model"
    model, info = load_finetuned(str(tmp_path / "ours"))
    assert info.details.labels == tuple(TAGS) and info.details.task_name == "ner"

    batch = random_batch(batch=3, seq=11)
    with torch.no_grad():
        want = hf(**_torch(batch)).logits.numpy()
    got = model(_ours(batch), training=False)["logits"].numpy()
    assert got.shape == (3, 11, len(TAGS))
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_ours_leaves_as_albert_for_token_classification_and_comes_back(tmp_path):
    import torch
    import transformers

    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.finetuned import load_finetuned, save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec

    vocab = tmp_path / "spm.model"
    vocab.write_bytes(b"a vocabulary")
    info = TaskInfo.build(
        "token_classifier", labels=TAGS, doc_stride=16, max_seq_length=32, do_lower_case=True
    )
    ours = info.model(tiny_config())
    ours.build()
    rng = np.random.default_rng(1)
    for w in ours.weights:  # every weight random, heads and LayerNorms included
        w.assign(rng.normal(0.0, 0.3, w.shape).astype(np.float32))
    save_finetuned(ours, str(tmp_path / "ours"), info, TokenizerSpec.from_files(str(vocab)))

    report = export_transformers(str(tmp_path / "ours"), str(tmp_path / "hf"))
    assert report["architecture"] == "AlbertForTokenClassification"
    hf, loading = transformers.AlbertForTokenClassification.from_pretrained(
        str(tmp_path / "hf"), output_loading_info=True, attn_implementation="eager"
    )
    assert not any(loading.values()), loading  # missing, unexpected, mismatched, errors
    assert hf.config.id2label == dict(enumerate(TAGS))
    assert hf.config.label2id == {t: i for i, t in enumerate(TAGS)}
    hf.eval()

    batch = random_batch(batch=3, seq=11)
    with torch.no_grad():
        theirs = hf(**_torch(batch)).logits.numpy()
    mine = ours(_ours(batch), training=False)["logits"].numpy()
    np.testing.assert_allclose(mine, theirs, atol=1e-5)

    convert("transformers", str(tmp_path / "hf"), str(tmp_path / "back"))
    back, task = load_finetuned(str(tmp_path / "back"))
    assert task.kind == "token_classifier" and task.details.labels == tuple(TAGS)
    again = back(_ours(batch), training=False)["logits"].numpy()
    np.testing.assert_allclose(again, mine, atol=1e-6)
