"""The ALBERT paper's fine-tuning recipes: per-task hyper-parameters, each with its source.

Fine-tuning large ALBERTs is sensitive to its hyper-parameters: with generic defaults runs
diverge or land far from the paper, and the paper's values, in an appendix table, have to
be found and typed by hand. `paper_recipe(task, model_size)` returns them for the twelve
tasks the paper reports, as `Setting`s named like the fine-tuning runners' flags; each
names its source, and, where an official script uses another value, that value too.

Sources:
  - Lan et al. 2019, "ALBERT: A Lite BERT for Self-supervised Learning of Language
    Representations" (arXiv 1909.11942), Appendix A.4, Table 14 "Hyperparameters for ALBERT
    in downstream tasks": learning rate (LR), batch size (BSZ), ALBERT dropout (ALBERT DR:
    hidden and attention dropout of the encoder while fine-tuning), classifier dropout,
    training steps (TS), warmup steps (WS), maximum sequence length (MSL).
  - google-research/albert, run_glue.sh: warmup, learning rate, steps and batch size of the
    eight GLUE tasks it runs (not WNLI), max_seq_length 512, --optimizer=adamw. It agrees
    with Table 14 on every value it sets; it sets no dropout (the official classifier's
    dropout is fixed at 0.1; the encoder's comes from albert_config.json).
  - google-research/albert, README.md: the run_squad_v1, run_squad_v2 and run_race
    commands (batch sizes of training and prediction, learning rates, schedules).
  - google-research/albert, optimization.py `create_optimizer` (the default optimizer of
    run_squad_v1/v2 and run_race): AdamW, weight decay 0.01, global-norm clip 1.0, linear
    (power 1) decay; run_classifier.py and run_race.py: eval_batch_size 8.

Where the official README disagrees with the paper, the paper's value is used (it is the
table the paper's results were obtained with) and the README's is kept in the setting's
`note`:
  - SQuAD v2.0: the README's run_squad_v2 command uses learning rate 5e-5,
    max_seq_length 384 and 2 epochs with 10% warmup; Table 14: 3e-5, 512, 8144 steps with
    814 of warmup. (SQuAD v1.1 agrees: 2 epochs of batch 48 are the table's 3649 steps.)
  - RACE: the README's run_race command (and run_race.py's defaults) use learning rate
    1e-5; Table 14: 2e-5. The README says why: the paper's (v1) RACE values make v2 models
    diverge, so for v2 models it used learning rate 1e-5 and ALBERT dropout 0 (Table 14:
    0.1). For a v2 model on RACE, give --learning_rate=1e-5 --albert_dropout=0.

Model size: the primary sources give one value per task for every model size (the paper
has one table; the official scripts take the model as an argument), and so do the
defaults here: nothing is invented per size. The lookup takes the size so a recipe says
what it was looked up for and a size-specific value, should a source give one, has its
place (`_SIZE_DEFAULTS`).
"""

from __future__ import annotations

import dataclasses

PAPER = "paper Table 14"
RUN_GLUE = "official run_glue.sh"
README = "official README"
OPTIMIZATION = "official optimization.py"

SIZES = ("base", "large", "xlarge", "xxlarge")

# Table 14, row by row: LR, BSZ, ALBERT DR, Classifier DR, TS, WS, MSL.
_TABLE_14 = {
    "cola": (1e-5, 16, 0.0, 0.1, 5336, 320, 512),
    "sts-b": (2e-5, 16, 0.0, 0.1, 3598, 214, 512),
    "sst-2": (1e-5, 32, 0.0, 0.1, 20935, 1256, 512),
    "mnli": (3e-5, 128, 0.0, 0.1, 10000, 1000, 512),
    "qnli": (1e-5, 32, 0.0, 0.1, 33112, 1986, 512),
    "qqp": (5e-5, 128, 0.1, 0.1, 14000, 1000, 512),
    "rte": (3e-5, 32, 0.1, 0.1, 800, 200, 512),
    "mrpc": (2e-5, 32, 0.0, 0.1, 800, 200, 512),
    "wnli": (2e-5, 16, 0.1, 0.1, 2000, 250, 512),
    "squad_v1.1": (5e-5, 48, 0.0, 0.1, 3649, 365, 384),
    "squad_v2.0": (3e-5, 48, 0.0, 0.1, 8144, 814, 512),
    "race": (2e-5, 32, 0.1, 0.1, 12000, 1000, 512),
}
# The table's columns, as the runners' flags are named, and as the paper heads them.
COLUMNS = (
    ("learning_rate", "LR"),
    ("train_batch_size", "BSZ"),
    ("albert_dropout", "ALBERT DR"),
    ("classifier_dropout", "Classifier DR"),
    ("train_step", "TS"),
    ("warmup_step", "WS"),
    ("max_seq_length", "MSL"),
)
TASKS = tuple(_TABLE_14)
SQUAD_TASKS = ("squad_v1.1", "squad_v2.0")

# What run_glue.sh runs (warmup, LR, steps, batch; max_seq_length 512 for all): equal to
# Table 14 for these eight tasks (checked by tests/training/test_recipes.py).
RUN_GLUE_TASKS = ("sst-2", "mnli", "cola", "qnli", "qqp", "rte", "sts-b", "mrpc")

