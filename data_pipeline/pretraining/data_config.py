"""DataConfig: every setting that determines a pretraining-data job's output, checked
whole when it is made, before any worker process or Beam worker starts.

Both writers (the local one, `local_writer.py`, and the Beam pipeline, `beam_writer.py`)
take a DataConfig; the command line (`create_pretraining_data.py`) builds it from its
flags, which are these fields (`DataSettings`: help text and choices on each) and
`TokenizerFlags`. A setting out of range is a ValueError of one line naming it, raised
here: a value only a worker would reject used to crash every worker at start-up (and the
pool restarted them forever).

The tokenizer is one value, a `TokenizerSpec` (data_pipeline.tokenization.spec: kind, file,
casing). `settings()` spells it as the official flags did (`spm_model_file`, `vocab_file`
when WordPiece, `do_lower_case`, `keep_accents`), so the job's fingerprint and
meta_data.json keep the form they had.
"""

from __future__ import annotations

import dataclasses

from data_pipeline import documents as documents_lib
from data_pipeline.cli import setting
from data_pipeline.pretraining import chinese_words
from data_pipeline.pretraining.instances import SENTENCE_ORDERS, SHORT_SEQ_SCOPES, InstanceOptions
from data_pipeline.pretraining.masking import NgramMasker
from data_pipeline.tokenization.spec import WORDPIECE, TokenizerSpec

META_FILE = "meta_data.json"
FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class TokenizerFlags:
    """The tokenizer: the official flags that make `DataConfig.tokenizer`."""

    spm_model_file: str | None = setting(
        None, "SentencePiece model (ALBERT special pieces); or give --vocab_file."
    )
    vocab_file: str | None = setting(
        None,
        "WordPiece vocab.txt (BERT's basic tokenizer + WordPiece, as the official Chinese "
        "ALBERTs); or give --spm_model_file.",
    )
    do_lower_case: bool = setting(True, "Lowercase the text (uncased models).")
    keep_accents: bool = setting(False, "Keep combining accents (official: strip).")

    def spec(self) -> TokenizerSpec:
        """`TokenizerSpec.from_files` (with both files, the SentencePiece model)."""
        return TokenizerSpec.from_files(
            self.spm_model_file, self.vocab_file, self.do_lower_case, self.keep_accents
        )


# The official flags that make `DataConfig.tokenizer` (the other flags are fields by name).
TOKENIZER_FLAGS = tuple(f.name for f in dataclasses.fields(TokenizerFlags))


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """What the job writes: every setting but the tokenizer (the official flags and ours)."""

    input_file: str = setting(help="Input text: comma-separated globs (gzip ok).")
    output_dir: str = setting(help="Where the TFRecord shards and meta_data.json go.")
    max_seq_length: int = setting(512, "Maximum sequence length.")
    max_predictions_per_seq: int = setting(20, "Maximum masked LM predictions.")
    masked_lm_prob: float = setting(0.15, "Masked LM probability.")
    ngram: int = setting(3, "Maximum n-gram (in words) of a masked unit.")
    favor_shorter_ngram: bool = setting(True, "p(n) ∝ 1/n (else ∝ n).")
    do_whole_word_mask: bool = setting(True, "Mask whole words (n-grams of words).")
    calibrate_ngrams: bool = setting(
        True, "Make the realized n-gram mix match p(n) (see masking.py)."
    )
    short_seq_prob: float = setting(0.1, "Probability of a shorter target length.")
    short_seq_scope: str = setting(
        "document",
        "Draw the target length once per document and pass (official) or per instance.",
        choices=SHORT_SEQ_SCOPES,
    )
    dupe_factor: int = setting(40, "Passes over the input, each with other masks/pairs.")
    random_seed: int = setting(12345, "Seed of every random draw.")
    sentence_order: str = setting(
        "sop", "sop (ALBERT), nsp (BERT) or none (MLM only).", choices=SENTENCE_ORDERS
    )
    dynamic_masking: bool = setting(
        False, "Write no masks (token_boundary only); the input pipeline masks each epoch."
    )
    input_format: str = setting("auto", "Input file format.", choices=documents_lib.FORMATS)
    split_sentences: bool = setting(
        False, "Split each text line into sentences (one-paragraph-per-line corpora)."
    )
    block_size: int = setting(1 << 20, "Bytes of input per block (memory bound).")
    num_output_shards: int = setting(16, "Number of TFRecord shards.")
    zh_whole_word_mask: bool = setting(
        False,
        "Chinese whole-word masking: each jieba word of Chinese text is one unit, as "
        "Chinese-BERT-wwm and brightmart/albert_zh (needs jieba: pip install -e '.[zh]').",
    )


