"""data_pipeline.cli: flags generated from a dataclass carry each field's help, default,
choices and range; an out-of-range flag is the one-line error the dataclass gives for the
same value (with `--`); the config built from the flags equals the one built directly.
Then the same for the real TrainerConfig and the runners' flag sets, and the parser of the
module tools."""

import dataclasses

import pytest
from absl import flags

from data_pipeline.cli import (
    Bounds,
    check_fields,
    check_flag_ranges,
    check_no_positional,
    config_from_flags,
    define_flags_from,
    parse_tool_flags,
    setting,
)


@dataclasses.dataclass(frozen=True)
class Example:
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


def _parsed(*args, cls=Example, **define):
    fv = flags.FlagValues()
    define_flags_from(cls, fv, **define)
    fv(["prog", *args])
    return fv


def test_each_field_becomes_its_flag():
    fv = _parsed()
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
    with pytest.raises(flags.IllegalFlagValueError):
        fv(["prog", "--kind=c"])  # choices are absl's own enum check at parse time


def test_only_defaults_and_bounds_change_what_is_defined():
    fv = _parsed(only=("steps", "kind"), defaults={"steps": 3}, bounds={"steps": Bounds(0)})
    assert sorted(fv) == ["kind", "steps"] and fv.steps == 3
    fv.steps = 0  # in range for this command
    check_flag_ranges(fv)
    fv.steps = -1
    with pytest.raises(ValueError, match=r"^--steps=-1 must be >= 0$"):
        check_flag_ranges(fv)


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
    fv = _parsed("--name=x", arg)
    with pytest.raises(ValueError) as from_flags:
        check_flag_ranges(fv)
    assert str(from_flags.value) == f"--{message}"
    value = fv[arg[2:].split("=")[0]].value
    with pytest.raises(ValueError) as direct:
        Example(**{"name": "x", arg[2:].split("=")[0]: value})
    assert str(direct.value) == message


def test_in_range_and_unset_values_pass():
    fv = _parsed("--name=x", "--steps=1", "--rate=1e-9", "--dropout=0", "--share=1")
    check_flag_ranges(fv)
    check_flag_ranges(_parsed())  # dropout None: not checked


def test_config_from_flags_equals_the_dataclass():
    fv = _parsed("--name=run", "--steps=5", "--kind=b", "--fast", "--dropout=0.25")
    built = config_from_flags(Example, fv)
    assert built == Example(name="run", steps=5, kind="b", fast=True, dropout=0.25)
    assert config_from_flags(Example, fv, steps=9) == dataclasses.replace(built, steps=9)
    with pytest.raises(ValueError, match="^kind='c' is not one of a, b$"):
        Example(name="x", kind="c")


def test_trainer_config_flags_are_its_fields():
    """The runners' generated trainer flags: TrainerConfig's help, defaults (the runner's
    where it gives one) and ranges; the TrainerConfig built from them."""
    from albert_tf.training.config import TrainerConfig

    fv = flags.FlagValues()
    define_flags_from(TrainerConfig, fv, defaults={"learning_rate": 3e-5, "num_train_steps": 10})
    fv(["prog", "--output_dir=/tmp/run", "--optimizer=adamw", "--clip_norm=0.5"])
    for field in dataclasses.fields(TrainerConfig):
        assert fv[field.name].help.endswith(field.metadata["help"]), field.name
    expected = TrainerConfig("/tmp/run", 3e-5, 10, optimizer="adamw", clip_norm=0.5)
    assert config_from_flags(TrainerConfig, fv) == expected
    fv.clip_norm = 0.0
    with pytest.raises(ValueError, match=r"^--clip_norm=0.0 must be > 0$"):
        check_flag_ranges(fv)
    with pytest.raises(ValueError, match=r"^clip_norm=0.0 must be > 0$"):
        dataclasses.replace(expected, clip_norm=0.0)


