"""TokenizerSpec: the one precedence rule and its one-line errors."""

import numpy as np
import pytest

from data_pipeline.tokenization.spec import TokenizerSpec


def test_the_sentencepiece_model_wins_over_the_vocab_file():
    spec = TokenizerSpec.from_files("a.model", "b.txt", do_lower_case=False)
    assert (spec.kind, spec.path, spec.do_lower_case) == ("sentencepiece", "a.model", False)
    assert (spec.flag, spec.file_name) == ("--spm_model_file", "spm.model")
    wp = TokenizerSpec.from_files("", "vocab.txt")
    assert (wp.kind, wp.path, wp.flag, wp.file_name) == (
        "wordpiece",
        "vocab.txt",
        "--vocab_file",
        "vocab.txt",
    )
    assert wp.with_path("d/vocab.txt").path == "d/vocab.txt" and wp.is_wordpiece


def test_errors_are_one_line():
    with pytest.raises(ValueError, match="neither given") as e:
        TokenizerSpec.from_files(None, "")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="--keep_accents is for SentencePiece"):
        TokenizerSpec.from_files(None, "v.txt", keep_accents=True)
    with pytest.raises(ValueError, match="tokenizer kind"):
        TokenizerSpec("bpe", "x")
    assert TokenizerSpec.optional(None, None) is None


def test_build_gives_the_kind_named(tok):
    built = TokenizerSpec.from_files(tok.model_file, do_lower_case=True).build()
    assert type(built).__name__ == "AlbertTokenizer"
    assert built.checksum == tok.checksum and built.encode("Hallo Welt") == tok.encode("Hallo Welt")


def _bad_tokenizer_files(directory, real_model):
    """{name: (kind, path)}: files that are not what their flag says."""
    rng = np.random.default_rng(0)
    files = {
        "random bytes": ("spm", directory / "random.model", rng.bytes(5000)),
        "half a model": ("spm", directory / "half.model", None),
        "empty": ("spm", directory / "empty.model", b""),
        "binary vocab": ("vocab", directory / "vocab.txt", b"\x80\x81" + rng.bytes(3000)),
    }
    data = real_model.read_bytes()
    files["half a model"] = ("spm", directory / "half.model", data[: len(data) // 2])
    for _, path, content in files.values():
        path.write_bytes(content)
    return {name: (kind, path) for name, (kind, path, _) in files.items()}


def test_a_file_that_is_not_a_tokenizer_is_one_line_naming_file_and_flag(tmp_path, shared_data):
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    files = _bad_tokenizer_files(tmp_path, shared_data / "spm" / "de-30k-clean.model")
    for name, (kind, path) in files.items():
        spec = TokenizerSpec.from_files(*((str(path), None) if kind == "spm" else (None, path)))
        with pytest.raises(ValueError) as e:
            spec.build()
        message = str(e.value)
        assert message.startswith(f"{path}: not a "), (name, message)
        assert message.endswith(f") (from {spec.flag})"), (name, message)
        assert "\n" not in message, (name, message)
        # Not from a flag (a copy in a model directory): the file alone.
        with pytest.raises(ValueError, match=rf"^{path}: not a .*\)$") as e:
            spec.with_path(str(path)).build()
        assert "(from --" not in str(e.value)
    with pytest.raises(ValueError, match=r"^\S+half.model: not a SentencePiece model \(388,790"):
        AlbertTokenizer(str(files["half a model"][1]))
    with pytest.raises(
        FileNotFoundError, match=r"^WordPiece .*not found: .*absent.txt \(from --vo"
    ):
        TokenizerSpec.from_files(None, str(tmp_path / "absent.txt")).build()


def test_a_cli_given_a_broken_model_says_one_line_and_writes_nothing(tmp_path, shared_data):
    from tests.support.in_process import run_command

    files = _bad_tokenizer_files(tmp_path, shared_data / "spm" / "de-30k-clean.model")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Ein Satz. Noch ein Satz.\nZweiter Absatz hier.\n\nNeues Dokument.\n")
    for name in ("random bytes", "half a model"):
        path = files[name][1]
        out = tmp_path / f"out-{path.stem}"
        run = run_command(
            "-m",
            "data_pipeline.pretraining.create_pretraining_data",
            f"--input_file={corpus}",
            f"--output_dir={out}",
            f"--spm_model_file={path}",
        )
        assert run.returncode == 1, run.report()
        assert run.stderr.strip().splitlines() == [
            f"error: {path}: not a SentencePiece model ({path.stat().st_size:,} bytes "
            "SentencePiece cannot parse: truncated, or another kind of file) (from "
            "--spm_model_file)"
        ], run.report()
        assert "Traceback" not in run.stderr and not out.exists()
