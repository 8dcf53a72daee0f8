"""Command lines from dataclasses, and the one parser of the module tools (the base tier:
imports nothing of this project, so data tools and albert_tf use it alike).

A setting is declared once, as a dataclass field whose metadata holds its help text and
range (`setting`); its flag, the flag's range check and the value built from the parsed
flags all follow from that field:

    @dataclasses.dataclass(frozen=True)
    class Config:
        steps: int = setting(100, "Optimizer steps.", minimum=1)
        dropout: float = setting(0.1, "Dropout.", minimum=0, below=1)
        dtype: str = setting("float32", "Compute dtype.", choices=("float32", "bfloat16"))

    define_flags_from(Config, flag_values)          # --steps, --dropout, --dtype
    check_flag_ranges(flag_values)                  # "--steps=0 must be >= 1" (ValueError)
    config = config_from_flags(Config, flag_values)  # == Config(steps=..., ...)

Ranges are checked after parsing (`check_flag_ranges`), not as absl validators: absl
reports a failed validator in two lines and before a command's own checks could name it;
a ValueError here is the commands' one `error: ...` line. The dataclass checks the same
ranges on its own values (`check_fields`, from `__post_init__`).

Every command parses with `data_pipeline.command` (settings of these fields, one parse);
`define_flags_from`, `config_from_flags` and `parse_tool_flags` remain for
`albert_tf.serving.export`, whose command line is not converted yet. Both refuse stray
positional arguments (`check_no_positional`): an unquoted `--input_file data/*.tfrecord`
expands into one flag value and the other files as arguments, which absl would otherwise
leave unread.
"""

from __future__ import annotations

import dataclasses
import sys
import typing

from absl import flags

# The attribute of an absl Flag object that holds its `Bounds` (set by `define_flags_from`):
# on the flag itself, so that a flag deleted and defined again has only its new range.
_BOUNDS = "setting_bounds"


@dataclasses.dataclass(frozen=True)
class Bounds:
    """A value's range: >= minimum, > above, <= maximum, < below (None: no such bound)."""

    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    below: float | None = None

    def error(self, name: str, value) -> str | None:
        """The one-line complaint about `name`=`value`, or None when it is in range."""
        low = self.minimum if self.above is None else self.above
        high = self.maximum if self.below is None else self.below
        fails = (
            (self.minimum is not None and value < self.minimum)
            or (self.above is not None and value <= self.above)
            or (self.maximum is not None and value > self.maximum)
            or (self.below is not None and value >= self.below)
        )
        if not fails:
            return None
        if high is None:
            return f"{name}={value} must be {'>=' if self.above is None else '>'} {low}"
        if low is None:
            return f"{name}={value} must be {'<=' if self.below is None else '<'} {high}"
        opening = "[" if self.above is None else "("
        closing = "]" if self.below is None else ")"
        return f"{name}={value} must be in {opening}{low}, {high}{closing}"


def setting(
    default=dataclasses.MISSING,
    help: str = "",  # noqa: A002 (absl's own word for it)
    *,
    minimum=None,
    above=None,
    maximum=None,
    below=None,
    choices: tuple[str, ...] | None = None,
    repeatable: bool = False,
    resume: str | None = None,
    sweepable: bool = False,
):
    """A dataclass field that is also a flag: its default, its help text, its range (see
    `Bounds`) and, for a string, the values it may take (an enum flag). `repeatable`: a
    `tuple[str, ...]` field whose flag is given once per value (`--x a=1,2 --x b=3`), for
    values that hold commas themselves. `resume`: how a resumed run treats it ("guarded":
    changed only with --allow_changed; "fixed": never; None: free). `sweepable`: a sweep
    may vary it (read per run, not by what is built once for every point)."""
    if resume not in (None, "guarded", "fixed"):
        raise ValueError(f"resume={resume!r}: guarded, fixed or None")
    metadata = {
        "help": help,
        "bounds": Bounds(minimum, above, maximum, below),
        "choices": tuple(choices) if choices else None,
        "repeatable": repeatable,
        "resume": resume,
        "sweepable": sweepable,
    }
    return dataclasses.field(default=default, metadata=metadata)


def _flag_type(hint) -> type:
    """str, int, float, bool or tuple (a comma-separated list of strings) from a field's
    annotation (`X | None` is X; `tuple[str, ...]` is tuple)."""
    if typing.get_origin(hint) is tuple:
        return tuple
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    kind = args[0] if args else hint
    if typing.get_origin(kind) is tuple:
        return tuple
    if kind not in (str, int, float, bool):
        raise TypeError(f"no flag type for {hint!r}")
    return kind


