"""The runners' flags, defined once (DESIGN.md convention 3).

`define_pretraining_flags`, `define_classifier_flags` and `define_squad_flags` are each
runner's whole flag set, built on the shared groups (`define_trainer_flags`,
`define_finetuning_flags`, ...). Runners turn the parsed values into frozen configs with
`trainer_config_from_flags` and `albert_config_from_flags`; library code never reads flags.
"""

from __future__ import annotations

import os

from absl import flags

FLAGS = flags.FLAGS


def define_trainer_flags(
    learning_rate: float,
    optimizer: str,
    num_train_steps: int,
    num_warmup_steps: int,
    steps_per_loop: int = 100,
    save_checkpoints_steps: int = 1000,
) -> None:
    f = flags
    f.DEFINE_string("output_dir", None, "Checkpoints, TensorBoard events, run_config.json.")
    f.DEFINE_string("albert_config_file", None, "An albert_config.json (official keys).")
    f.DEFINE_string(
        "preset",
        None,
        "Instead of --albert_config_file: base, large, xlarge, "
        "xxlarge (v2: dropout 0), or base-v1 ... (dropout 0.1).",
    )
    f.DEFINE_string(
        "init_checkpoint",
        None,
        "Start from these weights (ours, albert_tf.checkpoints.convert, official TF1/TF-Hub).",
    )
    f.DEFINE_float("learning_rate", learning_rate, "Peak learning rate.")
    f.DEFINE_integer("num_train_steps", num_train_steps, "Optimizer steps.")
    f.DEFINE_integer("num_warmup_steps", num_warmup_steps, "Linear warmup steps.")
    f.DEFINE_enum(
        "optimizer",
        optimizer,
        ["lamb", "adamw", "lamb_keras", "adamw_keras"],
        "lamb / adamw: the official updates (no Adam bias correction; no decay "
        "and no trust ratio on LayerNorm and biases); *_keras: with Keras' bias "
        "correction (albert_tf.training.optimization).",
    )
    f.DEFINE_float("poly_power", 1.0, "Power of the polynomial learning-rate decay.")
    f.DEFINE_float("weight_decay_rate", 0.01, "Weight decay (not on LayerNorm and biases).")
    f.DEFINE_float("clip_norm", 1.0, "Global gradient-norm clip.")
    f.DEFINE_integer(
        "grad_accum_steps", 1, "Micro-batches per update (train_batch_size is the update's batch)."
    )
    f.DEFINE_integer(
        "steps_per_loop",
        steps_per_loop,
        "Steps per tf.function call (the official iterations_per_loop).",
    )
    f.DEFINE_integer("save_checkpoints_steps", save_checkpoints_steps, "Checkpoint period.")
    f.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.")
    f.DEFINE_integer("eval_every", 0, "Evaluate every N steps (0: at the end only).")
    f.DEFINE_integer("max_eval_steps", 100, "Evaluation batches at most.")
    f.DEFINE_enum(
        "strategy",
        "default",
        ["default", "one_device", "mirrored", "multi_worker_mirrored", "tpu"],
        "tf.distribute strategy.",
    )
    f.DEFINE_string("tpu", None, "TPU name or grpc:// address (--strategy tpu).")
    f.DEFINE_integer("num_gpus", 0, "GPUs to use (mirrored/one_device; 0: all / CPU).")
    f.DEFINE_enum(
        "dtype",
        "float32",
        ["float32", "bfloat16", "float16"],
        "Compute dtype (mixed precision; float16 adds loss scaling).",
    )
    f.DEFINE_bool("jit_compile", False, "XLA-compile the per-replica step.")
    f.DEFINE_enum(
        "recompute",
        "none",
        ["none", "layer", "group"],
        "Activation recomputation: keep only each layer's (group's) input for the backward "
        "pass and recompute its activations there; less memory for one more forward "
        "(albert_tf.modeling.recompute).",
    )
    f.DEFINE_integer("seed", 12345, "Seed of initialization, dropout and input order.")
    f.DEFINE_enum(
        "on_nonfinite",
        "stop",
        ["stop", "skip_step"],
        "A NaN/inf loss or gradient: stop with an error naming the step (nothing from it is "
        "written), or skip that update and go on (counted in the log).",
    )


