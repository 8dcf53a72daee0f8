"""SIGTERM while a runner exports (stops.sigterm_raises, installed by run_main for every
runner and by albert-export): the export's staging directory (EXPORT_DIR/.finetuned-*/) is
removed, the command exits 143 with one line; Python's default ended the process at once,
without a word, and left the staging directory for good."""

import signal

from tests.support.tiny import tiny_config


def test_sigterm_during_an_export_removes_its_staging_and_says_so(tmp_path, capsys, monkeypatch):
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.serving import export
    from albert_tf.training.run_setup import run_main

    config = tiny_config()
    info = TaskInfo.build(
        kind="classifier", task_name="tsv", labels=["a", "b"], max_seq_length=16, step=0
    )
    model = info.model(config)
    model.build()
    export_dir = tmp_path / "export"
    staged = []

    def terminated_while_writing(kind, directory, *args, **kwargs):
        staged.append(directory)  # the fine-tuned model directory, staged in EXPORT_DIR
        signal.raise_signal(signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the export")

    monkeypatch.setattr(export, "export_formats", terminated_while_writing)
    before = signal.getsignal(signal.SIGTERM)
    code = run_main(lambda: export.export_trained(model, str(export_dir), info, None))
    err = capsys.readouterr().err
    assert code == 143
    assert err.startswith("terminated (SIGTERM) outside the training loop") and err.count("\n") == 1
    assert staged and staged[0].startswith(str(export_dir / ".finetuned-"))
    assert list(export_dir.iterdir()) == []  # nothing left behind
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is the command's only
