"""TokenizerSpec: the one precedence rule and its one-line errors."""

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
