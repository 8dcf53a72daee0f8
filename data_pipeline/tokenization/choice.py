"""The one tokenizer choice: a SentencePiece model (`--spm_model_file`) or a WordPiece
vocabulary (`--vocab_file`), as the official flags. With both, the SentencePiece model is
the tokenizer and the vocab file is not read: the official FullTokenizer does the same, and
official command lines pass both (`--vocab_file=30k-clean.vocab
--spm_model_file=30k-clean.model`). Both tokenizers have one interface (encode,
encode_batch, tokenize, the special ids, vocab_size, checksum, vocab_tables,
graph_tokenizer), so callers never branch on the kind."""

from __future__ import annotations


def chosen_files(spm_model_file: str | None, vocab_file: str | None) -> tuple:
    """(spm_model_file, vocab_file) with exactly one set: the SentencePiece model when it
    is given (the vocab file is then not read), else the vocab file; a one-line ValueError
    when neither is given (empty strings count as not given: unset flags)."""
    if spm_model_file:
        return spm_model_file, None
    if vocab_file:
        return None, vocab_file
    raise ValueError(
        "give a tokenizer: --spm_model_file (SentencePiece) or --vocab_file (WordPiece "
        "vocab.txt); neither given"
    )


def check_choice(spm_model_file: str | None, vocab_file: str | None) -> None:
    """`chosen_files`' check alone, for callers that check settings before they build the
    tokenizer (a data job's config)."""
    chosen_files(spm_model_file, vocab_file)


def tokenizer_for(
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    keep_accents: bool = False,
):
    """`AlbertTokenizer(spm_model_file, do_lower_case, keep_accents)` or
    `WordPieceTokenizer(vocab_file, do_lower_case)`; a one-line ValueError when both or
    no file is given (`chosen_files`: with both, the SentencePiece model), or `keep_accents`
    with a WordPiece vocabulary (BERT's basic tokenizer strips accents exactly when it
    lowercases)."""
    spm_model_file, vocab_file = chosen_files(spm_model_file, vocab_file)
    if spm_model_file:
        from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

        return AlbertTokenizer(spm_model_file, do_lower_case, keep_accents)
    if keep_accents:
        raise ValueError(
            f"--keep_accents is for SentencePiece models; with --vocab_file={vocab_file} "
            f"accents are stripped exactly when --do_lower_case (BERT's basic tokenizer)"
        )
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(vocab_file, do_lower_case)


def tokenizer_kind(tokenizer) -> str:
    """ "sentencepiece" or "wordpiece": what meta_data.json and exports record."""
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    return "wordpiece" if isinstance(tokenizer, WordPieceTokenizer) else "sentencepiece"
