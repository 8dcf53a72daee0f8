"""data_pipeline.pretraining.meta_data: meta_data.json is the source of truth of how to read
pretraining records; a setting given as well must agree (one line naming the file), and
records without meta_data.json describe themselves by their first record."""

import json
import os

import numpy as np
import pytest

from data_pipeline.pretraining.meta_data import find_corrupt, pretraining_data
from data_pipeline.records import AtomicRecordWriter, encode_examples, feature_lengths, read_records


def _shard(path, seq, preds, dynamic=False, n=2):
    lengths = feature_lengths(seq, preds, dynamic)
    features = {
        name: (
            np.ones((n, length), np.float32)
            if name == "masked_lm_weights"
            else np.ones((n, length), np.int64)
        )
        for name, length in lengths.items()
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    writer = AtomicRecordWriter(str(path))
    writer.write_all(encode_examples(features))
    writer.commit()
    return str(path)


def _meta(directory, seq, preds, dynamic=False, **extra):
    meta = {
        "max_seq_length": seq,
        "max_predictions_per_seq": preds,
        "dynamic_masking": dynamic,
        "sentence_order": "sop",
        "instances": 2,
        "spm_sha256": "ab" * 32,
        "settings": {"do_lower_case": True, "masked_lm_prob": 0.2, "ngram": 2, "random_seed": 1},
        **extra,
    }
    (directory / "meta_data.json").write_text(json.dumps(meta))


def test_settings_come_from_meta_data(tmp_path):
    files = [_shard(tmp_path / "d" / f"s{i}.tfrecord", 16, 4) for i in range(2)]
    _meta(tmp_path / "d", 16, 4, sentence_order="none")
    data = pretraining_data(files)
    assert (data.max_seq_length, data.max_predictions_per_seq) == (16, 4)
    assert data.dynamic_masking is False and data.do_lower_case is True
    assert data.sentence_order == "none" and data.sop_weight == 0.0
    assert data.masking == {"masked_lm_prob": 0.2, "ngram": 2}
    assert data.meta_file == str(tmp_path / "d" / "meta_data.json")
    assert data.summary == {
        "instances": 2,
        "sentence_order": "none",
        "dynamic_masking": False,
        "spm_sha256": "ab" * 32,
    }
    # the same values given again are fine
    assert (
        pretraining_data(
            files,
            max_seq_length=16,
            max_predictions_per_seq=4,
            dynamic_masking=False,
            do_lower_case=True,
        )
        == data
    )


def test_a_contradicting_setting_is_one_line_naming_the_file(tmp_path):
    files = [_shard(tmp_path / "d" / "s.tfrecord", 16, 4)]
    _meta(tmp_path / "d", 16, 4)
    # the records say otherwise: the record file is named
    with pytest.raises(
        ValueError,
        match=r"s\.tfrecord: input_ids has length 16, but "
        r"--max_seq_length=32$",
    ):
        pretraining_data(files, max_seq_length=32)
    with pytest.raises(
        ValueError,
        match=r"s\.tfrecord: masked_lm_positions has length 4, "
        r"but --max_predictions_per_seq=5$",
    ):
        pretraining_data(files, max_predictions_per_seq=5)
    # only meta_data.json says otherwise: it is named
    meta = str(tmp_path / "d" / "meta_data.json")
    with pytest.raises(ValueError) as e:
        pretraining_data(files, do_lower_case=False)
    assert str(e.value) == f"{meta}: do_lower_case=True, but --nodo_lower_case"
    # two directories that disagree
    other = _shard(tmp_path / "e" / "s.tfrecord", 32, 4)
    _meta(tmp_path / "e", 32, 4)
    with pytest.raises(
        ValueError,
        match=r"s\.tfrecord: input_ids has length 32, but "
        r".*d/meta_data\.json says max_seq_length=16",
    ):
        pretraining_data(files + [other])


def test_dynamic_masking_from_meta_data(tmp_path):
    files = [_shard(tmp_path / "d" / "s.tfrecord", 16, 4, dynamic=True)]
    _meta(tmp_path / "d", 16, 4, dynamic=True)
    data = pretraining_data(files)
    assert data.dynamic_masking and data.max_predictions_per_seq == 4
    with pytest.raises(ValueError, match="dynamic_masking=True, but --nodynamic_masking"):
        pretraining_data(files, dynamic_masking=False)


def test_records_without_meta_data_describe_themselves(tmp_path):
    files = [_shard(tmp_path / "official" / "s.tfrecord", 24, 3)]
    data = pretraining_data(files)
    assert (data.max_seq_length, data.max_predictions_per_seq) == (24, 3)
    assert data.dynamic_masking is False and data.meta_file is None and data.summary is None
    assert data.sentence_order == "sop" and data.sop_weight == 1.0
    assert pretraining_data(files, max_seq_length=24).max_seq_length == 24
    dynamic = [_shard(tmp_path / "dyn" / "s.tfrecord", 24, 3, dynamic=True)]
    with pytest.raises(ValueError, match="records have no 'masked_lm_positions' feature"):
        pretraining_data(dynamic)
    assert pretraining_data(dynamic, dynamic_masking=True).max_predictions_per_seq == 20
    empty = tmp_path / "empty" / "s.tfrecord"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="no record in .*to read max_seq_length from"):
        pretraining_data([str(empty)])


