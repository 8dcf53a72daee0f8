"""Fine-tuning features: packing, official truncation, the TFRecord cache, the reader."""

import numpy as np

from data_pipeline.classification.features import (
    classifier_dataset,
    convert_examples,
    convert_multiple_choice,
    truncate_pair,
)
from data_pipeline.length_buckets import LENGTH_BUCKETS, bucket_sizes
from data_pipeline.records import cached_features, fingerprint
from tests.support.tiny import tiny_config


def test_truncate_pair_is_the_official_rule():
    a, b = list(range(10)), list(range(4))
    truncate_pair(a, b, 8)
    assert (a, b) == (list(range(4)), list(range(4)))  # longer side loses its end first
    a, b = [1, 2, 3], [4, 5, 6]
    truncate_pair(a, b, 5)
    assert (a, b) == ([1, 2, 3], [4, 5]) or (a, b) == ([1, 2], [4, 5, 6])
    assert len(a) + len(b) == 5 and b == [4, 5]  # ties: B loses first


def test_pairs_are_packed_as_cls_a_sep_b_sep(tok, shared_data):
    from data_pipeline.classification.benchmark_files import label_names, read_task

    examples = read_task(str(shared_data / "glue" / "MRPC"), "mrpc", "dev")
    stats = {}
    f = convert_examples(examples, tok, 64, label_names("mrpc"), stats)
    assert f["input_ids"].shape == (408, 64) and f["label_ids"].dtype == np.int64
    full = [len(tok.encode(e.text_a)) + len(tok.encode(e.text_b)) + 3 for e in examples]
    assert stats["truncated"] == sum(n > 64 for n in full) > 0
    for i in (0, 1, 200):
        n = int(f["input_mask"][i].sum())
        ids, seg = f["input_ids"][i, :n], f["segment_ids"][i, :n]
        assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id
        first_sep = int(np.flatnonzero(ids == tok.sep_id)[0])
        assert np.all(seg[: first_sep + 1] == 0) and np.all(seg[first_sep + 1 :] == 1)
        a = tok.encode(examples[i].text_a)
        if n < 64:  # not truncated: A is exactly the tokenizer's ids
            assert list(ids[1:first_sep]) == a
        assert np.all(f["input_ids"][i, n:] == 0)
    assert set(f["label_ids"]) == {0, 1}


def test_cache_is_reused_and_rebuilt_when_settings_change(tok, shared_data, tmp_path):
    from data_pipeline.classification.benchmark_files import read_task, task_file

    data_dir = str(shared_data / "glue" / "STS-B")
    examples = read_task(data_dir, "sts-b", "dev")
    source = task_file(data_dir, "sts-b", "dev")
    calls = []

    def build(seq):
        calls.append(seq)
        return convert_examples(examples, tok, seq, None)

    key = fingerprint(source, tok, max_seq_length=32, labels=None)
    path, count, reused = cached_features(
        str(tmp_path / "dev"), key, lambda: build(32), {"truncated": 7}
    )
    assert (count, reused) == (1500, False)
    info = {}
    _, _, reused = cached_features(str(tmp_path / "dev"), key, lambda: build(32), info)
    assert reused and calls == [32] and info == {"truncated": 7}
    key64 = fingerprint(source, tok, max_seq_length=64, labels=None)
    _, _, reused = cached_features(str(tmp_path / "dev"), key64, lambda: build(64))
    assert not reused and calls == [32, 64]
    batches = list(classifier_dataset(path, 100, 64, regression=True, drop_remainder=False))
    labels = np.concatenate([b["label_ids"].numpy() for b in batches])
    np.testing.assert_allclose(labels, [float(e.label) for e in examples], rtol=1e-6)
    assert batches[0]["input_ids"].shape == (100, 64)
    order = np.concatenate([b["example_index"].numpy() for b in batches])
    assert list(order) == list(range(1500))


def test_multiple_choice_pads_choices_and_fills_blanks(tok, shared_data, tmp_path):
    from data_pipeline.classification.multiple_choice import read_race

    examples = read_race(str(shared_data / "race" / "expmrc-race-dev.json"))
    f = convert_multiple_choice(examples, tok, 512, num_choices=4)
    assert f["input_ids"].shape == (len(examples), 4, 512)
    short = [i for i, e in enumerate(examples) if len(e.options) < 4]
    assert short, "RACE dev has questions with fewer than 4 options"
    for i in short:
        k = len(examples[i].options)
        assert f["input_mask"][i, k:].sum() == 0 and f["input_mask"][i, :k].min(axis=1).max() == 1
    # The second segment is question + option, or the question with its "_" blank filled.
    checked = 0
    for i, e in enumerate(examples):
        n = int(f["input_mask"][i, 0].sum())
        if n == 512:
            continue  # truncated: the passage lost its end, the pair is not whole
        seg = f["segment_ids"][i, 0, :n]
        second = list(f["input_ids"][i, 0, :n][seg == 1][:-1])
        qa = (
            e.question.replace("_", e.options[0])
            if "_" in e.question
            else f"{e.question} {e.options[0]}"
        )
        assert second == tok.encode(qa)
        checked += 1
    assert checked > 0
    assert set(f["label_ids"]) <= {0, 1, 2, 3}
    path, count, _ = cached_features(
        str(tmp_path / "race"), "k", lambda: {k: v[:8] for k, v in f.items()}
    )
    batch = next(iter(classifier_dataset(path, 8, 512, num_choices=4)))
    np.testing.assert_array_equal(batch["input_ids"].numpy(), f["input_ids"][:8])


