"""DataConfig: every setting that determines a pretraining-data job's output, checked
whole when it is made, before any worker process or Beam worker starts.

Both writers (the local one, `local_writer.py`, and the Beam pipeline, `beam_writer.py`)
take a DataConfig; the command line (`create_pretraining_data.py`) builds it from its
flags. A setting out of range is a ValueError of one line naming it, raised here: a value
only a worker would reject used to crash every worker at start-up (and the pool restarted
them forever).

The tokenizer is one value, a `TokenizerSpec` (data_pipeline.tokenization.spec: kind, file,
casing). `settings()` spells it as the official flags did (`spm_model_file`, `vocab_file`
when WordPiece, `do_lower_case`, `keep_accents`), so the job's fingerprint and
meta_data.json keep the form they had.
"""

from __future__ import annotations

import dataclasses

from data_pipeline import documents as documents_lib
from data_pipeline.pretraining import chinese_words
from data_pipeline.pretraining.instances import InstanceOptions
from data_pipeline.pretraining.masking import NgramMasker
from data_pipeline.tokenization.spec import WORDPIECE, TokenizerSpec

META_FILE = "meta_data.json"
FORMAT_VERSION = 1
# The official flags that make `DataConfig.tokenizer` (the other flags are fields by name).
TOKENIZER_FLAGS = ("spm_model_file", "vocab_file", "do_lower_case", "keep_accents")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Every setting that determines the output (the official flags and ours). `tokenizer`
    is the SentencePiece model or WordPiece vocab.txt with its casing."""

    input_file: str
    output_dir: str
    tokenizer: TokenizerSpec
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    ngram: int = 3
    favor_shorter_ngram: bool = True
    do_whole_word_mask: bool = True
    calibrate_ngrams: bool = True
    short_seq_prob: float = 0.1
    short_seq_scope: str = "document"
    dupe_factor: int = 40
    random_seed: int = 12345
    sentence_order: str = "sop"
    dynamic_masking: bool = False
    input_format: str = "auto"
    split_sentences: bool = False
    block_size: int = 1 << 20
    num_output_shards: int = 16
    zh_whole_word_mask: bool = False  # jieba words of Chinese text are whole-word units

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
        spec = TokenizerSpec.from_files(spm_model_file, vocab_file, do_lower_case, keep_accents)
        return cls(tokenizer=spec, **settings)

    @classmethod
    def flag_names(cls) -> list[str]:
        """The flags `from_flags` takes: the fields, with `TOKENIZER_FLAGS` for `tokenizer`."""
        fields = [f.name for f in dataclasses.fields(cls) if f.name != "tokenizer"]
        return [*TOKENIZER_FLAGS, *fields]

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
