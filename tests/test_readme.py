"""The README's Python example runs as written and prints what it says."""

import contextlib
import io
import os
import re

from tests.support.harness import ROOT


def test_readme_python_example_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), {})
    printed = out.getvalue()
    assert "11813810" in printed.replace(",", "")
    assert "restored encoder from out/my_model/ckpt-1 (albert_tf)" in printed
    assert os.path.isfile(tmp_path / "out" / "my_model" / "albert_config.json")


def _python_block(text: str, marker: str) -> str:
    """The README's one ```python block that contains `marker`."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if marker in b]
    assert len(blocks) == 1, f"README has {len(blocks)} python blocks with {marker!r}"
    return blocks[0]


def test_readme_keras_model_example_fits_saves_and_reloads(tmp_path, monkeypatch, shared_data):
    """The "Your own Keras model" block, run as written on a pretrained checkpoint (a tiny
    pretrainer's, the tests' workflow model) and 256 SST-2 sentences; only its first line's
    three paths are pointed at the test's files."""
    import keras
    import numpy as np

    import albert_tf
    from tests.support.tiny import WORKFLOW, tiny_config

    keras.utils.set_random_seed(0)  # (the "pretrained" weights: the same model each run)
    pretrainer = albert_tf.AlbertPretrainer(tiny_config(WORKFLOW))
    pretrainer.build()
    albert_tf.save_checkpoint(pretrainer, str(tmp_path / "pretrained"))
    block = _python_block((ROOT / "README.md").read_text(encoding="utf-8"), "model.save(")
    paths = 'checkpoint, spm_model, sst2 = "out/encoder", "out/spm/30k-clean.model", "glue/SST-2"'
    assert block.count(paths) == 1
    block = block.replace(
        paths,
        f"checkpoint, spm_model, sst2 = {str(tmp_path / 'pretrained')!r}, "
        f"{str(shared_data / 'spm' / 'de-30k-clean.model')!r}, "
        f"{str(shared_data / 'glue' / 'SST-2')!r}",
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    scope, out = {}, io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), scope)
    assert f"restored encoder from {tmp_path / 'pretrained'}/ckpt-1 (albert_tf)" in out.getvalue()
    # The encoder started from the checkpoint, not from a random initialization.
    encoder = scope["model"].get_layer("albert_encoder")
    assert encoder.count_params() == pretrainer.encoder.count_params()
    # Training on real text: the loss falls from chance level (ln 2 = 0.693 for two
    # balanced classes) to well below it (measured 0.10-0.40 after six epochs).
    losses = scope["history"].history["loss"]
    assert len(losses) == 6 and losses[0] > 0.65 and losses[-1] < 0.55, losses
    # The .keras file restores the same model: same class, config and outputs.
    reloaded = scope["reloaded"]
    again = reloaded.get_layer("albert_encoder")
    assert type(again) is albert_tf.AlbertEncoder and again.config == encoder.config
    features = scope["features"]
    batch = {k: features[k][:64] for k in ("input_ids", "input_mask", "segment_ids")}
    expected, got = scope["model"].predict(batch, verbose=0), reloaded.predict(batch, verbose=0)
    assert np.abs(expected).max() > 0.1
    np.testing.assert_array_equal(got, expected)
