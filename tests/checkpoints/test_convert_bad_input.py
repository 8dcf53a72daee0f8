"""`python -m albert_tf.checkpoints.convert` on inputs that are not what they claim to be
(random bytes, truncated downloads, an absurd config): each is one `error:` line naming
the file, a nonzero exit and no traceback, and nothing is written."""

import json

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA
from tests.support.in_process import run_command
from tests.support.tiny import tiny_fields

# The tiny model (tests/support/tiny.py) as a Hugging Face config.json; 512 positions, the
# default of both libraries.
SMALL = {
    "model_type": "albert",
    **tiny_fields(
        vocab_size=100,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    ),
}


def _random(path, size, seed):
    path.write_bytes(np.random.default_rng(seed).bytes(size))
    return path


def _cases(tmp_path):
    """[(arguments, the file the error must name, a phrase of the error)]."""
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps({k: v for k, v in SMALL.items() if k != "model_type"}))
    huge = tmp_path / "huge_config.json"
    huge.write_text(json.dumps(dict(SMALL, vocab_size=10**12)))
    cases = []
    # A random-bytes file as the checkpoint.
    blob = _random(tmp_path / "random.ckpt", 4096, 1)
    cases.append(
        (["--source=tf1", f"--input={blob}", f"--albert_config_file={config}"], blob, "not found")
    )
    # A TF checkpoint whose index and data are random bytes.
    ckpt = tmp_path / "tf" / "model.ckpt"
    ckpt.parent.mkdir()
    _random(tmp_path / "tf" / "model.ckpt.index", 3000, 2)
    _random(tmp_path / "tf" / "model.ckpt.data-00000-of-00001", 3000, 3)
    for source, given in (("tf1", ckpt), ("tfhub", ckpt.parent), ("brightmart", ckpt)):
        cases.append(
            (
                [f"--source={source}", f"--input={given}", f"--albert_config_file={config}"],
                ckpt,
                "not a readable TensorFlow checkpoint",
            )
        )
    # An absurd config (vocab_size 10^12): refused before any allocation.
    cases.append(
        (
            ["--source=tf1", f"--input={ckpt}", f"--albert_config_file={huge}"],
            huge,
            "vocab_size=1,000,000,000,000 is larger than 4,194,304",
        )
    )
    # Hugging Face directories: a random config.json; truncated or random weights.
    hf = tmp_path / "hf_random_config"
    hf.mkdir()
    _random(hf / "config.json", 300, 4)
    cases.append((["--source=transformers", f"--input={hf}"], hf / "config.json", "not UTF-8 text"))
    from safetensors.numpy import save_file

    weights = {"albert.embeddings.word_embeddings.weight": np.zeros((100, 16), np.float32)}
    for name in ("truncated_safetensors", "random_safetensors", "truncated_bin", "random_bin"):
        directory = tmp_path / name
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(SMALL))
        file = directory / ("model.safetensors" if "safetensors" in name else "pytorch_model.bin")
        if name == "truncated_safetensors":
            save_file(weights, str(file))
        elif name == "truncated_bin":
            import torch

            torch.save({k: torch.from_numpy(v) for k, v in weights.items()}, str(file))
        else:
            _random(file, 5000, len(name))
        if name.startswith("truncated"):
            data = file.read_bytes()
            file.write_bytes(data[: len(data) // 2])
        kind = "safetensors file" if "safetensors" in name else "PyTorch state dict"
        cases.append(
            (["--source=transformers", f"--input={directory}"], file, f"not a readable {kind}")
        )
    # The huge config as a Hugging Face config.json.
    hf_huge = tmp_path / "hf_huge"
    hf_huge.mkdir()
    (hf_huge / "config.json").write_text(huge.read_text())
    cases.append(
        (["--source=transformers", f"--input={hf_huge}"], hf_huge / "config.json", "vocab_size=")
    )
    return cases


def test_convert_refuses_random_and_truncated_inputs_in_one_line(tmp_path):
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    cases = _cases(tmp_path)
    runs = []
    for i, (args, _, _) in enumerate(cases):
        out = tmp_path / f"out{i}"
        run = run_command("-m", "albert_tf.checkpoints.convert", *args, f"--output_dir={out}")
        runs.append((run, out))
    for (run, out), (args, named, phrase) in zip(runs, cases):
        errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
        assert run.returncode == 1, (args, run.report())
        assert "Traceback" not in run.stderr, (args, run.report())
        assert len(errors) == 1 and str(named) in errors[0] and phrase in errors[0], (
            args,
            run.stderr[-2000:],
        )
        assert not out.exists(), args
