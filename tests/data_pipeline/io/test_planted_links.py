"""Nothing in data_pipeline.io writes through a symbolic link planted at a name it uses: the
lock file, atomic writes' temporary files and targets, TFRecord shards' temporary files,
appends, local copies. Each case plants a link to a victim file outside the directory and
checks the victim byte for byte afterwards (the real-process cases, the data tool and
run_pretraining, are in test_output_lock.py)."""

import os

import pytest

from data_pipeline.io import atomic, filesystem
from data_pipeline.io.locks import output_lock, read_lock_holder
from data_pipeline.records import AtomicRecordWriter, read_records

VICTIM_BYTES = b"precious content that must not change\n"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_bytes(VICTIM_BYTES)
    return path


@pytest.fixture
def out(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    return d


def _unchanged(victim):
    assert victim.read_bytes() == VICTIM_BYTES
    assert sorted(os.listdir(victim.parent)) == ["victim.txt"]


def test_a_planted_lock_link_is_refused_and_left(victim, out):
    (out / ".lock").symlink_to(victim)
    with pytest.raises(OSError) as e:
        output_lock(str(out), "test")
    message = str(e.value)
    assert "\n" not in message and f"{out}/.lock is a symbolic link" in message
    assert "refusing to lock through it" in message
    _unchanged(victim)
    assert os.path.islink(out / ".lock")  # left as it was: not ours to remove
    assert read_lock_holder(str(out)) is None  # nor read through


def test_a_planted_lock_fifo_is_refused_without_blocking(out):
    os.mkfifo(out / ".lock")
    with pytest.raises(OSError, match="is not a regular file: refusing to lock"):
        output_lock(str(out), "test")


def test_a_dangling_lock_link_is_refused_and_nothing_created(tmp_path, out):
    target = tmp_path / "elsewhere" / "created-by-the-lock"
    target.parent.mkdir()
    (out / ".lock").symlink_to(target)
    with pytest.raises(OSError, match="is a symbolic link"):
        output_lock(str(out), "test")
    assert not target.exists()


def test_atomic_write_through_a_planted_temporary_link(victim, out):
    target = out / "meta.json"
    (out / f"meta.json.tmp{os.getpid()}").symlink_to(victim)
    atomic.write_json(str(target), {"a": 1})
    _unchanged(victim)
    assert target.read_text() == '{\n "a": 1\n}\n' and not target.is_symlink()
    assert sorted(os.listdir(out)) == ["meta.json"]  # the planted link was replaced


def test_atomic_write_over_a_target_link_replaces_the_link(victim, out):
    target = out / "config.json"
    target.symlink_to(victim)
    atomic.write_text(str(target), "new")
    _unchanged(victim)
    assert not target.is_symlink() and target.read_text() == "new"


def test_append_through_a_link_is_refused(victim, out):
    log = out / "metrics.jsonl"
    log.symlink_to(victim)
    with pytest.raises(OSError) as e:
        atomic.append_text(str(log), "{}\n")
    assert "symbolic link" in str(e.value) and str(log) in str(e.value)
    _unchanged(victim)
    atomic.append_text(str(out / "real.jsonl"), "1\n")
    atomic.append_text(str(out / "real.jsonl"), "2\n")
    assert (out / "real.jsonl").read_text() == "1\n2\n"


def test_record_writer_never_writes_through_its_temporary_name(victim, out):
    shard = out / "pretrain-00000-of-00001.tfrecord"
    (out / (shard.name + ".tmp")).symlink_to(victim)
    writer = AtomicRecordWriter(str(shard))
    writer.write_all([b"one", b"two"])
    writer.commit()
    _unchanged(victim)
    assert list(read_records(str(shard))) == [b"one", b"two"]
    # a killed run's leftover temporary file (a regular file) is simply replaced
    (out / (shard.name + ".tmp")).write_bytes(b"half a record")
    writer = AtomicRecordWriter(str(shard))
    writer.abort()
    assert sorted(os.listdir(out)) == [shard.name]


def test_local_copy_over_a_target_link_replaces_the_link(victim, out, tmp_path):
    source = tmp_path / "source.bin"
    source.write_bytes(b"copied")
    target = out / "spm.model"
    target.symlink_to(victim)
    filesystem.copy(str(source), str(target))
    _unchanged(victim)
    assert not target.is_symlink() and target.read_bytes() == b"copied"
    assert sorted(os.listdir(out)) == ["spm.model"]


def test_open_new_refuses_a_directory_in_the_way(out):
    (out / "x.tmp").mkdir()
    with pytest.raises(OSError, match="x.tmp"):
        filesystem.open_new(str(out / "x.tmp"))


def test_a_failed_write_names_the_file(out, monkeypatch):
    """A full disk (ENOSPC from /dev/full) while writing: an OSError naming the file being
    written, and neither it nor its temporary file left behind."""
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    real_open_new = filesystem.open_new

    def full(path, mode="wb", encoding="utf-8"):
        if ".tmp" in os.path.basename(path):
            return open("/dev/full", mode, **({} if "b" in mode else {"encoding": encoding}))
        return real_open_new(path, mode, encoding)

    monkeypatch.setattr(filesystem, "open_new", full)
    target = out / "meta_data.json"
    with pytest.raises(OSError) as e:
        atomic.write_text(str(target), "x" * 100_000)
    assert e.value.filename == str(target) and "No space left on device" in str(e.value)
    shard = out / "pretrain-00000-of-00001.tfrecord"
    with pytest.raises(OSError) as e:
        writer = AtomicRecordWriter(str(shard))
        try:
            writer.write_all([b"r" * 100_000])
            writer.commit()
        except BaseException:
            writer.abort()
            raise
    assert e.value.filename == str(shard) and "No space left on device" in str(e.value)
    assert os.listdir(out) == []
