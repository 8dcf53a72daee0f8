"""Transitional helpers over `TokenizerSpec` (data_pipeline.tokenization.spec owns the
rule); callers move to the spec itself."""

from __future__ import annotations

from data_pipeline.tokenization.spec import WORDPIECE, TokenizerSpec


def chosen_files(spm_model_file: str | None, vocab_file: str | None) -> tuple:
    """(spm_model_file, vocab_file) with exactly one set (`TokenizerSpec.from_files`)."""
    spec = TokenizerSpec.from_files(spm_model_file, vocab_file)
    return (None, spec.path) if spec.is_wordpiece else (spec.path, None)


def check_choice(spm_model_file: str | None, vocab_file: str | None) -> None:
    """`chosen_files`' check alone."""
    TokenizerSpec.from_files(spm_model_file, vocab_file)


def tokenizer_for(
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    keep_accents: bool = False,
):
    """`TokenizerSpec.from_files(...).build()`."""
    return TokenizerSpec.from_files(spm_model_file, vocab_file, do_lower_case, keep_accents).build()


def tokenizer_kind(tokenizer) -> str:
    """ "sentencepiece" or "wordpiece": what meta_data.json and exports record."""
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    return WORDPIECE if isinstance(tokenizer, WordPieceTokenizer) else "sentencepiece"