def define_export_format_flags() -> None:
    """--export_format and --export_quantize: what `--export_dir` receives."""
    from albert_tf.serving.export import FORMATS
    from albert_tf.serving.litert import QUANTIZATIONS

    flags.DEFINE_multi_enum(
        "export_format",
        ["savedmodel"],
        list(FORMATS),
        "--export_dir: savedmodel (EXPORT_DIR/N) and/or tflite (on-device LiteRT files in "
        "EXPORT_DIR/litert/, one per --export_quantize).",
    )
    flags.DEFINE_list(
        "export_quantize",
        ["float32", "float16", "int8"],
        f"--export_format tflite: the weights' precisions ({', '.join(QUANTIZATIONS)}).",
    )

    def _known(values):
        return set(values) <= set(QUANTIZATIONS)

    flags.register_validator(
        "export_quantize", _known, f"--export_quantize takes {', '.join(QUANTIZATIONS)}"
    )


def export_formats_from_flags() -> dict:
    """export_trained's / export_formats' `formats` and `quantize` from the flags."""
    return {"formats": tuple(FLAGS.export_format), "quantize": tuple(FLAGS.export_quantize)}


def squad_head_from_flags() -> str:
    """--squad_head, defaulting to the official code's: albert for v2.0, bert for v1.1."""
    if FLAGS.squad_head:
        return FLAGS.squad_head
    return "albert" if FLAGS.version_2_with_negative else "bert"


def define_finetuning_flags(
    learning_rate: float, max_seq_length: int, num_train_epochs: float, export_help: str
) -> None:
    """The trainer's flags plus those every fine-tuning runner shares (official names)."""
    define_trainer_flags(
        learning_rate=learning_rate,
        optimizer="adamw",
        num_train_steps=0,
        num_warmup_steps=0,
        steps_per_loop=100,
        save_checkpoints_steps=1000,
    )
    f = flags
    f.DEFINE_string(
        "spm_model_file",
        None,
        "SentencePiece model of the pretrained model; or give --vocab_file.",
    )
    f.DEFINE_string(
        "vocab_file",
        None,
        "WordPiece vocab.txt of the pretrained model (the official Chinese ALBERTs, "
        "brightmart's albert_zh); or give --spm_model_file.",
    )
    f.DEFINE_bool("do_lower_case", True, "Lowercase (uncased models).")
    f.DEFINE_integer(
        "max_seq_length", max_seq_length, "Tokens per sequence (truncated as the official code)."
    )
    f.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
    f.DEFINE_float("num_train_epochs", num_train_epochs, "Epochs when no step count is given.")
    f.DEFINE_integer("train_step", 0, "Training steps (official flag; overrides epochs).")
    f.DEFINE_float("warmup_proportion", 0.1, "Warmup as a fraction of training steps.")
    f.DEFINE_integer("warmup_step", 0, "Warmup steps (official flag; overrides the proportion).")
    f.DEFINE_float(
        "albert_dropout",
        None,
        "Hidden and attention dropout of the encoder while fine-tuning (the paper's "
        '"ALBERT DR"; default: the config\'s).',
    )
    f.DEFINE_enum(
        "recipe",
        None,
        ["paper"],
        "paper: the ALBERT paper's hyper-parameters for the task (Table 14, and the "
        "official code's where the paper gives none; albert_tf/training/recipes.py), each "
        "printed with its source. Flags given on the command line win.",
    )
    f.DEFINE_string("export_dir", None, export_help)
    define_export_format_flags()
    f.DEFINE_bool(
        "pad_to_max_seq_length",
        False,
        "Train, evaluate and predict in batches padded to max_seq_length (static shapes, "
        "what TPUs need; implied by --strategy tpu) instead of batches grouped by length "
        "and padded to their bucket (--length_buckets).",
    )
    f.DEFINE_string(
        "length_buckets",
        "16,32,48,64,80,96,112,128,160,192,224,256,320,384,448,512",
        "The lengths a batch of similar-length examples is padded to (those below "
        "max_seq_length, then max_seq_length): one traced shape each.",
    )


