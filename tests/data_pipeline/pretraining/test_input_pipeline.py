"""The tf.data reader: records → batches, sharding, official-layout records, dynamic masks."""

import os

import numpy as np
import pytest

from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.pretraining.local_writer import create_pretraining_data
from data_pipeline.records import read_records
from tests.support.harness import SHARED_DATA

SEQ, PREDS = 64, 10


@pytest.fixture(scope="module")
def corpus_records(tmp_path_factory):
    """Static and dynamic-masking shards of a slice of WikiText (module-scoped: ~2 s)."""
    root = str(SHARED_DATA)
    if not os.path.isdir(root):
        pytest.skip(f"real data not available: {root} is absent")
    text = os.path.join(root, "corpus", "wikitext-2", "valid.txt")
    spm = os.path.join(root, "spm", "de-30k-clean.model")
    out = {}
    for name, dynamic in (("static", False), ("dynamic", True)):
        d = str(tmp_path_factory.mktemp(name))
        create_pretraining_data(
            DataConfig.from_flags(
                input_file=text,
                output_dir=d,
                spm_model_file=spm,
                max_seq_length=SEQ,
                max_predictions_per_seq=PREDS,
                dupe_factor=1,
                split_sentences=True,
                block_size=1 << 18,
                num_output_shards=4,
                dynamic_masking=dynamic,
            ),
            progress_every=1e9,
        )
        out[name] = d
    out["spm"] = spm
    return out


def _all_records(directory):
    import tensorflow as tf

    rows = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".tfrecord"):
            rows += [
                tf.train.Example.FromString(r) for r in read_records(os.path.join(directory, name))
            ]
    return rows


def _ids(example, key="input_ids"):
    return tuple(example.features.feature[key].int64_list.value)


def test_static_batches_match_records(corpus_records):
    from data_pipeline.pretraining.input_pipeline import pretraining_dataset

    ds = pretraining_dataset(
        os.path.join(corpus_records["static"], "*.tfrecord"), 16, SEQ, PREDS, is_training=False
    )
    names = (
        "input_ids",
        "segment_ids",
        "input_mask",
        "masked_lm_positions",
        "masked_lm_ids",
        "next_sentence_labels",
    )
    records = {tuple(_ids(e, n) for n in names) for e in _all_records(corpus_records["static"])}
    total = 0
    for batch in ds:
        assert batch["input_ids"].shape == (16, SEQ)
        assert batch["masked_lm_weights"].shape == (16, PREDS)
        assert batch["input_ids"].dtype.name == "int32"
        assert batch["masked_lm_weights"].dtype.name == "float32"
        assert batch["next_sentence_labels"].shape == (16, 1)
        for r in range(16):
            assert tuple(tuple(int(x) for x in batch[n][r].numpy()) for n in names) in records
            assert np.all(
                batch["masked_lm_weights"][r].numpy()
                == (np.arange(PREDS) < np.count_nonzero(batch["masked_lm_positions"][r].numpy()))
            )
        total += 16
    count = len(_all_records(corpus_records["static"]))
    assert count - 16 < total <= count  # drop_remainder: one partial batch


def test_input_context_shards_are_disjoint_and_complete(corpus_records):
    import tensorflow as tf

    from data_pipeline.pretraining.input_pipeline import pretraining_dataset

    pattern = os.path.join(corpus_records["static"], "*.tfrecord")
    import collections

    names = ("input_ids", "segment_ids", "masked_lm_positions", "masked_lm_ids")
    seen = collections.Counter()
    sizes = []
    for pipeline in range(2):
        ctx = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=pipeline, num_replicas_in_sync=2
        )
        ds = pretraining_dataset(pattern, 1, SEQ, PREDS, is_training=False, input_context=ctx)
        rows = [tuple(tuple(int(x) for x in b[n][0].numpy()) for n in names) for b in ds]
        seen.update(rows)
        sizes.append(len(rows))
    expected = collections.Counter(
        tuple(_ids(e, n) for n in names) for e in _all_records(corpus_records["static"])
    )
    assert seen == expected  # every record read exactly once over the pipelines
    assert min(sizes) > 0.3 * sum(sizes)