@dataclasses.dataclass(frozen=True)
class DataConfig(DataSettings):
    """Every setting that determines the output: `DataSettings` and the `tokenizer`, the
    SentencePiece model or WordPiece vocab.txt with its casing (a keyword)."""

    tokenizer: TokenizerSpec = dataclasses.field(kw_only=True)

    def __post_init__(self):
        if not isinstance(self.tokenizer, TokenizerSpec):
            raise TypeError(f"tokenizer={self.tokenizer!r} is not a TokenizerSpec")
        if self.zh_whole_word_mask:
            if not self.do_whole_word_mask:
                raise ValueError(
                    "--zh_whole_word_mask makes Chinese words whole-word units, but "
                    "--nodo_whole_word_mask masks single tokens; drop one of them"
                )
            chinese_words.load_jieba()  # one line saying how to install it
        if self.num_output_shards < 1:
            raise ValueError(f"num_output_shards={self.num_output_shards} must be >= 1")
        if self.block_size < 1:
            raise ValueError(f"block_size={self.block_size} must be >= 1")
        if self.random_seed < 0:
            raise ValueError(f"random_seed={self.random_seed} must be >= 0")
        if self.input_format not in documents_lib.FORMATS:
            raise ValueError(
                f"input_format={self.input_format!r} is not one of {documents_lib.FORMATS}"
            )
        # The masker's own checks (its options matter with dynamic masking too: the input
        # pipeline draws the masks with them).
        NgramMasker.check_options(self.max_predictions_per_seq, self.masked_lm_prob, self.ngram)
        if self.max_predictions_per_seq > self.max_seq_length:
            raise ValueError(
                f"max_predictions_per_seq={self.max_predictions_per_seq} "
                f"exceeds max_seq_length={self.max_seq_length}"
            )
        self.instance_options()  # validates

    @classmethod
    def from_flags(
        cls,
        spm_model_file: str | None = None,
        vocab_file: str | None = None,
        do_lower_case: bool = True,
        keep_accents: bool = False,
        **settings,
    ) -> DataConfig:
        """The config of the command line's values: the tokenizer flags (`TOKENIZER_FLAGS`)
        make `tokenizer` (`TokenizerSpec.from_files`: with both files, the SentencePiece
        model), every other value is the field of its name."""
        spec = TokenizerFlags(spm_model_file, vocab_file, do_lower_case, keep_accents).spec()
        return cls(tokenizer=spec, **settings)

    def instance_options(self) -> InstanceOptions:
        return InstanceOptions(
            max_seq_length=self.max_seq_length,
            short_seq_prob=self.short_seq_prob,
            dupe_factor=self.dupe_factor,
            sentence_order=self.sentence_order,
            short_seq_scope=self.short_seq_scope,
        )

    def shard_name(self, shard: int) -> str:
        return f"pretrain-{shard:05d}-of-{self.num_output_shards:05d}.tfrecord"

    def settings(self) -> dict:
        """The settings as the job's fingerprint and meta_data.json record them: the
        tokenizer as the official flags (`spm_model_file`, then `vocab_file` only for
        WordPiece, `do_lower_case`, `keep_accents`), and `zh_whole_word_mask` only when on,
        so that jobs keep the fingerprints and meta_data.json they had before these options
        existed (they resume)."""
        settings = dataclasses.asdict(self)
        spec = self.tokenizer
        del settings["tokenizer"]
        settings["spm_model_file"] = None if spec.kind == WORDPIECE else spec.path
        if spec.kind == WORDPIECE:
            settings["vocab_file"] = spec.path
        settings["do_lower_case"] = spec.do_lower_case
        settings["keep_accents"] = spec.keep_accents
        if not settings["zh_whole_word_mask"]:
            settings.pop("zh_whole_word_mask")
        return settings
