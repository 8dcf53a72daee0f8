"""The one tokenizer choice: a SentencePiece model (`--spm_model_file`) or a WordPiece
vocabulary (`--vocab_file`), exactly one, as the official flags. Both tokenizers have one
interface (encode, encode_batch, tokenize, the special ids, vocab_size, checksum,
vocab_tables, graph_tokenizer), so callers never branch on the kind."""

from __future__ import annotations


def check_choice(spm_model_file: str | None, vocab_file: str | None) -> None:
    """A one-line ValueError unless exactly one of the two files is given (empty strings
    count as not given: unset flags). For callers that check settings before they build
    the tokenizer (a data job's config)."""
    if bool(spm_model_file) == bool(vocab_file):
        given = "both" if spm_model_file else "neither"
        detail = (
            f" ({spm_model_file} and {vocab_file}; with a SentencePiece model drop "
            f"--vocab_file, its .vocab is not read)"
            if spm_model_file
            else ""
        )
        raise ValueError(
            f"give exactly one tokenizer: --spm_model_file (SentencePiece) or --vocab_file "
            f"(WordPiece vocab.txt); {given} given{detail}"
        )


def tokenizer_for(
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    keep_accents: bool = False,
):
    """`AlbertTokenizer(spm_model_file, do_lower_case, keep_accents)` or
    `WordPieceTokenizer(vocab_file, do_lower_case)`; a one-line ValueError when both or
    neither file is given (`check_choice`), or `keep_accents` with a WordPiece vocabulary
    (BERT's basic tokenizer strips accents exactly when it lowercases)."""
    check_choice(spm_model_file, vocab_file)
    if spm_model_file:
        from data_pipeline.tokenization import AlbertTokenizer

        return AlbertTokenizer(spm_model_file, do_lower_case, keep_accents)
    if keep_accents:
        raise ValueError(
            f"--keep_accents is for SentencePiece models; with --vocab_file={vocab_file} "
            f"accents are stripped exactly when --do_lower_case (BERT's basic tokenizer)"
        )
    from data_pipeline.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(vocab_file, do_lower_case)


def tokenizer_kind(tokenizer) -> str:
    """ "sentencepiece" or "wordpiece": what meta_data.json and exports record."""
    from data_pipeline.wordpiece import WordPieceTokenizer

    return "wordpiece" if isinstance(tokenizer, WordPieceTokenizer) else "sentencepiece"