def test_training_order_is_seeded_and_repeats(corpus_records):
    from data_pipeline.pretraining.input_pipeline import pretraining_dataset

    pattern = os.path.join(corpus_records["static"], "*.tfrecord")

    def first(seed, n=5):
        it = iter(pretraining_dataset(pattern, 8, SEQ, PREDS, seed=seed, shuffle_buffer=100))
        return [next(it)["input_ids"].numpy() for _ in range(n)]

    a, b, c = first(1), first(1), first(2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_official_layout_record_feeds_reader(tmp_path):
    """A record as the official tool wrote it (tf.io.TFRecordWriter, no token_boundary)."""
    import tensorflow as tf

    from data_pipeline.pretraining.input_pipeline import pretraining_dataset

    rng = np.random.default_rng(0)
    path = str(tmp_path / "official.tfrecord")
    values = []
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(4):
            v = {
                "input_ids": rng.integers(5, 1000, SEQ),
                "input_mask": np.ones(SEQ, int),
                "segment_ids": np.r_[np.zeros(SEQ // 2, int), np.ones(SEQ // 2, int)],
                "masked_lm_positions": np.sort(rng.choice(SEQ, PREDS, replace=False)),
                "masked_lm_ids": rng.integers(5, 1000, PREDS),
                "masked_lm_weights": np.ones(PREDS, np.float32),
                "next_sentence_labels": np.array([1]),
            }
            feature = {
                k: (
                    tf.train.Feature(float_list=tf.train.FloatList(value=x))
                    if k == "masked_lm_weights"
                    else tf.train.Feature(int64_list=tf.train.Int64List(value=x))
                )
                for k, x in v.items()
            }
            w.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
            values.append(v)
    batch = next(iter(pretraining_dataset(path, 4, SEQ, PREDS, is_training=False)))
    for k in values[0]:
        np.testing.assert_allclose(batch[k].numpy(), np.stack([v[k] for v in values]))


def test_dynamic_masks_are_new_each_epoch_reproducible_and_faithful(corpus_records):
    from data_pipeline.pretraining.input_pipeline import pretraining_dataset
    from data_pipeline.pretraining.masking import NgramMasker
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(corpus_records["spm"])
    pattern = os.path.join(corpus_records["dynamic"], "*.tfrecord")
    originals = {}
    for e in _all_records(corpus_records["dynamic"]):
        assert "masked_lm_ids" not in e.features.feature  # no masks written
        originals.setdefault(_ids(e)[: SEQ // 2], []).append(np.array(_ids(e)))

    def batches(seed, n):
        masker = NgramMasker.from_tokenizer(tok, max_predictions_per_seq=PREDS)
        ds = pretraining_dataset(
            pattern,
            32,
            SEQ,
            PREDS,
            seed=seed,
            dynamic_masker=masker,
            shuffle_buffer=1,
            cycle_length=1,
            keep_token_boundary=True,
        )
        it = iter(ds)
        return [{k: v.numpy() for k, v in next(it).items()} for _ in range(n)]

    epoch = -(-len(_all_records(corpus_records["dynamic"])) // 32)
    a = batches(7, 2 * epoch + 1)
    b = batches(7, 3)
    for x, y in zip(a, b):  # reproducible
        assert all(np.array_equal(x[k], y[k]) for k in x), [
            k for k in x if not np.array_equal(x[k], y[k])
        ]
    masked = total = 0
    for batch in a:
        ids, pos, lab, w = (
            batch["input_ids"],
            batch["masked_lm_positions"],
            batch["masked_lm_ids"],
            batch["masked_lm_weights"],
        )
        for r in range(len(ids)):
            k = int(w[r].sum())  # 0 happens: no word fits a budget of round(0.15 n)
            p = pos[r, :k]
            assert np.all(np.diff(p) > 0) and np.all(w[r, k:] == 0)
            restored = ids[r].copy()
            restored[p] = lab[r, :k]
            # The label at every masked position is the original token of the record.
            assert any(
                np.array_equal(restored, o) for o in originals.get(tuple(restored[: SEQ // 2]), [])
            ), "labels do not restore the record"
            assert not np.isin(lab[r, :k], [tok.cls_id, tok.sep_id, tok.pad_id]).any()
            masked += k
            total += int(batch["input_mask"][r].sum())
    assert 0.12 < masked / total < 0.16
    # The same record in two epochs gets different masks.
    restored_first = {}
    for batch in a[: epoch - 1]:
        for r in range(32):
            x = batch["input_ids"][r].copy()
            k = int(batch["masked_lm_weights"][r].sum())
            x[batch["masked_lm_positions"][r, :k]] = batch["masked_lm_ids"][r, :k]
            restored_first[tuple(x)] = tuple(batch["masked_lm_positions"][r])
    same = different = 0
    for batch in a[epoch:]:
        for r in range(32):
            x = batch["input_ids"][r].copy()
            k = int(batch["masked_lm_weights"][r].sum())
            x[batch["masked_lm_positions"][r, :k]] = batch["masked_lm_ids"][r, :k]
            if tuple(x) in restored_first:
                if restored_first[tuple(x)] == tuple(batch["masked_lm_positions"][r]):
                    same += 1
                else:
                    different += 1
    assert different > 20 and same <= different // 10


def test_dynamic_masking_iterator_checkpoints_and_resumes_in_place(corpus_records, tmp_path):
    """The trainer checkpoints the input iterator; with dynamic masking (Python state in
    the pipeline) it must still save, and resume at the same record."""
    import tensorflow as tf

    from data_pipeline.pretraining.input_pipeline import pretraining_dataset
    from data_pipeline.pretraining.masking import NgramMasker
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(corpus_records["spm"])
    pattern = os.path.join(corpus_records["dynamic"], "*.tfrecord")

    def make():
        return iter(
            pretraining_dataset(
                pattern,
                8,
                SEQ,
                PREDS,
                seed=3,
                keep_token_boundary=True,
                dynamic_masker=NgramMasker.from_tokenizer(tok, max_predictions_per_seq=PREDS),
            )
        )

    it = make()
    for _ in range(2):
        next(it)
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ckpt"))
    expected = next(it)
    resumed = make()
    tf.train.Checkpoint(iterator=resumed).restore(path).assert_consumed()
    got = next(resumed)
    np.testing.assert_array_equal(got["token_boundary"], expected["token_boundary"])
    np.testing.assert_array_equal(got["segment_ids"], expected["segment_ids"])


@pytest.mark.parametrize("kind", ["static", "dynamic"])
def test_length_buckets_cut_instances_to_their_bucket(corpus_records, kind):
    """`length_buckets` (run_pretraining --length_buckets): full batches of a bucket's
    length holding the instances' tokens and masks unchanged (masked positions inside the
    cut), against the records' token count."""
    from data_pipeline.pretraining.input_pipeline import pretraining_dataset
    from data_pipeline.pretraining.masking import NgramMasker
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    files = os.path.join(corpus_records[kind], "*.tfrecord")
    tok = AlbertTokenizer(corpus_records["spm"])
    masker = None
    if kind == "dynamic":
        masker = NgramMasker.from_tokenizer(tok, max_predictions_per_seq=PREDS)
    ds = pretraining_dataset(
        files,
        8,
        SEQ,
        PREDS,
        seed=1,
        dynamic_masker=masker,
        length_buckets=(16, 32, 48),
        special_ids=(tok.cls_id, tok.sep_id),
    )
    records = {_ids(e)[: sum(_ids(e, "input_mask"))] for e in _all_records(corpus_records[kind])}
    lengths = set()
    for batch in (b for _, b in zip(range(40), ds)):
        ids, mask = batch["input_ids"].numpy(), batch["input_mask"].numpy()
        length = ids.shape[1]
        lengths.add(length)
        assert ids.shape[0] == 8 and length in (16, 32, 48, SEQ)
        assert batch["masked_lm_positions"].shape == (8, PREDS)
        longest = mask.sum(axis=1).max()
        assert longest <= length and (length == 16 or longest > length - 16)
        for row, m in zip(ids, mask):
            if kind == "static":
                assert tuple(int(x) for x in row[: m.sum()]) in records
        positions = batch["masked_lm_positions"].numpy()
        weights = batch["masked_lm_weights"].numpy()
        lengths_of_rows = np.repeat(mask.sum(axis=1, keepdims=True), PREDS, axis=1)
        assert (positions[weights > 0] < lengths_of_rows[weights > 0]).all()
    assert len(lengths) >= 2, lengths