def define_classification_task_flags() -> None:
    """The flags of a classification task (`data_pipeline.classification.tasks.TaskSpec`):
    which task, and where and how its files are."""
    f = flags
    f.DEFINE_string(
        "task_name",
        None,
        "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, "
        "chnsenticorp, afqmc; race, multiple_choice_jsonl; csv, tsv, jsonl.",
    )
    f.DEFINE_string("data_dir", None, "The task's directory (its train/dev/test files).")
    # The user's own data and multiple choice.
    f.DEFINE_string(
        "train_file",
        None,
        "csv/tsv/jsonl/race tasks: the training file (default DATA_DIR/train.EXT).",
    )
    f.DEFINE_string("dev_file", None, "... the dev file (default DATA_DIR/dev.EXT).")
    f.DEFINE_string("test_file", None, "... the test file (default DATA_DIR/test.EXT).")
    f.DEFINE_string("text_a_column", "text_a", "csv/tsv/jsonl: first text column.")
    f.DEFINE_string("text_b_column", None, "csv/tsv/jsonl: second text column, if any.")
    f.DEFINE_string("label_column", "label", "csv/tsv/jsonl: label column.")
    f.DEFINE_bool("regression", False, "csv/tsv/jsonl: the label is a number (MSE).")
    f.DEFINE_integer("num_choices", 4, "race/multiple_choice_jsonl: choices per question.")


