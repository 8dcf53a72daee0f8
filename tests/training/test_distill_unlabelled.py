"""Distillation on unlabelled text (`--distill_unlabelled_file`): an unlabelled example's
loss is the soft term alone, T²·KL, and the labelled ones keep α·T²·KL + (1−α)·CE (numpy
references on a tiny model's logits); accuracy and label_ce count the labelled examples
only; the file's examples are appended to the training records after the labelled ones (cached);
a bad file is one line naming the flag, the file and the line."""

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_unlabelled_examples_train_on_the_soft_term_alone():
    import tensorflow as tf

    from albert_tf.training import ClassificationTask
    from albert_tf.training.distillation import DistillationTask, with_teacher_logits

    t, alpha = 2.5, 0.3
    task = DistillationTask(ClassificationTask(tiny_config(), 3, dropout=0.0), t, alpha)
    model = task.build_model()
    batch = {k: tf.constant(v) for k, v in random_batch(batch=4, seq=9, seed=7).items()}
    rng = np.random.default_rng(3)
    teacher = rng.normal(0, 3, (6, 3)).astype(np.float32)
    batch["label_ids"] = tf.constant([2, 0, 1, 0], tf.int32)  # (rows 1, 3: placeholders)
    batch["example_index"] = tf.constant([0, 4, 2, 5], tf.int32)
    dataset = tf.data.Dataset.from_tensors(batch)
    (batch,) = list(with_teacher_logits(dataset, teacher, labelled=4))  # indices 4, 5: text
    np.testing.assert_array_equal(batch["labelled"].numpy(), [1, 0, 1, 0])
    outputs = task.call_model(model, batch, False)
    terms, dens = task.terms(batch, outputs), task.denominators(batch)
    s = np.asarray(outputs["logits"], np.float64)
    q = teacher[[0, 4, 2, 5]].astype(np.float64)
    log_pt, log_ps = _log_softmax(q / t), _log_softmax(s / t)
    kl = (np.exp(log_pt) * (log_pt - log_ps)).sum(-1)
    ce = -_log_softmax(s)[np.arange(4), [2, 0, 1, 0]]
    labelled = np.array([1.0, 0.0, 1.0, 0.0])
    per_example = np.where(labelled == 1, alpha * t * t * kl + (1 - alpha) * ce, t * t * kl)
    assert abs(per_example[1] - t * t * kl[1]) < 1e-12  # (the reference's own definition)
    np.testing.assert_allclose(float(terms["task_loss"]), per_example.sum(), rtol=1e-5)
    np.testing.assert_allclose(float(terms["distill_kl"]), kl.sum(), rtol=1e-5)
    np.testing.assert_allclose(float(terms["label_ce"]), (labelled * ce).sum(), rtol=1e-5)
    right = (s.argmax(-1) == [2, 0, 1, 0]) * labelled
    assert float(terms["accuracy"]) == right.sum()
    assert float(dens["labelled"]) == 2.0 and float(dens["examples"]) == 4.0
    assert task.metrics == {
        "accuracy": "labelled",
        "distill_kl": "examples",
        "label_ce": "labelled",
    }
    # without unlabelled examples: every example labelled, the loss as before
    plain = {k: v for k, v in batch.items() if k != "labelled"}
    mixed = alpha * t * t * kl + (1 - alpha) * ce
    np.testing.assert_allclose(
        float(task.terms(plain, outputs)["task_loss"]), mixed.sum(), rtol=1e-5
    )


def test_unlabelled_examples_are_appended_after_the_labelled_records(tmp_path):
    from data_pipeline.classification.features import TaskFeatures, classifier_dataset
    from data_pipeline.classification.unlabelled import with_unlabelled
    from data_pipeline.records import AtomicRecordWriter, encode_examples

    labelled = {
        "input_ids": np.arange(15, dtype=np.int64).reshape(3, 5) + 5,
        "input_mask": np.ones((3, 5), np.int64),
        "segment_ids": np.zeros((3, 5), np.int64),
        "label_ids": np.array([[1], [0], [1]], np.int64),
        "example_index": np.arange(3, dtype=np.int64).reshape(3, 1),
    }
    path = str(tmp_path / "t-train.tfrecord")
    writer = AtomicRecordWriter(path)
    writer.write_all(encode_examples(labelled))
    writer.commit()
    train = TaskFeatures("t", "train", path, 3, 5, None, False, False, {}, False)
    extra = {k: labelled[k][:2] + 100 for k in ("input_ids",)}
    extra.update(input_mask=labelled["input_mask"][:2], segment_ids=labelled["segment_ids"][:2])
    combined, count = with_unlabelled(train, extra, str(tmp_path / "cache"))
    assert count == 3 and combined.count == 5 and combined.info["unlabelled"] == 2
    (batch,) = list(classifier_dataset(combined.path, 5, 5, drop_remainder=False))
    np.testing.assert_array_equal(batch["example_index"].numpy(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(batch["label_ids"].numpy(), [1, 0, 1, 0, 0])
    np.testing.assert_array_equal(batch["input_ids"].numpy()[3:], extra["input_ids"])
    # cached: the same records are not written again (a refused resume writes nothing);
    # other text is
    import os

    stamp = os.stat(combined.path).st_mtime_ns
    assert with_unlabelled(train, extra, str(tmp_path / "cache"))[0].path == combined.path
    assert os.stat(combined.path).st_mtime_ns == stamp
    other = dict(extra, input_ids=extra["input_ids"] + 1)
    with_unlabelled(train, other, str(tmp_path / "cache"))
    (batch,) = list(classifier_dataset(combined.path, 5, 5, drop_remainder=False))
    np.testing.assert_array_equal(batch["input_ids"].numpy()[3:], other["input_ids"])


def test_bad_unlabelled_files_are_one_line_naming_the_file_and_line(tmp_path):
    from data_pipeline.classification.unlabelled import read_unlabelled

    good = tmp_path / "good.txt"
    good.write_text("a fine film\nawful\tacting\n", encoding="utf-8")
    examples = read_unlabelled(str(good), pairs=False)
    assert [(e.text_a, e.text_b, e.label) for e in examples] == [
        ("a fine film", None, None),
        ("awful\tacting", None, None),
    ]
    cases = {
        "empty_line.txt": (b"one\n\ntwo\n", ":2: an empty line"),
        "latin1.txt": (b"ok\ncaf\xe9\n", ":2: not UTF-8 text"),
        "empty.txt": (b"", ": no example (an empty file)"),
        "pair.txt": (b"a\tb\nno tab here\n", ":2: 1 tab-separated text(s)"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(ValueError) as e:
            read_unlabelled(str(path), pairs=name == "pair.txt")
        line = str(e.value)
        assert line.startswith(f"--distill_unlabelled_file={path}{message}") and "\n" not in line
    with pytest.raises(
        ValueError, match=r"^--distill_unlabelled_file=.*missing.txt: no such file$"
    ):
        read_unlabelled(str(tmp_path / "missing.txt"), pairs=False)
