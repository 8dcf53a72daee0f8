"""The one parser (data_pipeline.command) over settings dataclasses (data_pipeline.cli.
setting): each field becomes its flag with its help, default, choices and range; an
out-of-range value is the one-line error the dataclass gives for the same value (with
`--`); the value built from argv equals the dataclass built directly. Then the same for the
real TrainerConfig and the runners' commands, and the module tools' way to fail."""

import dataclasses

import pytest

from data_pipeline.cli import Bounds, check_fields, check_no_positional, setting
from data_pipeline.command import Command, UsageError


@dataclasses.dataclass(frozen=True)
class Example:
    """The example group."""

    name: str = setting(help="A required name.")
    steps: int = setting(100, "Optimizer steps.", minimum=1)
    rate: float = setting(0.5, "A rate.", above=0)
    dropout: float | None = setting(None, "Dropout.", minimum=0, below=1)
    share: float = setting(0.1, "A share.", minimum=0, maximum=1)
    kind: str = setting("a", "Which kind.", choices=("a", "b"))
    fast: bool = setting(False, "Go fast.")
    free: int = setting(7, "No range.")

    def __post_init__(self):
        check_fields(self)


def _command(**options):
    return Command("tool", "A tool.", (Example,), **options)


def _parsed(*args, **options):
    return _command(**options).parse(["prog", *args])


def test_each_field_becomes_its_flag():
    fv = _command().flag_values()
    for field in dataclasses.fields(Example):
        flag = fv[field.name]
        assert flag.help.endswith(field.metadata["help"])  # (an enum: "<a|b>: help")
        expected = None if field.default is dataclasses.MISSING else field.default
        assert flag.default == expected, field.name
    assert type(fv["kind"]).__name__ == "EnumFlag"
    assert list(fv["kind"].parser.enum_values) == ["a", "b"]
    assert fv["steps"].parser.flag_type() == "int"
    assert fv["rate"].parser.flag_type() == "float"
    assert fv["dropout"].parser.flag_type() == "float"
    assert fv["fast"].parser.flag_type() == "bool"
    assert fv["name"].parser.flag_type() == "string"
    with pytest.raises(UsageError, match="--kind"):
        _parsed("--kind=c")  # choices: absl's own enum check at parse time, one line


def test_a_commands_defaults_and_bounds_are_its_own():
    s = _parsed(defaults={"steps": 3}, bounds={"steps": Bounds(0)})
    assert s.steps == 3 and not s.given("steps")
    assert _parsed("--steps=0", bounds={"steps": Bounds(0)}).steps == 0  # in range here
    with pytest.raises(UsageError, match=r"^--steps=-1 must be >= 0$"):
        _parsed("--steps=-1", bounds={"steps": Bounds(0)})
    with pytest.raises(UsageError, match=r"^--name is required$"):
        _parsed(required=("name",))


@pytest.mark.parametrize(
    "arg, message",
    [
        ("--steps=0", "steps=0 must be >= 1"),
        ("--rate=0", "rate=0.0 must be > 0"),
        ("--dropout=1", "dropout=1.0 must be in [0, 1)"),
        ("--dropout=-0.5", "dropout=-0.5 must be in [0, 1)"),
        ("--share=1.5", "share=1.5 must be in [0, 1]"),
    ],
)
def test_out_of_range_is_the_same_one_line_error(arg, message):
    with pytest.raises(UsageError) as from_argv:
        _parsed("--name=x", arg)
    assert str(from_argv.value) == f"--{message}"
    name = arg[2:].split("=")[0]
    value = _command().flag_values()[name].parser.parse(arg.split("=")[1])
    with pytest.raises(ValueError) as direct:
        Example(**{"name": "x", name: value})
    assert str(direct.value) == message


def test_in_range_and_unset_values_pass():
    s = _parsed("--name=x", "--steps=1", "--rate=1e-9", "--dropout=0", "--share=1")
    assert (s.steps, s.dropout, s.share) == (1, 0.0, 1.0)
    assert _parsed().dropout is None  # dropout None: not checked


def test_the_settings_value_equals_the_dataclass():
    command = _command()
    s = command.parse(["prog", "--name=run", "--steps=5", "--kind=b", "--fast", "--dropout=0.25"])
    built = s.group(Example)
    assert built == Example(name="run", steps=5, kind="b", fast=True, dropout=0.25)
    assert s.group(Example, steps=9) == dataclasses.replace(built, steps=9)
    assert s.replace(steps=9).group(Example) == dataclasses.replace(built, steps=9)
    assert s.given("kind") and not s.given("free") and s.replace(steps=9).given("kind")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.steps = 1  # parsed once: a value
    assert command.build(name="run", steps=5, kind="b", fast=True, dropout=0.25) == s
    with pytest.raises(ValueError, match="^kind='c' is not one of a, b$"):
        Example(name="x", kind="c")


def test_command_line_gives_back_the_flags_typed_and_parses_to_the_same_value():
    """What a model card records as the command: the given flags only, in the settings'
    order, shell-quoted; parsed again, it is the same settings value."""
    import shlex

    s = _parsed("--fast", "--name=my run", "--steps=5", "--nofast", "--dropout=0.25")
    line = s.command_line("python tool.py")
    assert line == "python tool.py --name='my run' --steps=5 --dropout=0.25 --nofast"
    assert _parsed(*shlex.split(line)[2:]).values() == s.values()


