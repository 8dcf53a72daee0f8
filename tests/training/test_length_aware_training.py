"""Training on batches grouped by length (data_pipeline.length_buckets): every batch full
and of a bucket's length, examples shuffled and none lost or repeated within an epoch,
gradient accumulation over micro-batches of different lengths equal to the padded large
batch, one traced training loop for all the shapes, and static shapes where they must be."""

import numpy as np
import pytest

from tests.support.harness import tiny_config

SEQ = 48
BUCKETS = (16, 32)  # with max_seq_length 48: batches of length 16, 32 or 48
FEATURES = ("input_ids", "input_mask", "segment_ids")


def _examples(n=96, seed=0):
    """Sentence pairs of random lengths 3..SEQ, padded to SEQ, with their index."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, SEQ + 1, n)
    positions = np.arange(SEQ)[None, :]
    mask = (positions < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, 99, (n, SEQ)).astype(np.int32) * mask
    ids[:, 0] = 2
    segments = ((positions >= lengths[:, None] // 2) & (mask > 0)).astype(np.int32)
    return {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": segments,
        "label_ids": rng.integers(0, 2, n).astype(np.int32),
        "example_index": np.arange(n, dtype=np.int32),
    }


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """The examples as classifier records (the cached-feature file run_classifier reads)."""
    from data_pipeline.records import cached_features

    data = _examples()
    fields = {k: v.astype(np.int64) for k, v in data.items() if k != "example_index"}
    path, count, _ = cached_features(
        str(tmp_path_factory.mktemp("la") / "train"), "k", lambda: fields
    )
    return path, data


def test_training_batches_are_full_bucketed_shuffled_and_cover_every_example(records):
    from data_pipeline.classification.features import classifier_dataset
    from data_pipeline.length_buckets import bucket_sizes

    path, data = records
    n, batch = len(data["label_ids"]), 8
    ds = classifier_dataset(path, batch, SEQ, is_training=True, seed=1, length_buckets=BUCKETS)
    batches = [b for _, b in zip(range(3 * n // batch), ds)]
    shapes = [tuple(b["input_ids"].shape) for b in batches]
    assert {s[0] for s in shapes} == {batch}  # full batches only
    assert {s[1] for s in shapes} == set(bucket_sizes(SEQ, BUCKETS))
    for b in batches:  # each example is cut no shorter than its length, padded with zeros
        index = b["example_index"].numpy()
        length = b["input_ids"].shape[1]
        np.testing.assert_array_equal(b["input_ids"].numpy(), data["input_ids"][index, :length])
        assert data["input_mask"][index, length:].sum() == 0
        assert data["input_mask"][index].sum(axis=1).max() > length - 16 or length == 16
    # Epochs are permutations shuffled anew, and grouping only delays an example until its
    # bucket fills: an epoch's worth of batches misses (and so repeats from the next epoch)
    # at most the examples waiting in partly filled buckets, fewer than a batch per bucket.
    seen = np.concatenate([b["example_index"].numpy() for b in batches[: n // batch]])
    assert n - len(set(seen)) <= len(bucket_sizes(SEQ, BUCKETS)) * (batch - 1)
    # Over three epochs every example has been seen, about equally often.
    counts = np.bincount(np.concatenate([b["example_index"].numpy() for b in batches]), minlength=n)
    assert counts.min() >= 2 and counts.max() <= 4
    # Buckets interleave (batch lengths are not sorted or blocked) ...
    lengths = [s[1] for s in shapes]
    changes = sum(a != b for a, b in zip(lengths, lengths[1:]))
    assert changes >= len(lengths) // 3, lengths
    # ... and each epoch comes in a new order.
    first, second = (
        np.concatenate([b["example_index"].numpy() for b in batches[i : i + 4]]) for i in (0, 12)
    )
    assert not np.array_equal(np.sort(first), np.sort(second))


def _trainer(tmp_path, name, batches, micro_batch, accum, steps):
    """A Trainer (tiny classifier, no dropout) fed `batches` (a list of dicts, repeated)."""
    import tensorflow as tf

    from albert_tf.training import ClassificationTask, Trainer, TrainerConfig

    def fn(ctx):
        ds = tf.data.Dataset.from_tensors(batches[0])
        for b in batches[1:]:
            ds = ds.concatenate(tf.data.Dataset.from_tensors(b))
        return ds.repeat()

    config = TrainerConfig(
        output_dir=str(tmp_path / name),
        num_train_steps=steps,
        learning_rate=1e-2,
        optimizer="adamw",
        grad_accum_steps=accum,
        steps_per_loop=steps,
    )
    albert = tiny_config(
        max_position_embeddings=SEQ, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
    )
    task = ClassificationTask(albert, num_labels=2, dropout=0.0)
    return Trainer(task, config, tf.distribute.get_strategy(), fn, log=lambda *_: None)


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
def test_accumulated_bucketed_micro_batches_equal_the_padded_large_batch(tmp_path, records):
    """Each step: two micro-batches of 4, each padded to its own bucket, against the same
    8 examples in one batch padded to max_seq_length: the same losses and weights."""
    from data_pipeline.classification.features import classifier_dataset

    path, _ = records
    steps = 4
    ds = classifier_dataset(path, 4, SEQ, is_training=True, seed=2, length_buckets=BUCKETS)
    micro = [{k: v.numpy() for k, v in b.items()} for _, b in zip(range(2 * steps), ds)]
    pairs = [(micro[i], micro[i + 1]) for i in range(0, len(micro), 2)]
    assert any(a["input_ids"].shape[1] != b["input_ids"].shape[1] for a, b in pairs)

    def padded(b):
        pad = SEQ - b["input_ids"].shape[1]
        return {k: (np.pad(v, [(0, 0), (0, pad)]) if k in FEATURES else v) for k, v in b.items()}

    large = [{k: np.concatenate([padded(a)[k], padded(b)[k]]) for k in a} for a, b in pairs]
    accumulated = _trainer(tmp_path, "acc", micro, 4, accum=2, steps=steps)
    acc_result = accumulated.train()["train"]
    whole = _trainer(tmp_path, "whole", large, 8, accum=1, steps=steps)
    whole_result = whole.train()["train"]
    assert acc_result["loss"] == pytest.approx(whole_result["loss"], rel=1e-5)
    # Adam divides each gradient element by its own RMS, so float32 summation order (two
    # micro-batches against one batch, bucketed against padded) changes a near-zero
    # element's update by a fraction of its own size: a few 1e-6 after 4 steps at lr 1e-2 on
    # an AVX-512 CPU, up to 5.8e-5 (7 of 1,024 elements of one kernel) on an AVX2-only AMD
    # EPYC under a loaded test run. A wrong accumulation (a lost or double-counted
    # micro-batch, a mean over the wrong count) moves every weight by a step's size,
    # ~lr = 1e-2: the bound is lr / 100, a hundred times below that.
    for a, b in zip(accumulated.model.trainable_variables, whole.model.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4, err_msg=a.path)
    # The weights moved (lr 1e-2): the comparison is not between two untouched models.
    fresh = _trainer(tmp_path, "fresh", large, 8, accum=1, steps=steps)
    moved = max(
        float(np.abs(a.numpy() - b.numpy()).max())
        for a, b in zip(fresh.model.trainable_variables, whole.model.trainable_variables)
    )
    assert moved > 1e-3
    # One traced loop for all the bucket shapes (the step is shape-general).
    assert accumulated._train_loop.experimental_get_tracing_count() == 1


def test_static_shapes_where_they_must_be(records):
    """--pad_to_max_seq_length and --strategy tpu: every batch [B, max_seq_length]."""
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES
    from albert_tf.training.finetuning_settings import length_buckets
    from data_pipeline.classification.features import classifier_dataset

    s = command(FAMILIES["classifier"]).build(
        task_name="csv", output_dir="/nonexistent", length_buckets="16,32"
    )
    assert length_buckets(s) == (16, 32)
    assert length_buckets(s.replace(strategy="tpu")) is None
    assert length_buckets(s.replace(pad_to_max_seq_length=True)) is None
    path, _ = records
    ds = classifier_dataset(path, 8, SEQ, is_training=True, seed=1, length_buckets=None)
    assert ds.element_spec["input_ids"].shape.as_list() == [8, SEQ]


def test_resuming_with_other_batches_is_one_line_before_any_write(tmp_path):
    """A run's checkpoint holds its data position, which only its own pipeline restores:
    resuming length-grouped checkpoints with padded batches (or other buckets) is refused
    in one line naming both, and run_config.json is left as it was."""
    import json

    from albert_tf.checkpoints.run_record import RUN_RECORD_FILE as RUN_CONFIG
    from albert_tf.training.resume_checks import check_same_batches

    grouped, padded = {"length_buckets": [16, 32]}, {"length_buckets": None}
    record = tmp_path / RUN_CONFIG
    record.write_text(json.dumps({"input_pipeline": grouped}))
    check_same_batches(str(tmp_path), padded)  # no checkpoint yet: nothing to resume
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "ckpt-5.index").write_bytes(b"")
    check_same_batches(str(tmp_path), grouped)
    for other in (padded, {"length_buckets": [16, 48]}):
        with pytest.raises(ValueError) as e:
            check_same_batches(str(tmp_path), other)
        line = str(e.value)
        assert "\n" not in line and "length_buckets=[16, 32]" in line
        assert f"now length_buckets={other['length_buckets']}" in line
    assert json.loads(record.read_text()) == {"input_pipeline": grouped}