def test_length_aware_evaluation_gives_the_padded_predictions_in_order(tok, shared_data, tmp_path):
    """SST-2 dev (872 sentences) through a tiny classifier: batches grouped by length and
    padded to their bucket give the padded path's logits (within float tolerance) in file
    order, compute far fewer tokens, use only bucket lengths, and trace a bounded number
    of forward functions."""

    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.training.prediction import _forward, predict_logits
    from data_pipeline.classification.benchmark_files import label_names, read_task

    examples = read_task(str(shared_data / "glue" / "SST-2"), "sst-2", "dev")
    features = convert_examples(examples, tok, 128, label_names("sst-2"), {})
    path, count, _ = cached_features(str(tmp_path / "sst2"), "k", lambda: features)
    config = tiny_config(
        vocab_size=tok.vocab_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    model = AlbertClassifier(config, 2)
    model.build()

    def run(length_aware):
        buckets = LENGTH_BUCKETS if length_aware else None
        ds = classifier_dataset(path, 32, 128, drop_remainder=False, length_buckets=buckets)
        return ds, predict_logits(model, ds, carry=("label_ids",), order_by="example_index")

    padded_ds, padded = run(False)
    bucketed_ds, bucketed = run(True)
    np.testing.assert_allclose(bucketed["logits"], padded["logits"], atol=2e-5)
    np.testing.assert_array_equal(bucketed["label_ids"], features["label_ids"])
    shapes = [tuple(b["input_ids"].shape) for b in bucketed_ds]
    assert sum(s[0] for s in shapes) == count == 872
    assert {s[1] for s in shapes} <= set(bucket_sizes(128)) and len({s[1] for s in shapes}) >= 4
    computed = sum(s[0] * s[1] for s in shapes)
    present = int(features["input_mask"].sum())
    assert computed < 1.25 * present and computed >= present
    # One trace with open dimensions serves every batch shape of both runs.
    assert _forward(model, packed=True).experimental_get_tracing_count() == 1  # the host's
    # file order within the first bucketed batch is not file order: the reordering matters
    first = next(iter(bucketed_ds))["example_index"].numpy()
    assert not np.array_equal(first, np.arange(len(first)))


def test_length_aware_multiple_choice_gives_the_padded_logits(tok, shared_data, tmp_path):
    """RACE dev questions (4 choices, max_seq_length 512) through a tiny multiple-choice
    model: batches cut to the bucket of their longest choice give the padded logits, with
    the padding choices of 3-option questions still at -1e9."""
    from albert_tf.modeling.models import AlbertMultipleChoice
    from albert_tf.training.prediction import predict_logits
    from data_pipeline.classification.multiple_choice import read_race

    examples = read_race(str(shared_data / "race" / "expmrc-race-dev.json"))
    full = convert_multiple_choice(examples, tok, 512, num_choices=4)
    longest = full["input_mask"].sum(axis=2).max(axis=1)  # [N]: each question's longest choice
    # Most RACE passages fill 512 tokens; keep those that don't, and some that do.
    keep = np.concatenate([np.flatnonzero(longest < 448)[:40], np.flatnonzero(longest == 512)[:8]])
    f = {k: v[keep] for k, v in full.items()}
    examples, longest = [examples[i] for i in keep], longest[keep]
    path, count, _ = cached_features(str(tmp_path / "race"), "k", lambda: f)
    config = tiny_config(
        vocab_size=tok.vocab_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    model = AlbertMultipleChoice(config)
    model.build()

    def run(buckets):
        ds = classifier_dataset(
            path, 8, 512, num_choices=4, drop_remainder=False, length_buckets=buckets
        )
        return ds, predict_logits(model, ds, order_by="example_index")["logits"]

    _, padded = run(None)
    bucketed_ds, bucketed = run(LENGTH_BUCKETS)
    np.testing.assert_allclose(bucketed, padded, atol=2e-5)
    shapes = [tuple(b["input_ids"].shape) for b in bucketed_ds]
    assert {s[1] for s in shapes} == {4} and sum(s[0] for s in shapes) == count
    assert {s[2] for s in shapes} <= set(bucket_sizes(512)) and min(s[2] for s in shapes) < 512
    assert sum(s[0] * s[2] for s in shapes) < longest.sum() + count * 64
    assert (padded < -1e8).sum() == (bucketed < -1e8).sum()


def test_a_cache_with_a_flipped_bit_is_rebuilt_not_read(tmp_path, capsys):
    """R-H6: one flipped bit in a cached feature file was reused (only the length headers
    were checked) and failed later as tf.data's DataLossError traceback."""
    from data_pipeline.records import read_records

    calls = []

    def build():
        calls.append(1)
        return {"input_ids": np.arange(40 * 8, dtype=np.int32).reshape(40, 8)}

    path, count, reused = cached_features(str(tmp_path / "dev"), "k", build)
    assert (count, reused) == (40, False)
    data = bytearray(open(path, "rb").read())
    data[200] ^= 16  # inside a record's data: its length header stays whole
    open(path, "wb").write(bytes(data))
    _, count, reused = cached_features(str(tmp_path / "dev"), "k", build)
    assert (count, reused, len(calls)) == (40, False, 2)
    assert (
        "does not hold the 40 intact records its metadata says: rebuilding"
        in capsys.readouterr().out
    )
    assert len(list(read_records(path))) == 40  # rebuilt whole
    assert cached_features(str(tmp_path / "dev"), "k", build)[2]  # and reused from then on