def define_flags_from(
    cls,
    flag_values: flags.FlagValues | None = None,
    only: typing.Iterable[str] | None = None,
    defaults: dict | None = None,
    bounds: dict[str, Bounds] | None = None,
) -> list[str]:
    """One flag per field of the dataclass `cls` (or per name of `only`), named as the
    field, with its help and default (`defaults` overrides a default, e.g. per runner; a
    field without one gets None); a field's `choices` make an enum flag. Each range (the
    field's, or `bounds`' for that name) is remembered for `check_flag_ranges`. Returns the
    names defined."""
    fv = flags.FLAGS if flag_values is None else flag_values
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    names = list(fields) if only is None else list(only)
    defaults, bounds = defaults or {}, bounds or {}
    for name in names:
        field = fields[name]
        if name in defaults:
            default = defaults[name]
        elif field.default is not dataclasses.MISSING:
            default = field.default
        else:
            default = None
        help_text = field.metadata.get("help") or name
        choices = field.metadata.get("choices")
        kind = _flag_type(hints[name])
        if choices:
            flags.DEFINE_enum(name, default, list(choices), help_text, flag_values=fv)
        elif kind is bool:
            flags.DEFINE_bool(name, default, help_text, flag_values=fv)
        elif kind is int:
            flags.DEFINE_integer(name, default, help_text, flag_values=fv)
        elif kind is float:
            flags.DEFINE_float(name, default, help_text, flag_values=fv)
        elif kind is tuple and field.metadata.get("repeatable"):
            flags.DEFINE_multi_string(name, list(default or ()) or None, help_text, flag_values=fv)
        elif kind is tuple:
            flags.DEFINE_list(name, list(default or ()), help_text, flag_values=fv)
        else:
            flags.DEFINE_string(name, default, help_text, flag_values=fv)
        found = bounds.get(name, field.metadata.get("bounds"))
        if found is not None and found != Bounds():
            setattr(fv[name], _BOUNDS, found)
    return names


def check_flag_ranges(flag_values: flags.FlagValues | None = None) -> None:
    """ValueError (one line, `--name=value must be ...`) for the first flag of
    `define_flags_from` whose value is out of its range; flags left at None are not
    checked."""
    fv = flags.FLAGS if flag_values is None else flag_values
    for name in list(fv):
        flag = fv[name]
        found = getattr(flag, _BOUNDS, None)
        if found is None or flag.value is None or name != flag.name:  # (or a short name)
            continue
        message = found.error(f"--{name}", flag.value)
        if message:
            raise ValueError(message)


def config_from_flags(cls, flag_values: flags.FlagValues | None = None, **overrides):
    """`cls(...)` from the parsed flags named as its fields (fields without a flag keep
    their defaults), `overrides` replacing values (e.g. step counts a runner derives)."""
    fv = flags.FLAGS if flag_values is None else flag_values
    values = {f.name: fv[f.name].value for f in dataclasses.fields(cls) if f.name in fv}
    values.update(overrides)
    return cls(**values)


def check_fields(config) -> None:
    """ValueError (one line, `name=value ...`) unless every field of the dataclass value
    `config` is within its `setting` range and choices (None is not checked): what a
    dataclass calls from `__post_init__`, so values built without flags are checked too."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if value is None:
            continue
        choices = field.metadata.get("choices")
        if choices and value not in choices:
            raise ValueError(f"{field.name}={value!r} is not one of {', '.join(choices)}")
        found = field.metadata.get("bounds")
        message = found.error(field.name, value) if found else None
        if message:
            raise ValueError(message)


def check_no_positional(argv) -> None:
    """ValueError (one line) naming the arguments after the program name in `argv` (what
    absl leaves once it has read the flags): no command here takes positional arguments,
    and they are most often a glob the shell expanded, of which the flag got one file."""
    stray = list(argv[1:]) if argv else []
    if not stray:
        return
    shown = f"{stray[:5]}" + (f" ... ({len(stray)} in all)" if len(stray) > 5 else "")
    raise ValueError(
        f"unexpected arguments {shown}: every input is a --flag=value; quote globs "
        "(--input_file='data/*.tfrecord') so that the shell does not expand them into "
        "arguments"
    )


def parse_tool_flags(flag_values: flags.FlagValues, argv, required=()) -> bool:
    """How each module tool reads its own FlagValues: marks `required`, parses `argv`
    (default sys.argv; `--help`: the flags printed, exit 0) and, on a bad command line,
    prints one `error: ...` line (then the usage, for a flag error) to stderr. Returns
    False when parsing failed or arguments were left over (`check_no_positional`); the
    tool then exits nonzero without writing."""
    argv = sys.argv if argv is None else argv
    if any(a in ("-h", "--help", "-help", "--helpfull") for a in argv[1:]):
        print(flag_values.get_help())  # the tool's flags, then exit 0 as absl's --help does
        raise SystemExit(0)
    for name in required:
        flags.mark_flag_as_required(name, flag_values=flag_values)
    try:
        rest = flag_values(argv)
    except flags.Error as e:
        print(f"error: {e}\n{flag_values.main_module_help()}", file=sys.stderr)
        return False
    try:
        check_no_positional(rest)
        check_flag_ranges(flag_values)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return False
    return True