def test_vocabulary_and_corrupt_records(tmp_path):
    files = [_shard(tmp_path / "d" / "s.tfrecord", 16, 4)]
    _meta(tmp_path / "d", 16, 4)
    data = pretraining_data(files)

    class Tokenizer:
        checksum = "cd" * 32

    with pytest.raises(
        ValueError,
        match=r"meta_data\.json: the records were written with a "
        r"SentencePiece model of sha256 abababab",
    ):
        data.check_vocabulary(Tokenizer())
    Tokenizer.checksum = "ab" * 32
    data.check_vocabulary(Tokenizer())
    assert find_corrupt(files) is None
    raw = bytearray(open(files[0], "rb").read())
    raw[-6] ^= 0xFF
    open(files[0], "wb").write(bytes(raw))
    assert find_corrupt(files) == f"{files[0]}: record 1: corrupt or truncated data"


def test_truncated_records_are_named_not_a_crash(tmp_path):
    """A shard cut short anywhere (a copy interrupted, a full disk) is one line naming the
    file, the record and its byte offset: the finder run after TensorFlow's DataLossError
    used to crash on it (struct.error)."""
    path = _shard(tmp_path / "d" / "s.tfrecord", 16, 4, n=3)
    whole = open(path, "rb").read()
    sizes = [16 + len(r) for r in read_records(path)]
    assert sum(sizes) == len(whole) and len(sizes) == 3
    second, third = sizes[0], sizes[0] + sizes[1]
    cases = {
        second + 5: f"record 1 is truncated (at byte {second}: 5 of its 12 header bytes)",
        third + 20: f"record 2 is truncated (at byte {third}: 8 of its {sizes[2] - 16} data",
        len(whole) - 2: f"record 2 is truncated (at byte {third}: {sizes[2] - 16} of its",
    }
    for cut, expected in cases.items():
        with open(path, "wb") as f:
            f.write(whole[:cut])
        where = find_corrupt([path])
        assert where.startswith(f"{path}: {expected}") and "\n" not in where, where
        with pytest.raises(ValueError, match="is truncated"):
            list(read_records(path))
    with open(path, "wb") as f:
        f.write(whole[:third])  # cut between records: whole records, nothing corrupt
    assert find_corrupt([path]) is None and len(list(read_records(path))) == 2


def test_records_without_meta_data_have_their_ids_checked_against_the_model(tmp_path):
    """No meta_data.json beside the records: the largest id of their first records must be
    below the model's vocab_size (one line naming the file and the id, before anything is
    written; was an InvalidArgumentError traceback from the embedding lookup mid-run). With
    one, its vocab_size is checked instead (a large id then is not read for)."""
    from albert_tf.training.run_setup import check_records_vocabulary
    from tests.support.tiny import tiny_config

    ids = np.ones((2, 16), np.int64)
    ids[1, 3] = 29_123  # a 30k vocabulary's piece, in the second record
    masked = np.full((2, 4), 7, np.int64)
    path = tmp_path / "d" / "s0.tfrecord"
    os.makedirs(path.parent)
    writer = AtomicRecordWriter(str(path))
    writer.write_all(encode_examples({"input_ids": ids, "masked_lm_ids": masked}))
    writer.commit()
    files = [str(path), _shard(tmp_path / "d" / "s1.tfrecord", 16, 4)]
    check_records_vocabulary(tiny_config(vocab_size=30_000), files, "c.json")
    with pytest.raises(ValueError) as refused:
        check_records_vocabulary(tiny_config(vocab_size=1_000), files, "--albert_config_file=c")
    message = str(refused.value)
    assert message.startswith(f"{path}: its records hold token id 29,123, but vocab_size=1,000")
    assert "--albert_config_file=c" in message and "meta_data.json" in message
    assert "\n" not in message
    _meta(tmp_path / "d", 16, 4, vocab_size=1_000)  # the writer's word is taken
    check_records_vocabulary(tiny_config(vocab_size=1_000), files, "c.json")
