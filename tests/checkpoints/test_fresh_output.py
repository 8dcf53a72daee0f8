"""C13: every conversion writer refuses an output directory that holds another conversion,
in one line naming --output_dir and the directory, and leaves the first conversion as it
was (before, the second conversion replaced ckpt-1 / model.safetensors silently, rc 0)."""

import hashlib

import numpy as np
import pytest

from tests.support.tiny import tiny_config


def _digest(folder) -> dict:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()
    }


def _ours(folder, seed):
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.models import AlbertPretrainer

    keras.utils.set_random_seed(seed)
    config = tiny_config(num_hidden_layers=2)
    model = AlbertPretrainer(config)
    model.build()
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(0, 0.2, w.shape))
    save_checkpoint(model, str(folder), config)
    return str(folder)


@pytest.mark.parametrize("target", ["import", "transformers", "model_garden", "keras_hub"])
def test_a_second_conversion_into_the_same_directory_is_refused(tmp_path, capsys, target):
    from albert_tf.checkpoints.convert import main as convert_main

    def main(args):  # (argv[0] is the program, as on a command line)
        return convert_main(["albert-convert", *args])

    first, second = _ours(tmp_path / "a", 1), _ours(tmp_path / "b", 2)
    if target == "keras_hub":
        pytest.importorskip("keras_hub")
    if target == "import":  # --source transformers of two Hugging Face directories
        for name, ours in (("hf_a", first), ("hf_b", second)):
            hf = ["--to=transformers", f"--input={ours}", f"--output_dir={tmp_path / name}"]
            assert main(hf) == 0
        args = [["--source=transformers", f"--input={tmp_path / n}"] for n in ("hf_a", "hf_b")]
    else:
        args = [[f"--to={target}", f"--input={ours}"] for ours in (first, second)]
    out = tmp_path / "out"
    assert main([*args[0], f"--output_dir={out}"]) == 0
    written = _digest(out)
    capsys.readouterr()
    assert main([*args[1], f"--output_dir={out}"]) == 1
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith(f"error: --output_dir {out} already holds ")
    assert _digest(out) == written  # the first conversion is untouched
    # An empty directory (one made for it) is taken.
    (tmp_path / "empty").mkdir()
    assert main([*args[1], f"--output_dir={tmp_path / 'empty'}"]) == 0


def test_a_conversion_says_when_it_starts_and_ends(tmp_path, capsys):
    """Both ways (--to, --source): one line as the conversion starts (input, what, where),
    one as it ends with its time, then what it wrote."""
    import re

    from albert_tf.checkpoints.convert import main as convert_main

    ours = _ours(tmp_path / "a", 1)
    garden, back = tmp_path / "mg", tmp_path / "back"
    config = f"--albert_config_file={tmp_path / 'a' / 'albert_config.json'}"
    capsys.readouterr()
    runs = [
        (["--to=model_garden", f"--input={ours}", f"--output_dir={garden}"], "model_garden"),
        (["--source=model_garden", f"--input={garden}", config, f"--output_dir={back}"], None),
    ]
    for args, to in runs:
        assert convert_main(["albert-convert", *args]) == 0
        lines = capsys.readouterr().out.splitlines()
        output = args[-1].split("=", 1)[1]
        what = f"to {to} in {output}" if to else f"(model_garden) to {output}"
        start = f"conversion: {args[1].split('=', 1)[1]} {what}"
        assert lines[0] == f"{start} ...", lines
        assert re.fullmatch(re.escape(start) + r": done in \d+\.\d s", lines[1]), lines
        assert lines[2].startswith("wrote "), lines
