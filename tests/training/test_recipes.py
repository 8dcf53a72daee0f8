"""--recipe paper: the ALBERT paper's fine-tuning hyper-parameters (Table 14) per task, the
official code's defaults where the paper gives none, set on the flags the user did not
give, frozen into the configs, printed one line per value; explicit flags win."""

import pytest

# Lan et al. 2019 (arXiv 1909.11942), Appendix A.4, Table 14, transcribed from the paper
# independently of albert_tf/training/recipes.py: LR, BSZ, ALBERT DR, Classifier DR, TS,
# WS, MSL.
TABLE_14 = {
    "CoLA": (1e-5, 16, 0, 0.1, 5336, 320, 512),
    "STS": (2e-5, 16, 0, 0.1, 3598, 214, 512),
    "SST-2": (1e-5, 32, 0, 0.1, 20935, 1256, 512),
    "MNLI": (3e-5, 128, 0, 0.1, 10000, 1000, 512),
    "QNLI": (1e-5, 32, 0, 0.1, 33112, 1986, 512),
    "QQP": (5e-5, 128, 0.1, 0.1, 14000, 1000, 512),
    "RTE": (3e-5, 32, 0.1, 0.1, 800, 200, 512),
    "MRPC": (2e-5, 32, 0, 0.1, 800, 200, 512),
    "WNLI": (2e-5, 16, 0.1, 0.1, 2000, 250, 512),
    "SQuAD v1.1": (5e-5, 48, 0, 0.1, 3649, 365, 384),
    "SQuAD v2.0": (3e-5, 48, 0, 0.1, 8144, 814, 512),
    "RACE": (2e-5, 32, 0.1, 0.1, 12000, 1000, 512),
}
FLAG_OF_COLUMN = (
    "learning_rate",
    "train_batch_size",
    "albert_dropout",
    "classifier_dropout",
    "train_step",
    "warmup_step",
    "max_seq_length",
)
# google-research/albert run_glue.sh: `run_task TASK warmup_step learning_rate train_step
# save_checkpoints_steps train_batch_size`, all at max_seq_length 512.
RUN_GLUE = {
    "SST-2": (1256, 1e-5, 20935, 32),
    "MNLI": (1000, 3e-5, 10000, 128),
    "CoLA": (320, 1e-5, 5336, 16),
    "QNLI": (1986, 1e-5, 33112, 32),
    "QQP": (1000, 5e-5, 14000, 128),
    "RTE": (200, 3e-5, 800, 32),
    "STS-B": (214, 2e-5, 3598, 16),
    "MRPC": (200, 2e-5, 800, 32),
}
SIZES = ("base", "large", "xlarge", "xxlarge", None)


def test_every_task_has_the_papers_row_for_every_size():
    from albert_tf.training.recipes import TASKS, paper_recipe

    assert len(TASKS) == len(TABLE_14)
    for size in SIZES:
        for task, row in TABLE_14.items():
            values = paper_recipe(task, size).values()
            assert tuple(values[f] for f in FLAG_OF_COLUMN) == row, (task, size)


def test_run_glue_sh_agrees_with_the_table_for_its_eight_tasks():
    from albert_tf.training.recipes import paper_recipe

    for task, (warmup, lr, steps, batch) in RUN_GLUE.items():
        values = paper_recipe(task).values()
        got = tuple(values[k] for k in ("warmup_step", "learning_rate", "train_step"))
        assert got + (values["train_batch_size"], values["max_seq_length"]) == (
            warmup,
            lr,
            steps,
            batch,
            512,
        )


def test_what_the_paper_does_not_give_comes_from_the_official_code_with_its_source():
    from albert_tf.training.recipes import paper_recipe

    for size in SIZES:
        for task in TABLE_14:
            recipe = paper_recipe(task, size)
            values = recipe.values()
            assert values["optimizer"] == "adamw" and values["weight_decay_rate"] == 0.01
            assert values["clip_norm"] == 1.0 and values["poly_power"] == 1.0
            batch = "predict_batch_size" if "SQuAD" in task else "eval_batch_size"
            assert values[batch] == 8
            assert all(s.source for s in recipe.settings)
    # The disagreements with the official README are named with the README's value.
    notes = {s.name: s.note for s in paper_recipe("race").settings if s.note}
    assert set(notes) == {"learning_rate", "albert_dropout"} and "1e-5" in notes["learning_rate"]
    notes = {s.name: s.note for s in paper_recipe("squad_v2.0").settings if s.note}
    assert "5e-5" in notes["learning_rate"] and "384" in notes["max_seq_length"]


def test_task_spellings_and_model_sizes():
    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.training.recipes import UnknownRecipeTask, model_size, paper_recipe

    for given, key in (("STS-B", "sts-b"), ("stsb", "sts-b"), ("sst2", "sst-2"), ("MRPC", "mrpc")):
        assert paper_recipe(given).task == key
    assert paper_recipe("squad_v2").task == "squad_v2.0"
    with pytest.raises(UnknownRecipeTask, match="no values for task 'csv'; it has cola"):
        paper_recipe("csv")
    with pytest.raises(ValueError, match="model size 'huge'"):
        paper_recipe("mrpc", "huge")
    assert model_size(AlbertConfig.preset("xxlarge")) == "xxlarge"
    assert model_size(AlbertConfig.preset("large-v1")) == "large"
    assert model_size(AlbertConfig.preset("base", num_hidden_layers=2)) is None


def parsed(name, *args):
    """(the family, the settings of `python RUNNER.py ARGS`), parsed in this process."""
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES

    family = FAMILIES[name]
    return family, command(family).parse([name, *args])