def classification_task_from_flags():
    """The TaskSpec of the flags of `define_classification_task_flags`."""
    from data_pipeline.classification.tasks import TaskSpec

    return TaskSpec(
        FLAGS.task_name,
        FLAGS.data_dir,
        FLAGS.train_file,
        FLAGS.dev_file,
        FLAGS.test_file,
        FLAGS.text_a_column,
        FLAGS.text_b_column,
        FLAGS.label_column,
        FLAGS.regression,
        FLAGS.num_choices,
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


def micro_batch_size(train_batch_size: int, grad_accum_steps: int, replicas: int) -> int:
    """The global micro-batch: --train_batch_size split into --grad_accum_steps parts, each
    split again over the replicas. Raises ValueError (one line) unless both splits are
    exact, rather than silently training on fewer examples per update or failing inside
    tf.distribute."""
    micro = train_batch_size // grad_accum_steps
    if micro * grad_accum_steps != train_batch_size or micro % replicas:
        raise ValueError(
            f"--train_batch_size={train_batch_size} must be divisible by "
            f"--grad_accum_steps={grad_accum_steps} × {replicas} replicas"
        )
    return micro


# --- up-front validation: one-line ValueErrors, before a runner writes anything --------------
# Each runner calls its `check_*_flags` first; the ranges are checked here rather than with
# `flags.register_validator`, whose failure absl reports as two lines (the error and a
# "Pass --helpshort" hint), not the runners' one `error: ...` line.


def _check_range(names, minimum: int | float, strict: bool = False) -> None:
    """Each defined flag of `names` (None: not given) is >= minimum (> with strict)."""
    for name in names:
        if name not in FLAGS or FLAGS[name].value is None:
            continue
        value = FLAGS[name].value
        if value < minimum or (strict and value == minimum):
            raise ValueError(f"--{name}={value} must be {'>' if strict else '>='} {minimum}")


def check_trainer_flags() -> None:
    """The trainer's flags and the batch sizes: ValueError (one line, naming the flag)
    unless each is in range; a given --init_checkpoint must be readable."""
    _check_range(
        (
            "train_batch_size",
            "eval_batch_size",
            "predict_batch_size",
            "grad_accum_steps",
            "steps_per_loop",
            "save_checkpoints_steps",
            "keep_checkpoint_max",
            "max_eval_steps",
        ),
        1,
    )
    _check_range(
        ("num_warmup_steps", "eval_every", "weight_decay_rate", "num_gpus", "poly_power"), 0
    )
    _check_range(("clip_norm",), 0, strict=True)
    # (0 is allowed: a run at learning rate 0 keeps its weights, e.g. to evaluate them.)
    _check_range(("learning_rate",), 0)
    if FLAGS.init_checkpoint:
        check_init_checkpoint(FLAGS.init_checkpoint)


def check_init_checkpoint(path: str) -> None:
    """ValueError (one line) when --init_checkpoint names no checkpoint, or one whose index
    does not read or whose data files are missing (a truncated copy); read before anything
    is written. (A data file cut short is found when the weights are read.)"""
    from albert_tf.checkpoints.own import resolve_checkpoint
    from albert_tf.training.resume import unreadable

    try:
        prefix = resolve_checkpoint(path)
    except FileNotFoundError as e:
        raise ValueError(f"--init_checkpoint={path}: {e}") from None
    why = unreadable(prefix)
    if why:
        raise ValueError(f"--init_checkpoint={path}: {prefix} cannot be used: {why}")


def check_pretraining_flags() -> None:
    """check_trainer_flags for a pretraining run (it always trains: --num_train_steps >= 1),
    and the record lengths when given."""
    check_trainer_flags()
    _check_range(("num_train_steps", "max_seq_length", "max_predictions_per_seq"), 1)
    _check_length_buckets()


def _check_length_buckets() -> None:
    try:
        length_buckets_from_flags()
    except ValueError as e:
        raise ValueError(f"--length_buckets: {e}") from None


def check_finetuning_flags(training: bool) -> None:
    """check_trainer_flags plus the flags every fine-tuning runner shares: step counts
    (0: derived from the epochs), warmup, the sequence length."""
    check_trainer_flags()
    _check_range(("num_train_steps", "train_step", "warmup_step"), 0)
    _check_range(("max_seq_length",), 3)
    if FLAGS.albert_dropout is not None and not 0 <= FLAGS.albert_dropout < 1:
        raise ValueError(f"--albert_dropout={FLAGS.albert_dropout} must be in [0, 1)")
    if not 0 <= FLAGS.warmup_proportion <= 1:
        raise ValueError(f"--warmup_proportion={FLAGS.warmup_proportion} must be in [0, 1]")
    _check_length_buckets()
    if training and not (FLAGS.train_step or FLAGS.num_train_steps):
        _check_range(("num_train_epochs",), 0, strict=True)


def check_classifier_flags() -> None:
    """run_classifier.py's flags (check_finetuning_flags and its own)."""
    check_finetuning_flags(FLAGS.do_train)
    _check_range(("num_runs", "num_choices"), 1)
    _check_range(("max_train_examples",), 0)
    if not 0 <= FLAGS.classifier_dropout < 1:
        raise ValueError(f"--classifier_dropout={FLAGS.classifier_dropout} must be in [0, 1)")


def check_squad_flags() -> None:
    """run_squad.py's flags (check_finetuning_flags and its own): what to do and on which
    files, windows and answers."""
    if not (FLAGS.do_train or FLAGS.do_predict or FLAGS.do_eval):
        raise ValueError("nothing to do: give --do_train, --do_predict and/or --do_eval")
    if FLAGS.eval_metric == "cmrc2018" and FLAGS.version_2_with_negative:
        raise ValueError(
            "--eval_metric cmrc2018 scores answerable questions only (CMRC 2018 has no "
            "unanswerable ones); drop --version_2_with_negative or use --eval_metric squad"
        )
    if FLAGS.do_train and not FLAGS.train_file:
        raise ValueError("--do_train needs --train_file")
    if (FLAGS.do_predict or FLAGS.do_eval) and not FLAGS.predict_file:
        raise ValueError("--do_predict/--do_eval need --predict_file")
    if FLAGS.tune_threshold_on and not FLAGS.version_2_with_negative:
        raise ValueError("--tune_threshold_on is for SQuAD v2.0 (--version_2_with_negative)")
    check_finetuning_flags(FLAGS.do_train)
    _check_range(("doc_stride", "max_query_length", "n_best_size", "max_answer_length"), 1)
    if FLAGS.max_seq_length < FLAGS.max_query_length + 4:
        raise ValueError(
            f"--max_seq_length={FLAGS.max_seq_length} leaves no room for context after "
            f"--max_query_length={FLAGS.max_query_length} (needs at least max_query_length + 4)"
        )


def check_output_dir(path: str | None, flag: str = "--output_dir") -> None:
    """ValueError (one line) when `path` is not a directory this process can write to, or
    cannot be created (its nearest existing ancestor is a file or not writable). Remote
    file systems (gs://, ...) are left to their first use."""
    if not path:
        raise ValueError(f"{flag} is required")
    if "://" in path:
        return
    target = os.path.abspath(path)
    existing = target
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if existing == target:
        if not os.path.isdir(target):
            raise ValueError(f"{flag}={path} is not a directory")
        if not os.access(target, os.W_OK | os.X_OK):
            raise ValueError(f"{flag}={path} is not writable")
    elif not os.path.isdir(existing):
        raise ValueError(f"{flag}={path} cannot be created: {existing} is not a directory")
    elif not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{flag}={path} cannot be created: {existing} is not writable")


def config_source() -> str:
    """Where the model config comes from, as the user gave it (for error messages)."""
    if FLAGS.albert_config_file:
        return f"--albert_config_file={FLAGS.albert_config_file}"
    return f"--preset={FLAGS.preset}"


def check_sequence_length(
    albert_config, max_seq_length: int, what: str = "--max_seq_length", source: str | None = None
) -> None:
    """ValueError unless sequences of `max_seq_length` fit the model's position table.
    `what`: who sets the length (a flag, or the records' meta_data.json); `source`: where
    the config comes from (default: the flags, `config_source`)."""
    if max_seq_length > albert_config.max_position_embeddings:
        raise ValueError(
            f"{what}={max_seq_length} is more than max_position_embeddings="
            f"{albert_config.max_position_embeddings} of {source or config_source()}"
        )


def check_vocab_size(albert_config, vocab_size: int, what: str, source: str | None = None) -> None:
    """ValueError unless the model's word embeddings have a row for every id of a
    vocabulary of `vocab_size` pieces (`what`: where that vocabulary is; `source`: as for
    `check_sequence_length`). A larger model vocabulary is fine (released models pad
    theirs); a smaller one fails on the first large id, or on GPU silently reads zeros."""
    if vocab_size > albert_config.vocab_size:
        raise ValueError(
            f"{what} has {vocab_size:,} pieces, but vocab_size={albert_config.vocab_size:,} "
            f"in {source or config_source()}: ids >= {albert_config.vocab_size:,} have no "
            "embedding"
        )


def check_records_vocabulary(albert_config, files: list[str]) -> None:
    """check_vocab_size for the vocabulary each meta_data.json beside pretraining records
    `files` records (records without one are not checked)."""
    from data_pipeline.pretraining.meta_data import read_meta_data

    for directory in dict.fromkeys(os.path.dirname(f) for f in files):
        found = read_meta_data(directory)
        if found and isinstance(found[1].get("vocab_size"), int):
            path, meta = found
            check_vocab_size(albert_config, meta["vocab_size"], f"{path}: the records' vocabulary")


def resolve_tokenizer_flags() -> None:
    """With --spm_model_file, --vocab_file is not read (the official precedence, and
    official command lines pass both: `data_pipeline.tokenization.spec`); it is dropped so
    that every later check sees the one tokenizer. Runners call this first."""
    if "vocab_file" in FLAGS and FLAGS.spm_model_file and FLAGS.vocab_file:
        FLAGS.vocab_file = None


def finetuning_inputs_from_flags(check_flags) -> tuple:
    """The checks run_classifier and run_squad make before their first write (the feature
    cache in OUTPUT_DIR/cache): `check_flags()` (the runner's ranges), the output directory,
    the sequence length against the config's positions and the tokenizer's vocabulary
    against the config's. The tokenizer is --spm_model_file's or else --vocab_file's
    (`TokenizerSpec.from_files`). Returns (albert_config, tokenizer)."""
    from data_pipeline.tokenization.spec import TokenizerSpec

    check_flags()
    spec = TokenizerSpec.from_files(FLAGS.spm_model_file, FLAGS.vocab_file, FLAGS.do_lower_case)
    squad = "doc_stride" in FLAGS  # (run_squad's flags)
    if squad and FLAGS.vocab_file and FLAGS.export_dir and "tflite" in FLAGS.export_format:
        raise ValueError(
            f"--export_format tflite with --vocab_file={FLAGS.vocab_file}: on-device SQuAD "
            "files of WordPiece models are not written (export --export_format savedmodel)"
        )
    check_output_dir(FLAGS.output_dir)
    albert_config = albert_config_from_flags()
    check_sequence_length(albert_config, FLAGS.max_seq_length)
    tokenizer = spec.build()
    if FLAGS.spm_model_file:
        given = f"--spm_model_file={FLAGS.spm_model_file}"
    else:
        given = f"--vocab_file={FLAGS.vocab_file}"
    check_vocab_size(albert_config, tokenizer.vocab_size, given)
    return albert_config, tokenizer


def length_buckets_from_flags() -> tuple[int, ...] | None:
    """The buckets batches are grouped by length into (data_pipeline.length_buckets), or
    None: batches padded to max_seq_length (--pad_to_max_seq_length, and on TPUs: static
    shapes)."""
    from data_pipeline.length_buckets import parse_buckets

    padded = "pad_to_max_seq_length" in FLAGS and FLAGS.pad_to_max_seq_length
    if padded or FLAGS.strategy == "tpu" or not FLAGS.length_buckets:
        return None
    return parse_buckets(FLAGS.length_buckets)


def trainer_config_from_flags(
    output_dir: str | None = None,
    num_train_steps: int | None = None,
    num_warmup_steps: int | None = None,
):
    """TrainerConfig from the flags; runners that derive the step counts (from epochs) pass
    them in."""
    from albert_tf.training import TrainerConfig

    return TrainerConfig(
        output_dir=output_dir or FLAGS.output_dir,
        num_train_steps=num_train_steps or FLAGS.num_train_steps,
        learning_rate=FLAGS.learning_rate,
        num_warmup_steps=FLAGS.num_warmup_steps if num_warmup_steps is None else num_warmup_steps,
        poly_power=FLAGS.poly_power,
        optimizer=FLAGS.optimizer,
        weight_decay_rate=FLAGS.weight_decay_rate,
        clip_norm=FLAGS.clip_norm,
        grad_accum_steps=FLAGS.grad_accum_steps,
        steps_per_loop=FLAGS.steps_per_loop,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        eval_every=FLAGS.eval_every,
        max_eval_steps=FLAGS.max_eval_steps,
        jit_compile=FLAGS.jit_compile,
        dtype=FLAGS.dtype,
        seed=FLAGS.seed,
        on_nonfinite=FLAGS.on_nonfinite,
        recompute=FLAGS.recompute,
    )


def albert_config_from_flags():
    """--albert_config_file or --preset → AlbertConfig (exactly one must be given), with
    the encoder's hidden and attention dropout set to --albert_dropout where it is given."""
    from albert_tf.modeling.config import AlbertConfig

    if bool(FLAGS.albert_config_file) == bool(FLAGS.preset):
        raise ValueError("give exactly one of --albert_config_file and --preset")
    if FLAGS.albert_config_file:
        config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    else:
        config = AlbertConfig.preset(FLAGS.preset)
    dropout = FLAGS.albert_dropout if "albert_dropout" in FLAGS else None
    if dropout is not None:
        config = config.replace(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return config


def _as_list(values):
    return None if values is None else list(values)


def setup_run_from_flags(runner: str, trainer_config, albert_config, training: bool, **extra):
    """`run_setup.setup_run` with the flags every runner shares (strategy, TPU, GPUs, train
    batch) and a run_config.json of {"flags", "albert_config", **extra}."""
    from albert_tf.runners.run_setup import setup_run  # run_setup imports this module

    return setup_run(
        runner,
        trainer_config,
        strategy_name=FLAGS.strategy,
        tpu=FLAGS.tpu,
        num_gpus=FLAGS.num_gpus,
        train_batch_size=FLAGS.train_batch_size,
        training=training,
        run_config={
            "flags": FLAGS.flag_values_dict(),
            "albert_config": albert_config.to_dict(),
            # What a resumed run's batches must be built with (run_setup.check_same_batches).
            "input_pipeline": {"length_buckets": _as_list(length_buckets_from_flags())},
            **extra,
        },
    )


def define_pretraining_flags() -> None:
    """The flags of run_pretraining.py (its own, then the shared groups they build on)."""
    define_trainer_flags(
        learning_rate=0.00176,
        optimizer="lamb",
        num_train_steps=125000,
        num_warmup_steps=3125,
        steps_per_loop=1000,
        save_checkpoints_steps=5000,
    )
    flags.DEFINE_string("input_file", None, "Training TFRecords: comma-separated globs.")
    flags.DEFINE_string("eval_input_file", None, "Evaluation TFRecords (held-out documents).")
    flags.DEFINE_integer(
        "max_seq_length",
        None,
        "As the records were written (default: their meta_data.json, else their first record).",
    )
    flags.DEFINE_integer(
        "max_predictions_per_seq",
        None,
        "As the records were written (default: their meta_data.json, else their first record).",
    )
    flags.DEFINE_integer("train_batch_size", 4096, "Global batch size of one update.")
    flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation batch size.")
    flags.DEFINE_bool(
        "dynamic_masking",
        None,
        "Records written with --dynamic_masking: "
        "draw masks each epoch (default: as their meta_data.json says).",
    )
    flags.DEFINE_string(
        "spm_model_file",
        None,
        "SentencePiece model of the records (needed for dynamic masking and --export_dir); "
        "or --vocab_file.",
    )
    flags.DEFINE_string(
        "vocab_file",
        None,
        "WordPiece vocab.txt of the records (needed for dynamic masking and --export_dir); "
        "or --spm_model_file.",
    )
    flags.DEFINE_string(
        "length_buckets",
        "",
        "Train on batches of instances grouped by length and padded to these lengths "
        "(e.g. 128,256,384; max_seq_length is always one) instead of max_seq_length: for "
        "corpora whose documents are short (the last instance of a document, and "
        "short_seq_prob's, are short). Off by default (static shapes, as the official code).",
    )
    flags.DEFINE_string(
        "export_dir",
        None,
        "When done, export the encoder as a SavedModel "
        "that embeds raw text (albert_tf.serving.export: embed, encode, "
        "tokenize) as EXPORT_DIR/N (--export_format tflite: on-device files).",
    )
    define_export_format_flags()
    flags.DEFINE_bool(
        "do_lower_case",
        None,
        "--export_dir: the casing of the vocabulary "
        "(default: the records' meta_data.json, else lower-cased).",
    )
    flags.mark_flags_as_required(["input_file", "output_dir"])


def define_classifier_flags() -> None:
    """The flags of run_classifier.py (its own, then the shared groups they build on)."""
    define_finetuning_flags(
        learning_rate=3e-5,
        max_seq_length=512,
        num_train_epochs=3.0,
        export_help="When done, export a SavedModel that takes raw text as EXPORT_DIR/N "
        "(next version; albert_tf.serving.export), with the fine-tuned checkpoint, "
        "vocabulary and task.json in N/assets.extra/finetuned. With --num_runs, one per run.",
    )
    define_classification_task_flags()
    flags.DEFINE_bool("do_train", False, "Fine-tune on the train split.")
    flags.DEFINE_bool("do_eval", False, "Evaluate on the dev split(s).")
    flags.DEFINE_bool("do_predict", False, "Predict the test split.")
    flags.DEFINE_integer("eval_batch_size", 8, "Evaluation/prediction batch size.")
    flags.DEFINE_float("classifier_dropout", 0.1, "Dropout on the pooled output.")
    flags.DEFINE_integer(
        "max_train_examples",
        0,
        "Fine-tune on this many training examples "
        "at most, drawn at random with --seed (0: all): learning curves, "
        "low-resource comparisons.",
    )
    flags.DEFINE_integer(
        "num_runs",
        1,
        "Fine-tune with seeds seed, seed+1, ...; "
        "eval_results.json reports median, min, max and std.",
    )
    flags.mark_flags_as_required(["task_name", "output_dir"])


def define_squad_flags() -> None:
    """The flags of run_squad.py (its own, then the shared groups they build on)."""
    define_finetuning_flags(
        learning_rate=5e-5,
        max_seq_length=384,
        num_train_epochs=2.0,
        export_help="When done, export a SavedModel that answers questions from raw text "
        "as EXPORT_DIR/N (albert_tf.serving.export; v2.0 with the tuned threshold when "
        "--tune_threshold_on is given).",
    )
    flags.DEFINE_string("train_file", None, "SQuAD-format JSON to train on.")
    flags.DEFINE_string("predict_file", None, "SQuAD-format JSON to predict (and score).")
    flags.DEFINE_bool("do_train", False, "Fine-tune on --train_file.")
    flags.DEFINE_bool("do_predict", False, "Write predictions for --predict_file.")
    flags.DEFINE_bool("do_eval", False, "Score the predictions of --predict_file (EM, F1).")
    flags.DEFINE_bool("version_2_with_negative", False, "SQuAD v2.0: unanswerable questions.")
    flags.DEFINE_enum(
        "eval_metric",
        "squad",
        ["squad", "cmrc2018"],
        "--do_eval: squad, the official SQuAD v1.1/v2.0 script (F1 over whitespace words: "
        "on Chinese text it equals EM); cmrc2018, the CMRC 2018 script's EM and F1 (each "
        "CJK character a segment; data_pipeline.squad.cmrc_evaluation).",
    )
    flags.DEFINE_enum(
        "squad_head",
        None,
        ["albert", "bert"],
        "albert: the official ALBERT v2.0 head (start/end beam + answer-class logit; the "
        "default for v2.0); bert: start/end logits with the [CLS] null score (the default "
        "for v1.1, the official v1.1 head).",
    )
    flags.DEFINE_integer("start_n_top", 5, "--squad_head albert: starts in the beam.")
    flags.DEFINE_integer("end_n_top", 5, "--squad_head albert: ends per start in the beam.")
    flags.DEFINE_integer("doc_stride", 128, "Context tokens between window starts.")
    flags.DEFINE_integer("max_query_length", 64, "Question tokens kept.")
    flags.DEFINE_integer("predict_batch_size", 32, "Prediction batch size.")
    flags.DEFINE_integer("n_best_size", 20, "Start and end candidates per window.")
    flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in tokens.")
    flags.DEFINE_float(
        "null_score_diff_threshold",
        0.0,
        "v2.0: predict no answer when null score - best span score > this.",
    )
    flags.DEFINE_string(
        "tune_threshold_on",
        None,
        "v2.0: a separate SQuAD v2.0 file; the threshold maximizing F1 on "
        "it is reported and applied to --predict_file as well.",
    )
    flags.mark_flags_as_required(["output_dir"])