def test_trainer_config_flags_are_its_fields():
    """The runners' trainer settings: TrainerConfig's help, defaults (the command's where it
    gives one) and ranges; the TrainerConfig built from them."""
    from albert_tf.training.config import TrainerConfig

    command = Command(
        "prog", "", (TrainerConfig,), defaults={"learning_rate": 3e-5, "num_train_steps": 10}
    )
    fv = command.flag_values()
    for field in dataclasses.fields(TrainerConfig):
        assert fv[field.name].help.endswith(field.metadata["help"]), field.name
    s = command.parse(["prog", "--output_dir=/tmp/run", "--optimizer=adamw", "--clip_norm=0.5"])
    expected = TrainerConfig("/tmp/run", 3e-5, 10, optimizer="adamw", clip_norm=0.5)
    assert s.group(TrainerConfig) == expected
    with pytest.raises(UsageError, match=r"^--clip_norm=0.0 must be > 0$"):
        command.parse(["prog", "--output_dir=/tmp/run", "--clip_norm=0"])
    with pytest.raises(ValueError, match=r"^clip_norm=0.0 must be > 0$"):
        dataclasses.replace(expected, clip_norm=0.0)


RUNNER_SETTINGS = {
    "run_pretraining": (
        "albert_tf.training.finetuning_settings.ModelSettings",
        "albert_tf.training.pretraining_inputs.PretrainingSettings",
    ),
    "classifier": (
        "albert_tf.training.finetuning_settings.ModelSettings",
        "albert_tf.training.finetuning_settings.FinetuningSettings",
        "data_pipeline.classification.tasks.ClassificationTaskSettings",
        "families.classifier.ClassifierSettings",
        "albert_tf.training.label_modes.MultiLabelSettings",
        "albert_tf.training.teacher.DistillationSettings",
        "albert_tf.training.class_weights.ClassWeightSettings",
        "albert_tf.training.sweep.RunsSettings",
        "albert_tf.modeling.lora_settings.LoraSettings",
        "data_pipeline.classification.long_documents.DocumentWindows",
        "albert_tf.training.sweep.SweepSettings",
    ),
    "squad": (
        "albert_tf.training.finetuning_settings.ModelSettings",
        "albert_tf.training.finetuning_settings.FinetuningSettings",
        "families.squad.SquadSettings",
        "data_pipeline.windows.WindowSettings",
        "albert_tf.training.sweep.SweepSettings",
        "albert_tf.training.teacher.DistillationSettings",
        "albert_tf.training.class_weights.ClassWeightSettings",
        "albert_tf.training.sweep.RunsSettings",
        "albert_tf.modeling.lora_settings.LoraSettings",
    ),
    "embedding": (
        "albert_tf.training.finetuning_settings.ModelSettings",
        "albert_tf.training.finetuning_settings.FinetuningSettings",
        "albert_tf.training.embedding_settings.EmbeddingSettings",
        "albert_tf.training.sweep.SweepSettings",
        "albert_tf.training.teacher.DistillationSettings",
        "albert_tf.training.class_weights.ClassWeightSettings",
        "albert_tf.training.sweep.RunsSettings",
        "albert_tf.modeling.lora_settings.LoraSettings",
    ),
}


@pytest.mark.parametrize("runner", sorted(RUNNER_SETTINGS))
def test_each_runner_flag_is_a_setting(runner):
    """A runner's flags are exactly the fields of its settings dataclasses (TrainerConfig,
    the distribution's, the resume's, the export's, its own) but those its command omits
    (a fine-tuning family's --max_eval_steps): nothing is declared a second time by hand,
    and each flag's help is its field's."""
    import importlib

    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES
    from albert_tf.runners.pretraining import COMMAND
    from albert_tf.serving.formats import ExportSettings
    from albert_tf.training.config import TrainerConfig
    from albert_tf.training.distribution import DistributionSettings
    from albert_tf.training.resume_checks import ResumeSettings

    classes = [TrainerConfig, DistributionSettings, ResumeSettings, ExportSettings]
    for name in RUNNER_SETTINGS[runner]:
        module, cls = name.rsplit(".", 1)
        module = (
            module
            if module.startswith(("albert_tf.", "data_pipeline."))
            else (f"albert_tf.runners.{module}")
        )
        classes.append(getattr(importlib.import_module(module), cls))
    cmd = COMMAND if runner == "run_pretraining" else command(FAMILIES[runner])
    fields = {f.name for cls in classes for f in dataclasses.fields(cls)} - set(cmd.omitted)
    assert cmd.omitted == (() if runner == "run_pretraining" else ("max_eval_steps",))
    fv = cmd.flag_values()
    assert set(fv) == fields
    for cls in classes:
        for field in dataclasses.fields(cls):
            if field.name in cmd.omitted:
                continue
            # (absl appends "repeat this option ..." to a repeatable flag's help)
            assert field.metadata["help"] in fv[field.name].help, field.name


def test_a_tool_refuses_stray_arguments_in_one_line(capsys):
    argv = ["tool", "--name", "data/a.tfrecord", "data/b.tfrecord", "data/c.tfrecord"]
    assert _command().parse_tool(argv) is None
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        "error: unexpected arguments ['data/b.tfrecord', 'data/c.tfrecord']: "
    )
    assert "quote globs" in err[0]
    assert _command().parse_tool(["tool", "--name=data/*.tfrecord"]).name == "data/*.tfrecord"
    check_no_positional(["tool"])
    with pytest.raises(ValueError, match=r"\['x'\]"):
        check_no_positional(["tool", "x"])
    many = [f"s{i}" for i in range(8)]
    with pytest.raises(ValueError, match=r"\.\.\. \(8 in all\)"):
        check_no_positional(["tool", *many])


def test_help_prints_the_flags_grouped_and_exits_0(capsys):
    with pytest.raises(SystemExit) as e:
        _command(required=("name",)).parse(["tool", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("A tool.") and "\n  The example group.\n" in out
    assert "    --steps: Optimizer steps. (default: 100)" in out
