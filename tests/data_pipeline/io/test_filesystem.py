"""data_pipeline.io.filesystem: local paths and URLs (TensorFlow's in-memory ram://) behave
the same for what the project does with files — atomic writes, renames over an existing
file, globs, trees, appends — and missing files fail as OSError naming the path."""

import itertools
import os

import pytest

from data_pipeline.io import atomic, filesystem

_ram = itertools.count()


@pytest.fixture(params=["local", "ram"])
def root(request, tmp_path):
    """A fresh directory: a local one, or a ram:// one (per process, so unique names)."""
    if request.param == "local":
        return str(tmp_path)
    path = f"ram://test_filesystem/{os.getpid()}/{next(_ram)}"
    filesystem.makedirs(path)
    return path


def test_is_url():
    assert filesystem.is_url("gs://b/x") and filesystem.is_url("ram://x")
    assert not filesystem.is_url("/tmp/x") and not filesystem.is_url("x/y")


def test_atomic_write_and_read(root):
    path = filesystem.join(root, "a.json")
    atomic.write_json(path, {"x": 1})
    atomic.write_json(path, {"x": 2})  # replaces the existing file
    assert filesystem.read_text(path) == '{\n "x": 2\n}\n'
    assert filesystem.listdir(root) == ["a.json"]  # no temporary file left


def test_atomic_write_failure_keeps_old(root):
    path = filesystem.join(root, "a.txt")
    atomic.write_text(path, "old")
    with pytest.raises(RuntimeError), atomic.atomic_open(path) as f:
        f.write("new")
        raise RuntimeError("interrupted")
    assert filesystem.read_text(path) == "old"
    assert filesystem.listdir(root) == ["a.txt"]


def test_replace_overwrites(root):
    a, b = filesystem.join(root, "a"), filesystem.join(root, "b")
    for path, text in ((a, "A"), (b, "B")):
        with filesystem.open(path, "w") as f:
            f.write(text)
    filesystem.replace(a, b)
    assert not filesystem.exists(a) and filesystem.read_text(b) == "A"


def test_glob_listdir_sizes_and_seek(root):
    filesystem.makedirs(filesystem.join(root, "d"))
    for name in ("d/x-1.txt", "d/x-2.txt", "d/y.txt"):
        with filesystem.open(filesystem.join(root, name), "wb") as f:
            f.write(b"0123456789")
    matches = sorted(filesystem.glob(filesystem.join(root, "d", "x-*.txt")))
    assert [m.rsplit("/", 1)[-1] for m in matches] == ["x-1.txt", "x-2.txt"]
    assert sorted(filesystem.listdir(filesystem.join(root, "d"))) == ["x-1.txt", "x-2.txt", "y.txt"]
    assert filesystem.getsize(matches[0]) == 10
    assert filesystem.isfile(matches[0]) and not filesystem.isdir(matches[0])
    assert filesystem.isdir(filesystem.join(root, "d"))
    with filesystem.open(matches[0], "rb") as f:
        f.seek(3)
        assert f.read(4) == b"3456" and f.tell() == 7
    assert sorted(filesystem.walk_files(root)) == ["d/x-1.txt", "d/x-2.txt", "d/y.txt"]


def test_copy_tree_rmtree_append(root, tmp_path):
    local = tmp_path / "tree"
    (local / "sub").mkdir(parents=True)
    (local / "sub" / "w.bin").write_bytes(b"w")
    (local / "done").write_text("marker")
    target = filesystem.join(root, "copy")
    filesystem.copy_tree(str(local), target, last=("done",))
    assert sorted(filesystem.walk_files(target)) == ["done", "sub/w.bin"]
    assert filesystem.read_bytes(filesystem.join(target, "sub", "w.bin")) == b"w"
    log = filesystem.join(target, "log.jsonl")
    atomic.append_text(log, "1\n")
    atomic.append_text(log, "2\n")
    assert filesystem.read_text(log) == "1\n2\n"
    filesystem.rmtree(target)
    assert not filesystem.exists(filesystem.join(target, "done"))
    filesystem.rmtree(target, ignore_errors=True)  # already gone: no error


def test_missing_file_is_an_os_error(root):
    missing = filesystem.join(root, "missing.txt")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        filesystem.open(missing)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        filesystem.remove(missing)
    with pytest.raises(OSError, match="missing.txt"):
        filesystem.getsize(missing)


def test_staged_directory_publishes_only_complete_trees():
    target = f"ram://test_filesystem/{os.getpid()}/staged"
    with pytest.raises(RuntimeError), filesystem.staged_directory(target) as tmp:
        open(os.path.join(tmp, "half"), "w").close()
        raise RuntimeError("interrupted")
    assert not filesystem.exists(filesystem.join(target, "half"))
    with filesystem.staged_directory(target) as tmp:
        open(os.path.join(tmp, "whole"), "w").close()
    assert filesystem.exists(filesystem.join(target, "whole"))
    assert not os.path.exists(tmp)
    with pytest.raises(ValueError, match="for URLs"), filesystem.staged_directory("/tmp/x"):
        pass


def test_local_copy(tmp_path):
    url = f"ram://test_filesystem/{os.getpid()}/model.bin"
    with filesystem.open(url, "wb") as f:
        f.write(b"bytes")
    with filesystem.local_copy(url, ".bin") as local:
        assert not filesystem.is_url(local) and open(local, "rb").read() == b"bytes"
    assert not os.path.exists(local)
    with filesystem.local_copy(str(tmp_path)) as same:
        assert same == str(tmp_path)


def test_a_failed_write_is_one_line_a_pipeline_runner_can_append_to(tmp_path):
    """atomic.write_failure: a real EFBIG from a write past the file-size limit, as one
    OSError whose first argument is the whole line naming the file, so that a runner
    re-raising it with its step appended (Apache Beam: type(e)(e.args[0] + note)) keeps
    it an OSError naming the file; the errno form cannot be re-raised so."""
    import resource

    path = tmp_path / "shard.tfrecord"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))
    try:
        with pytest.raises(OSError) as raised, open(path, "wb") as f:
            f.write(b"x" * 5000)
            f.flush()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    error = raised.value
    note = " [while running 'WriteShard']"
    with pytest.raises(TypeError):  # the errno form: int + str
        type(error)(error.args[0] + note, *error.args[1:])
    failure = atomic.write_failure(error, str(path), "nothing of it was kept")
    again = type(failure)(failure.args[0] + note, *failure.args[1:])
    assert isinstance(again, OSError) and str(again) == (
        f"cannot write {path}: File too large; nothing of it was kept{note}"
    )
