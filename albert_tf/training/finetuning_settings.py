"""The fine-tuning settings every family shares (flags generated from them by
`data_pipeline.command`): where the model comes from, the schedule, sequence length,
tokenizer and batches; and what is built from a settings value: the AlbertConfig, the
TokenizerSpec, the length buckets, the schedule (steps, warmup).

Nothing here imports TensorFlow at module level: `--help` and range errors come first."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import Bounds, setting


@dataclasses.dataclass(frozen=True)
class ModelSettings:
    """The model: its config (a file or a preset) and its starting weights."""

    albert_config_file: str | None = setting(None, "An albert_config.json (official keys).")
    preset: str | None = setting(
        None,
        "Instead of --albert_config_file: base, large, xlarge, xxlarge (v2: dropout 0), or "
        "base-v1 ... (dropout 0.1).",
    )
    init_checkpoint: str | None = setting(
        None,
        "Start from these weights (ours, albert_tf.checkpoints.convert, official TF1/TF-Hub).",
    )


@dataclasses.dataclass(frozen=True)
class FinetuningSettings:
    """The fine-tuning schedule, sequence length, tokenizer and batches."""

    max_seq_length: int = setting(
        help="Tokens per sequence (truncated as the official code).", minimum=3
    )
    num_train_epochs: float = setting(help="Epochs when no step count is given.", sweepable=True)
    spm_model_file: str | None = setting(
        None, "SentencePiece model of the pretrained model; or give --vocab_file."
    )
    vocab_file: str | None = setting(
        None,
        "WordPiece vocab.txt of the pretrained model (the official Chinese ALBERTs, "
        "brightmart's albert_zh); or give --spm_model_file.",
    )
    do_lower_case: bool = setting(True, "Lowercase (uncased models).")
    train_batch_size: int = setting(
        32, "Global training batch size.", minimum=1, resume="guarded", sweepable=True
    )
    train_step: int = setting(
        0, "Training steps (official flag; overrides epochs).", minimum=0, sweepable=True
    )
    warmup_proportion: float = setting(
        0.1, "Warmup as a fraction of training steps.", minimum=0, maximum=1, sweepable=True
    )
    warmup_step: int = setting(
        0, "Warmup steps (official flag; overrides the proportion).", minimum=0
    )
    albert_dropout: float | None = setting(
        None,
        "Hidden and attention dropout of the encoder while fine-tuning (the paper's "
        '"ALBERT DR"; default: the config\'s).',
        minimum=0,
        below=1,
    )
    recipe: str | None = setting(
        None,
        "paper: the ALBERT paper's hyper-parameters for the task (Table 14, and the "
        "official code's where the paper gives none; albert_tf/training/recipes.py), each "
        "printed with its source. Flags given on the command line win.",
        choices=("paper",),
    )
    pad_to_max_seq_length: bool = setting(
        False,
        "Train, evaluate and predict in batches padded to max_seq_length (static shapes, "
        "what TPUs need; implied by --strategy tpu) instead of batches grouped by length "
        "and padded to their bucket (--length_buckets).",
    )
    length_buckets: str = setting(
        "16,32,48,64,80,96,112,128,160,192,224,256,320,384,448,512",
        "The lengths a batch of similar-length examples is padded to (those below "
        "max_seq_length, then max_seq_length): one traced shape each.",
    )


# --- what is built from a settings value ------------------------------------------------


def config_source(s) -> str:
    """Where the model config comes from, as the user gave it (for error messages)."""
    if s.albert_config_file:
        return f"--albert_config_file={s.albert_config_file}"
    return f"--preset={s.preset}"


def albert_config(s, dropout: float | None = None):
    """--albert_config_file or --preset → AlbertConfig (exactly one must be given), with
    the encoder's hidden and attention dropout set to `dropout` where it is given."""
    from albert_tf.modeling.config import AlbertConfig

    if bool(s.albert_config_file) == bool(s.preset):
        raise ValueError("give exactly one of --albert_config_file and --preset")
    if s.albert_config_file:
        config = AlbertConfig.from_json_file(s.albert_config_file)
    else:
        config = AlbertConfig.preset(s.preset)
    if dropout is not None:
        config = config.replace(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return config


def finetuning_config(s):
    """The fine-tuned model's config: `albert_config` with --albert_dropout."""
    return albert_config(s, s.albert_dropout)


def tokenizer_spec(s):
    """The one TokenizerSpec of --spm_model_file / --vocab_file (the SentencePiece model
    wins: data_pipeline.tokenization.spec) and --do_lower_case."""
    from data_pipeline.tokenization.spec import TokenizerSpec

    return TokenizerSpec.from_files(s.spm_model_file, s.vocab_file, s.do_lower_case)


def length_buckets(s) -> tuple[int, ...] | None:
    """The fine-tuning batches' buckets, or None (padded to max_seq_length)."""
    from data_pipeline.length_buckets import batch_buckets

    return batch_buckets(s.length_buckets, s.pad_to_max_seq_length, s.strategy)


def schedule(s, train_examples: int) -> tuple[int, int]:
    """(training steps, warmup steps) from --train_step / --num_train_steps, else epochs ×
    examples / batch; warmup from --warmup_step / --num_warmup_steps, else the proportion."""
    steps = (
        s.train_step
        or s.num_train_steps
        or max(1, int(train_examples * s.num_train_epochs / s.train_batch_size))
    )
    warmup = s.warmup_step or s.num_warmup_steps or int(steps * s.warmup_proportion)
    return steps, warmup


def check_epochs(s) -> None:
    """Epochs > 0 when training derives its steps from them."""
    if s.do_train and not (s.train_step or s.num_train_steps):
        message = Bounds(above=0).error("--num_train_epochs", s.num_train_epochs)
        if message:
            raise ValueError(message)


FINETUNING_BOUNDS = {"num_train_steps": Bounds(minimum=0)}  # 0: derived from the epochs
