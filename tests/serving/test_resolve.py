"""One resolution per export (albert_tf.serving.resolve): a SavedModel + LiteRT export reads
task.json once, restores the checkpoint once and builds the tokenizer once; and an export
directory that cannot be one is a one-line error before anything is written."""

import os

import pytest

from tests.serving.test_export import _finetuned


@pytest.fixture(scope="module")
def classifier(tmp_path_factory, tok):
    return _finetuned(tmp_path_factory.mktemp("resolve"), tok.model_file, text_pair=True)[1]


def test_savedmodel_and_litert_export_resolve_the_model_once(classifier, tmp_path, monkeypatch):
    import albert_tf.checkpoints as checkpoints
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.serving.export import export_formats
    from data_pipeline.io import filesystem
    from data_pipeline.tokenization.spec import TokenizerSpec

    reads, opens, restores, builds = [], [], [], []
    read, load = TaskInfo.read.__func__, checkpoints.load_checkpoint
    plain_open, build = filesystem.open, TokenizerSpec.build

    def counted_open(path, mode="r", *args, **kwargs):
        # Text reads parse it; the binary read of filesystem.copy ships it in the export.
        if os.path.basename(str(path)) == "task.json" and mode in ("r", "rt"):
            opens.append(path)
        return plain_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(TaskInfo, "read", classmethod(lambda c, d: reads.append(d) or read(c, d)))
    monkeypatch.setattr(filesystem, "open", counted_open)
    monkeypatch.setattr(
        checkpoints, "load_checkpoint", lambda m, p, **k: restores.append(p) or load(m, p, **k)
    )
    monkeypatch.setattr(TokenizerSpec, "build", lambda self: builds.append(self) or build(self))
    paths = export_formats(
        "classifier", classifier, str(tmp_path / "out"), ("savedmodel", "tflite"), ("float32",)
    )
    assert [os.path.basename(p) for p in paths] == ["1", "classifier-float32.tflite"]
    assert (reads, opens, restores) == (
        [classifier],
        [os.path.join(classifier, "task.json")],
        [classifier],
    )
    assert len(builds) == 1


@pytest.mark.parametrize("what", ["file", "dangling link", "file parent"])
def test_an_export_dir_that_cannot_be_one_is_one_line_and_nothing_is_written(
    classifier, tmp_path, what, capsys
):
    from albert_tf.serving.export import main

    target = tmp_path / "export"
    if what == "file":
        target.write_text("not a directory")
        expected = f"{target} is a file, not a directory"
    elif what == "dangling link":
        os.symlink(tmp_path / "gone", target)
        expected = f"{target} is a dangling symbolic link (to {tmp_path / 'gone'})"
    else:
        (tmp_path / "parent").write_text("a file")
        target = tmp_path / "parent" / "export"
        expected = f"{tmp_path / 'parent'} is a file, not a directory"
    before = sorted(os.listdir(tmp_path))
    for formats in (["--export_format=savedmodel"], ["--export_format=tflite"]):
        code = main(
            [
                "export",
                "--task=classifier",
                f"--init_checkpoint={classifier}",
                f"--export_dir={target}",
                *formats,
            ]
        )
        err = capsys.readouterr().err
        assert code == 1 and err.count("\n") == 1, err
        assert err.startswith(f"error: --export_dir {target}: {expected}")
    assert sorted(os.listdir(tmp_path)) == before
    assert not os.path.exists(tmp_path / "gone")


def test_export_max_windows_reaches_the_classifier_and_is_checked(classifier, capsys):
    """`--max_windows` is the classifier's own field too (a long-document classifier's
    per-request limit, request_windows): given, it replaces the directory's; below 1,
    refused naming the flag (the command line) or the field (the library)."""
    from albert_tf.serving.export import main
    from albert_tf.serving.resolve import resolve

    assert resolve("classifier", classifier).task.details.max_windows is None
    assert resolve("classifier", classifier, max_windows=7).task.details.max_windows == 7
    with pytest.raises(ValueError, match="'max_windows' must be ≥ 1, not 0"):
        resolve("classifier", classifier, max_windows=0)
    argv = ["export", "--task=classifier", f"--init_checkpoint={classifier}", "--max_windows=0"]
    assert main([*argv, "--export_dir=/nonexistent/never"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --max_windows=0 must be >= 1\n", err  # (the parser's one line)
    assert not os.path.exists("/nonexistent/never")