RUNNER_SETTINGS = {
    "run_pretraining": ("settings.ModelSettings", "pretraining.PretrainingSettings"),
    "classifier": (
        "settings.ModelSettings",
        "settings.FinetuningSettings",
        "families.classifier.ClassificationTaskSettings",
        "families.classifier.ClassifierSettings",
        "families.multi_label.MultiLabelSettings",
        "albert_tf.training.teacher.DistillationSettings",
        "albert_tf.training.class_weights.ClassWeightSettings",
        "albert_tf.training.sweep.RunsSettings",
        "albert_tf.modeling.lora_settings.LoraSettings",
        "data_pipeline.classification.long_documents.DocumentWindows",
        "albert_tf.training.sweep.SweepSettings",
    ),
    "squad": (
        "settings.ModelSettings",
        "settings.FinetuningSettings",
        "families.squad.SquadSettings",
        "albert_tf.training.sweep.SweepSettings",
        "albert_tf.training.teacher.DistillationSettings",
        "albert_tf.training.class_weights.ClassWeightSettings",
        "albert_tf.training.sweep.RunsSettings",
        "albert_tf.modeling.lora_settings.LoraSettings",
    ),
    "embedding": (
        "settings.ModelSettings",
        "settings.FinetuningSettings",
        "families.embedding.EmbeddingSettings",
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
    the distribution's, the resume's, the export's, its own): nothing is declared a second
    time by hand, and each flag's help is its field's."""
    import importlib

    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES
    from albert_tf.runners.pretraining import COMMAND
    from albert_tf.runners.settings import DistributionSettings, ExportSettings, ResumeSettings
    from albert_tf.training.config import TrainerConfig

    classes = [TrainerConfig, DistributionSettings, ResumeSettings, ExportSettings]
    for name in RUNNER_SETTINGS[runner]:
        module, cls = name.rsplit(".", 1)
        module = (
            module
            if module.startswith(("albert_tf.", "data_pipeline."))
            else (f"albert_tf.runners.{module}")
        )
        classes.append(getattr(importlib.import_module(module), cls))
    fields = {f.name for cls in classes for f in dataclasses.fields(cls)}
    cmd = COMMAND if runner == "run_pretraining" else command(FAMILIES[runner])
    fv = cmd.flag_values()
    assert set(fv) == fields
    for cls in classes:
        for field in dataclasses.fields(cls):
            # (absl appends "repeat this option ..." to a repeatable flag's help)
            assert field.metadata["help"] in fv[field.name].help, field.name


def test_parse_tool_flags_refuses_stray_arguments(capsys):
    fv = flags.FlagValues()
    flags.DEFINE_string("input_file", None, "Inputs.", flag_values=fv)
    argv = ["tool", "--input_file", "data/a.tfrecord", "data/b.tfrecord", "data/c.tfrecord"]
    assert parse_tool_flags(fv, argv, ("input_file",)) is False
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        "error: unexpected arguments ['data/b.tfrecord', 'data/c.tfrecord']: "
    )
    assert "quote globs" in err[0]
    fv2 = flags.FlagValues()
    flags.DEFINE_string("input_file", None, "Inputs.", flag_values=fv2)
    assert parse_tool_flags(fv2, ["tool", "--input_file=data/*.tfrecord"], ("input_file",))
    check_no_positional(["tool"])
    with pytest.raises(ValueError, match=r"\['x'\]"):
        check_no_positional(["tool", "x"])
    many = [f"s{i}" for i in range(8)]
    with pytest.raises(ValueError, match=r"\.\.\. \(8 in all\)"):
        check_no_positional(["tool", *many])


def test_parse_tool_flags_help_prints_the_flags_and_exits_0(capsys):
    from data_pipeline.cli import parse_tool_flags

    fv = flags.FlagValues()
    flags.DEFINE_integer("steps", 3, "How many steps.", flag_values=fv)
    with pytest.raises(SystemExit) as e:
        parse_tool_flags(fv, ["tool", "--help"], required=["steps"])
    assert e.value.code == 0
    assert "--steps: How many steps." in capsys.readouterr().out