CLASSIFIER = ("--output_dir=/nonexistent/out", "--spm_model_file=spm.model", "--do_train")


def test_recipe_paper_sets_the_flags_and_the_frozen_configs(capsys):
    from albert_tf.runners.recipe import apply_recipe
    from albert_tf.training import finetuning_settings as common
    from albert_tf.training.config import TrainerConfig
    from albert_tf.training.recipes import paper_recipe

    args = ("--task_name=MRPC", "--preset=base-v1", "--recipe=paper", *CLASSIFIER)
    family, given = parsed("classifier", *args)
    s = apply_recipe(family, given)
    recipe = paper_recipe("mrpc", "base")
    for name, value in recipe.values().items():
        assert getattr(s, name) == value, name
    steps, warmup = common.schedule(s, train_examples=3668)
    trainer = s.group(TrainerConfig, num_train_steps=steps, num_warmup_steps=warmup)
    assert (trainer.num_train_steps, trainer.num_warmup_steps) == (800, 200)
    assert (trainer.learning_rate, trainer.optimizer) == (2e-5, "adamw")
    assert trainer.weight_decay_rate == 0.01
    config = common.finetuning_config(s)  # base-v1 has dropout 0.1
    assert config.hidden_dropout_prob == config.attention_probs_dropout_prob == 0.0
    assert common.finetuning_config(given).hidden_dropout_prob == 0.1  # a new value: s kept
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + len(recipe.settings)
    assert lines[0] == "recipe paper for mrpc, model size base:"
    for line, setting in zip(lines[1:], recipe.settings):
        assert line.startswith(f"  --{setting.name}={setting.value} (") and setting.source in line
    assert "the config's: 0.1" in next(x for x in lines if "--albert_dropout=" in x)


def test_flags_given_on_the_command_line_win(capsys):
    from albert_tf.runners.recipe import apply_recipe
    from albert_tf.training import finetuning_settings as common

    given = ("--learning_rate=1e-3", "--num_train_epochs=2", "--albert_dropout=0.2")
    args = ("--task_name=rte", "--preset=large", "--recipe=paper", *CLASSIFIER, *given)
    family, s = parsed("classifier", *args)
    s = apply_recipe(family, s)
    lines = capsys.readouterr().out.splitlines()
    assert s.learning_rate == 1e-3 and s.albert_dropout == 0.2
    assert s.train_step == 0  # the epochs the user gave decide the steps
    assert common.schedule(s, train_examples=2490)[0] == 2490 * 2 // 32
    assert s.warmup_step == 200 and s.train_batch_size == 32
    config = common.finetuning_config(s)
    assert config.hidden_dropout_prob == config.attention_probs_dropout_prob == 0.2
    assert "  kept --learning_rate=0.001 (given; recipe: --learning_rate=3e-05," in "\n".join(lines)
    assert any(
        x.startswith("  kept --num_train_epochs=2.0 (given; recipe: --train_step=800")
        for x in lines
    )


def test_without_recipe_nothing_changes(capsys):
    from albert_tf.runners.recipe import apply_recipe

    family, s = parsed("classifier", "--task_name=mrpc", "--preset=base", *CLASSIFIER)
    assert apply_recipe(family, s) is s
    assert s.learning_rate == 3e-5 and s.albert_dropout is None
    assert capsys.readouterr().out == ""


def test_unknown_task_with_recipe_is_one_line_error(capsys):
    from albert_tf.runners.driver import main
    from albert_tf.runners.families import FAMILIES

    args = ("--task_name=csv", "--preset=base", "--recipe=paper", *CLASSIFIER)
    assert main(FAMILIES["classifier"], "", ["run_classifier", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: --recipe=paper: the paper's recipe has no values for task 'csv'; it has "
        "cola, sts-b, sst-2, mnli, qnli, qqp, rte, mrpc, wnli, squad_v1.1, squad_v2.0, race"
    ]


@pytest.mark.parametrize("version", ["1.1", "2.0"])
def test_run_squad_applies_the_versions_recipe(capsys, version):
    """run_squad looks the recipe up by version and says the head's dropout is no flag; its
    own checks then run on the recipe's values (here: failing on the missing train file)."""
    from albert_tf.runners.driver import main
    from albert_tf.runners.recipe import apply_recipe

    v2 = ["--version_2_with_negative"] if version == "2.0" else []
    args = ("--preset=xxlarge", "--recipe=paper", *CLASSIFIER, *v2)
    family, s = parsed("squad", *args)
    s = apply_recipe(family, s)
    assert s.max_seq_length == (512 if v2 else 384)
    assert s.learning_rate == (3e-5 if v2 else 5e-5)
    assert s.predict_batch_size == 8 and s.train_batch_size == 48
    capsys.readouterr()
    assert main(family, "", ["run_squad", *args]) == 1
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0] == f"recipe paper for squad_v{version}, model size xxlarge:"
    head = "the albert head's answer-class dropout" if v2 else "the bert head has no dropout"
    assert any(x.startswith(f"  classifier_dropout=0.1: {head}") for x in lines)
    assert out.err.strip() == "error: --do_train needs --train_file"


def test_albert_dropout_out_of_range_is_one_line():
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES

    args = ("--task_name=mrpc", "--preset=base", "--albert_dropout=1", *CLASSIFIER)
    with pytest.raises(ValueError, match=r"^--albert_dropout=1.0 must be in \[0, 1\)$"):
        command(FAMILIES["classifier"]).parse(["run_classifier", *args])
