"""The flags run_classifier and run_squad share (official names), generated from
`FinetuningSettings`, and what both build from them: the step schedule, the length
buckets, the model config with --albert_dropout, and the checked inputs (config and
tokenizer) before the first write."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from absl import flags

from albert_tf.runners import checks, trainer_flags
from data_pipeline.cli import Bounds, define_flags_from, setting

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class FinetuningSettings:
    """What every fine-tuning runner reads besides the trainer's settings."""

    max_seq_length: int = setting(
        help="Tokens per sequence (truncated as the official code).", minimum=3
    )
    num_train_epochs: float = setting(help="Epochs when no step count is given.")
    spm_model_file: str | None = setting(
        None, "SentencePiece model of the pretrained model; or give --vocab_file."
    )
    vocab_file: str | None = setting(
        None,
        "WordPiece vocab.txt of the pretrained model (the official Chinese ALBERTs, "
        "brightmart's albert_zh); or give --spm_model_file.",
    )
    do_lower_case: bool = setting(True, "Lowercase (uncased models).")
    train_batch_size: int = setting(32, "Global training batch size.", minimum=1)
    train_step: int = setting(0, "Training steps (official flag; overrides epochs).", minimum=0)
    warmup_proportion: float = setting(
        0.1, "Warmup as a fraction of training steps.", minimum=0, maximum=1
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


def define_finetuning_flags(
    learning_rate: float, max_seq_length: int, num_train_epochs: float
) -> None:
    """The trainer's flags (adamw; --num_train_steps 0: from the epochs) and
    FinetuningSettings' with the runner's defaults."""
    trainer_flags.define_trainer_flags(
        steps_may_be_zero=True,
        learning_rate=learning_rate,
        optimizer="adamw",
        num_train_steps=0,
        num_warmup_steps=0,
    )
    define_flags_from(
        FinetuningSettings,
        FLAGS,
        defaults={"max_seq_length": max_seq_length, "num_train_epochs": num_train_epochs},
    )


def finetuning_schedule(train_examples: int) -> tuple[int, int]:
    """(training steps, warmup steps) from --train_step / --num_train_steps, else epochs ×
    examples / batch; warmup from --warmup_step / --num_warmup_steps, else the proportion."""
    steps = (
        FLAGS.train_step
        or FLAGS.num_train_steps
        or max(1, int(train_examples * FLAGS.num_train_epochs / FLAGS.train_batch_size))
    )
    warmup = FLAGS.warmup_step or FLAGS.num_warmup_steps or int(steps * FLAGS.warmup_proportion)
    return steps, warmup


def length_buckets_from_flags() -> tuple[int, ...] | None:
    """The buckets batches are grouped by length into, or None: batches padded to
    max_seq_length (--pad_to_max_seq_length, and on TPUs)."""
    return trainer_flags.batch_buckets(
        FLAGS.length_buckets, FLAGS.pad_to_max_seq_length, FLAGS.strategy
    )


def albert_config_from_flags():
    """The model config (--albert_config_file or --preset) with --albert_dropout applied."""
    return trainer_flags.albert_config_from_flags(FLAGS.albert_dropout)


def tokenizer_spec_from_flags():
    """The one TokenizerSpec of --spm_model_file / --vocab_file (the SentencePiece model
    wins: data_pipeline.tokenization.spec) and --do_lower_case."""
    from data_pipeline.tokenization.spec import TokenizerSpec

    return TokenizerSpec.from_files(FLAGS.spm_model_file, FLAGS.vocab_file, FLAGS.do_lower_case)


def check_finetuning_flags(training: bool) -> None:
    """Every range (`checks.check_common_flags`), the length buckets, and epochs > 0 when
    training derives its steps from them."""
    checks.check_common_flags()
    length_buckets_from_flags()
    if training and not (FLAGS.train_step or FLAGS.num_train_steps):
        message = Bounds(above=0).error("--num_train_epochs", FLAGS.num_train_epochs)
        if message:
            raise ValueError(message)


class FinetuningInputs(NamedTuple):
    """What a fine-tuning runner starts from, checked: the AlbertConfig, the tokenizer's
    spec (for exports) and the tokenizer."""

    albert_config: object
    tokenizer_spec: object
    tokenizer: object


def finetuning_inputs_from_flags(check_flags) -> FinetuningInputs:
    """The checks run_classifier and run_squad make before their first write (the feature
    cache in OUTPUT_DIR/cache): `check_flags()` (the runner's), the tokenizer flags, the
    output directory, the sequence length against the config's positions and the
    tokenizer's vocabulary against the config's, and against the tokenizer the
    --init_checkpoint records (a run, an encoder export, a convert output, a fine-tuned
    directory; albert_tf.checkpoints.tokenizer_record)."""
    from albert_tf.checkpoints.tokenizer_record import check_tokenizer
    from albert_tf.runners.run_setup import tokenizer_identity

    check_flags()
    spec = tokenizer_spec_from_flags()
    checks.check_output_dir(FLAGS.output_dir)
    albert_config = albert_config_from_flags()
    checks.check_sequence_length(albert_config, FLAGS.max_seq_length)
    tokenizer = spec.build()
    given = f"{spec.flag}={spec.path}"
    checks.check_vocab_size(albert_config, tokenizer.vocab_size, given)
    if FLAGS.init_checkpoint:
        check_tokenizer(FLAGS.init_checkpoint, tokenizer_identity(tokenizer), given)
    return FinetuningInputs(albert_config, spec, tokenizer)


def checked_identity(
    runner: str, task: str, inputs: FinetuningInputs, labels, train_file, **settings
):
    """The run's `RunIdentity` (task, labels, model config, tokenizer sha256, the training
    file's sha256 and the `settings` its features are built with), checked against the
    record of a run already in --output_dir before the first write there
    (`run_setup.check_same_run`: one line naming what differs)."""
    from albert_tf.runners.run_setup import check_same_run, run_identity, training_file_identity

    data = training_file_identity(train_file, **settings) if FLAGS.do_train else None
    identity = run_identity(runner, task, inputs.albert_config, inputs.tokenizer, labels, data)
    check_same_run(FLAGS.output_dir, identity, FLAGS.do_train)
    return identity
