"""The one tokenizer value: which tokenizer a job uses, resolved once at the edge (flags, a
fine-tuned directory, a pretraining run's records) and handed down whole.

The rule it owns: a SentencePiece model (`--spm_model_file`) or a WordPiece vocabulary
(`--vocab_file`), as the official flags; with both, the SentencePiece model is the tokenizer
and the vocab file is not read (the official FullTokenizer does the same, and official
command lines pass both: `--vocab_file=30k-clean.vocab --spm_model_file=30k-clean.model`).
Both tokenizers have one interface (encode, encode_batch, tokenize, the special ids,
vocab_size, checksum, vocab_tables, graph_tokenizer), so callers never branch on the kind.
"""

from __future__ import annotations

import dataclasses

SENTENCEPIECE = "sentencepiece"
WORDPIECE = "wordpiece"
KINDS = (SENTENCEPIECE, WORDPIECE)

# What each kind is called on the command line and inside a model directory (fine-tuned
# models, encoder exports, SavedModel assets).
FLAG = {SENTENCEPIECE: "--spm_model_file", WORDPIECE: "--vocab_file"}
FILE_NAME = {SENTENCEPIECE: "spm.model", WORDPIECE: "vocab.txt"}


@dataclasses.dataclass(frozen=True)
class TokenizerSpec:
    """A tokenizer by kind ("sentencepiece" | "wordpiece"), file and casing.

    `keep_accents` is a SentencePiece normalization option (BERT's basic tokenizer strips
    accents exactly when it lowercases, so a WordPiece spec refuses it). A file that is
    missing or not a tokenizer of its kind is a one-line error from `build`, naming the
    file and, when it came from one, the flag."""

    kind: str
    path: str
    do_lower_case: bool = True
    keep_accents: bool = False
    # Whether `path` is what `flag` names (so errors name the flag too); a copy inside a
    # model directory (`with_path`) is not. Not part of the value.
    from_flag: bool = dataclasses.field(default=True, compare=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"tokenizer kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if not self.path:
            raise ValueError(f"{self.flag} is empty")
        if self.keep_accents and self.kind == WORDPIECE:
            raise ValueError(
                f"--keep_accents is for SentencePiece models; with --vocab_file={self.path} "
                f"accents are stripped exactly when --do_lower_case (BERT's basic tokenizer)"
            )

    @classmethod
    def from_files(
        cls,
        spm_model_file: str | None = None,
        vocab_file: str | None = None,
        do_lower_case: bool = True,
        keep_accents: bool = False,
    ) -> TokenizerSpec:
        """The spec the two official flags name (the SentencePiece model wins when both are
        given); a one-line ValueError when neither is (empty strings count as not given:
        unset flags)."""
        if spm_model_file:
            return cls(SENTENCEPIECE, spm_model_file, do_lower_case, keep_accents)
        if vocab_file:
            return cls(WORDPIECE, vocab_file, do_lower_case, keep_accents)
        raise ValueError(
            "give a tokenizer: --spm_model_file (SentencePiece) or --vocab_file (WordPiece "
            "vocab.txt); neither given"
        )

    @classmethod
    def optional(cls, spm_model_file=None, vocab_file=None, **casing) -> TokenizerSpec | None:
        """`from_files`, or None when neither file is given (a tokenizer found elsewhere,
        e.g. in a model directory, is then used)."""
        if not (spm_model_file or vocab_file):
            return None
        return cls.from_files(spm_model_file, vocab_file, **casing)

    @property
    def flag(self) -> str:
        """The command-line flag that names this kind's file (for one-line errors)."""
        return FLAG[self.kind]

    @property
    def file_name(self) -> str:
        """The file's name inside a model directory (spm.model or vocab.txt)."""
        return FILE_NAME[self.kind]

    @property
    def is_wordpiece(self) -> bool:
        return self.kind == WORDPIECE

    def with_path(self, path: str) -> TokenizerSpec:
        """The same tokenizer read from another copy of its file (e.g. the one inside a
        model directory)."""
        return dataclasses.replace(self, path=path, from_flag=False)

    def build(self):
        """The Python tokenizer: `AlbertTokenizer` or `WordPieceTokenizer` (imported here:
        each pulls in its own library). A missing file (FileNotFoundError) or one that is
        not a tokenizer of this kind (ValueError: random bytes, a truncated model, a
        vocab.txt that is not UTF-8 text) is one line naming the file, and the flag when the
        path came from it: "... (from --spm_model_file)"."""
        try:
            if self.kind == SENTENCEPIECE:
                from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

                return AlbertTokenizer(self.path, self.do_lower_case, self.keep_accents)
            from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

            return WordPieceTokenizer(self.path, self.do_lower_case)
        except (FileNotFoundError, ValueError) as e:
            if not self.from_flag:
                raise
            raise type(e)(f"{e} (from {self.flag})") from None


def tokenizer_kind(tokenizer) -> str:
    """The kind of a built tokenizer, "sentencepiece" or "wordpiece": what meta_data.json,
    feature caches and exports record, and what picks kind-specific code (offsets, graph
    ops)."""
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    return WORDPIECE if isinstance(tokenizer, WordPieceTokenizer) else SENTENCEPIECE