# The official README's commands where they differ from Table 14 (see the module doc).
_README_DIFFERS = {
    ("squad_v2.0", "learning_rate"): "run_squad_v2 command: 5e-5",
    ("squad_v2.0", "max_seq_length"): "run_squad_v2 command: 384",
    ("squad_v2.0", "train_step"): "run_squad_v2 command: 2 epochs",
    ("squad_v2.0", "warmup_step"): "run_squad_v2 command: 10% of the steps",
    ("race", "learning_rate"): "run_race command: 1e-5, used for v2 models, on which "
    "the paper's (v1) value diverges",
    ("race", "albert_dropout"): "uses 0 for v2 models, on which the paper's (v1) value diverges",
}

# What the paper does not give, from the official code; the same for every size (no
# source gives a size-specific value). name → (value, source).
_DEFAULTS = {
    "optimizer": ("adamw", f"{RUN_GLUE} --optimizer=adamw, create_optimizer's default"),
    "weight_decay_rate": (0.01, f"{OPTIMIZATION}: AdamWeightDecayOptimizer"),
    "clip_norm": (1.0, f"{OPTIMIZATION}: clip_by_global_norm"),
    "poly_power": (1.0, f"{OPTIMIZATION}: linear decay"),
}
_SIZE_DEFAULTS = {size: _DEFAULTS for size in SIZES}
# Evaluation batch: it changes no result, only memory and speed.
_EVAL_BATCH = (8, "official run_classifier.py and run_race.py default, README run_race command")
_PREDICT_BATCH = (8, f"{README} run_squad_v1 and run_squad_v2 commands")


class UnknownRecipeTask(ValueError):
    """A task the recipe has no values for (one-line message naming the known tasks)."""


@dataclasses.dataclass(frozen=True)
class Setting:
    """One hyper-parameter of a recipe: `name` (as the fine-tuning runners' flag), `value`,
    `source` (where the value comes from) and `note` (another source's value, if any)."""

    name: str
    value: float | int | str
    source: str
    note: str = ""

    def describe(self) -> str:
        """`source`, and `note` naming the official README's value where it differs."""
        return f"{self.source}; {README} {self.note}" if self.note else self.source


@dataclasses.dataclass(frozen=True)
class Recipe:
    """The settings of one task (`task`, canonical name) for one model size (None: a shape
    that is not a released size)."""

    task: str
    model_size: str | None
    settings: tuple[Setting, ...]

    def values(self) -> dict:
        """name → value."""
        return {s.name: s.value for s in self.settings}


def task_key(task: str) -> str:
    """The recipe's name of a task as the user gives it ("MRPC", "STS-B", "stsb", "sst2",
    "squad_v2", "SQuAD v2.0" ...), or the lower-cased input when it names none."""
    key = task.strip().lower().replace(" ", "_").replace("-", "_")
    aliases = {
        "sts_b": "sts-b",
        "stsb": "sts-b",
        "sts": "sts-b",
        "sst_2": "sst-2",
        "sst2": "sst-2",
        "sst": "sst-2",
        "squad_v1": "squad_v1.1",
        "squad1.1": "squad_v1.1",
        "squad_1.1": "squad_v1.1",
        "squad_v2": "squad_v2.0",
        "squad2.0": "squad_v2.0",
        "squad_2.0": "squad_v2.0",
    }
    return aliases.get(key, key)


def paper_recipe(task: str, model_size: str | None = None) -> Recipe:
    """The paper's hyper-parameters for `task` (any spelling `task_key` knows) and a model
    of `model_size` (one of SIZES, or None for another shape): Table 14's seven columns,
    then what the paper does not give (optimizer, weight decay, clipping, decay, and the
    evaluation batch: `predict_batch_size` for SQuAD, `eval_batch_size` otherwise).
    Raises UnknownRecipeTask (one line) for a task the paper has no row for, ValueError
    for an unknown size."""
    key = task_key(task)
    if key not in _TABLE_14:
        raise UnknownRecipeTask(
            f"the paper's recipe has no values for task {task!r}; it has {', '.join(TASKS)}"
        )
    if model_size is not None and model_size not in SIZES:
        raise ValueError(f"model size {model_size!r} is not one of {', '.join(SIZES)}")
    settings = []
    for (name, head), value in zip(COLUMNS, _TABLE_14[key]):
        source = f'{PAPER} "{head}"'
        if key in RUN_GLUE_TASKS and name not in ("albert_dropout", "classifier_dropout"):
            source += f" = {RUN_GLUE}"
        settings.append(Setting(name, value, source, _README_DIFFERS.get((key, name), "")))
    defaults = _SIZE_DEFAULTS[model_size] if model_size else _DEFAULTS
    settings += [Setting(name, value, source) for name, (value, source) in defaults.items()]
    if key in SQUAD_TASKS:
        settings.append(Setting("predict_batch_size", *_PREDICT_BATCH))
    else:
        settings.append(Setting("eval_batch_size", *_EVAL_BATCH))
    return Recipe(key, model_size, tuple(settings))


def model_size(albert_config) -> str | None:
    """The released size (SIZES) whose shape `albert_config` has (layers, hidden, heads,
    intermediate, embedding), or None for any other shape."""
    from albert_tf.modeling.config import AlbertConfig

    shape = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
    shape += ("embedding_size",)
    for size in SIZES:
        preset = AlbertConfig.preset(size)
        if all(getattr(albert_config, f) == getattr(preset, f) for f in shape):
            return size
    return None
