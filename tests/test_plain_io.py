"""No plain-Python file I/O on paths that may be URLs: in the modules that handle user
paths, calls such as `open`, `glob.glob`, `os.path.exists`, `os.makedirs`, `os.replace` or
`shutil.rmtree` go through `data_pipeline.io.filesystem` (docs/design/filesystems.md), which
keeps local paths on `os` and sends URLs to `tf.io.gfile`. A plain call sees nothing on
gs:// or ram:// — silently — so a new one must either use the module or be listed below
with the reason its path is always local (checked from the source, by enclosing function,
so moving code around does not break the test)."""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

MODULES = """
    data_pipeline/documents.py data_pipeline/records.py
    data_pipeline/tokenization/sentencepiece_tokenizer.py
    data_pipeline/tokenization/train_tokenizer.py
    data_pipeline/pretraining/create_pretraining_data.py data_pipeline/pretraining/data_config.py
    data_pipeline/pretraining/fingerprint.py data_pipeline/pretraining/shards.py
    data_pipeline/pretraining/local_writer.py
    data_pipeline/tokenization/sentencepiece_trainer.py
    data_pipeline/tokenization/wordpiece_trainer.py
    data_pipeline/pretraining/meta_data.py data_pipeline/pretraining/input_pipeline.py
    data_pipeline/classification/benchmark_files.py data_pipeline/io/text_lines.py
    data_pipeline/classification/user_files.py data_pipeline/classification/multiple_choice.py
    data_pipeline/classification/features.py
    data_pipeline/classification/tasks.py data_pipeline/classification/submission.py
    data_pipeline/classification/multi_label_predictions.py
    data_pipeline/classification/unlabelled.py
    data_pipeline/squad/examples.py data_pipeline/squad/feature_records.py
    data_pipeline/squad/evaluation.py data_pipeline/squad/scoring.py
    albert_tf/modeling/config.py albert_tf/checkpoints/own.py albert_tf/checkpoints/finetuned.py
    albert_tf/checkpoints/export_encoder.py albert_tf/checkpoints/loading.py
    albert_tf/checkpoints/official.py albert_tf/training/trainer.py albert_tf/training/resume.py
    albert_tf/training/sweep.py
    albert_tf/training/run_setup.py albert_tf/training/pretraining_inputs.py
    albert_tf/training/embedding_settings.py albert_tf/serving/export.py
    albert_tf/serving/litert.py albert_tf/serving/saved_model.py albert_tf/serving/resolve.py
    albert_tf/serving/export_dir.py albert_tf/checkpoints/task_info.py
    run_pretraining.py run_classifier.py run_squad.py run_ner.py run_embedding.py
    albert_tf/runners/driver.py albert_tf/runners/families/classifier.py
    albert_tf/runners/families/token_classifier.py albert_tf/runners/families/embedding.py
    data_pipeline/classification/pair_files.py data_pipeline/tagging/settings.py
    data_pipeline/squad/sets.py
""".split()

PLAIN = {
    "open",
    "gzip.open",
    "glob.glob",
    "os.path.exists",
    "os.path.isfile",
    "os.path.isdir",
    "os.path.getsize",
    "os.makedirs",
    "os.listdir",
    "os.replace",
    "os.rename",
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.copy",
}

# (module, enclosing function, call) → why its path is always local.
LOCAL = {
    ("data_pipeline/documents.py", "read_block", "gzip.open"): "wraps a filesystem.open file",
    ("data_pipeline/pretraining/local_writer.py", "_write_shard", "os.replace"): (
        "workers write stats into the local output or staging directory"
    ),
    ("data_pipeline/pretraining/local_writer.py", "_write_shard", "os.remove"): "same",
    ("data_pipeline/pretraining/local_writer.py", "_write_shard", "os.path.getsize"): (
        "workers read local (staged) inputs"
    ),
    ("data_pipeline/pretraining/local_writer.py", "_create_locked", "os.path.getsize"): (
        "block paths are local (staged) inputs"
    ),
    ("data_pipeline/pretraining/local_writer.py", "_stop", "os.remove"): (
        "the workers' temporary files in the local output or staging directory"
    ),
    ("albert_tf/checkpoints/finetuned.py", "save_finetuned", "shutil.rmtree"): (
        "the local branch; URLs are staged (filesystem.staged_directory)"
    ),
    ("albert_tf/checkpoints/finetuned.py", "save_finetuned", "os.path.isdir"): "same",
    ("albert_tf/checkpoints/finetuned.py", "save_finetuned", "os.rmdir"): "same",
    ("albert_tf/checkpoints/finetuned.py", "save_finetuned", "os.replace"): "same",
    ("albert_tf/checkpoints/export_encoder.py", "_export_encoder", "shutil.rmtree"): (
        "the local temporary directory"
    ),
    ("albert_tf/checkpoints/export_encoder.py", "_export_encoder", "os.listdir"): "same",
    ("albert_tf/training/run_setup.py", "check_output_dir", "os.path.exists"): (
        "returns early for URLs"
    ),
    ("albert_tf/training/run_setup.py", "check_output_dir", "os.path.isdir"): "same",
    ("albert_tf/serving/saved_model.py", "write_saved_model", "shutil.rmtree"): (
        "the local temporary directory"
    ),
    ("albert_tf/serving/saved_model.py", "write_saved_model", "os.replace"): (
        "the local branch; URLs are copied up with filesystem.copy_tree"
    ),
    ("albert_tf/serving/litert.py", "convert", "shutil.rmtree"): "a local temporary directory",
    ("albert_tf/serving/export_dir.py", "check_export_dir", "os.path.exists"): (
        "returns early for URLs"
    ),
    ("albert_tf/serving/export_dir.py", "check_export_dir", "os.path.isdir"): "same",
}


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return base and f"{base}.{node.attr}"
    return None


def plain_calls(module: str):
    """(module, enclosing function, call, line) of each plain I/O call in `module`."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else function
            if isinstance(child, ast.Call) and _dotted(child.func) in PLAIN:
                yield module, function, _dotted(child.func), child.lineno
            yield from visit(child, inner)

    yield from visit(tree, None)


def test_no_plain_io_on_user_paths():
    found = [c for m in MODULES for c in plain_calls(m)]
    unexplained = [
        f"{m}:{line} {call} in {fn}" for m, fn, call, line in found if (m, fn, call) not in LOCAL
    ]
    assert not unexplained, "use data_pipeline.io.filesystem (or list why the path is local): " + (
        "; ".join(unexplained)
    )
    stale = set(LOCAL) - {(m, fn, call) for m, fn, call, _ in found}
    assert not stale, f"listed but gone (remove from LOCAL): {sorted(stale)}"


def test_the_check_sees_a_plain_call(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("import os\ndef f(p):\n    return os.path.exists(p)\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert list(plain_calls("m.py")) == [("m.py", "f", "os.path.exists", 3)]
