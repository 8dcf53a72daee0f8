"""The one command-line parser: argv → one frozen settings value, parsed once.

A command is a tuple of settings groups (frozen dataclasses whose fields are
`data_pipeline.cli.setting`s). `Command.parse` defines their flags on a flag set of its
own (never absl's global FLAGS), parses argv, checks every range and choice, and returns
one frozen value holding every field of every group (`Settings`); everything below the
entry point receives that value, or the groups built from it:

    COMMAND = Command("albert-classify", __doc__, (TrainerConfig, ModelSettings, ...),
                      defaults={"learning_rate": 3e-5}, required=("output_dir",))
    settings = COMMAND.parse(sys.argv)       # UsageError (a ValueError): one line
    settings.learning_rate                   # a field of any group
    settings.given("recipe")                 # typed on the command line (not a default)
    settings.group(TrainerConfig, seed=7)    # one group's dataclass, with overrides
    dataclasses.replace(settings, learning_rate=1e-4)   # a sweep point

`--help` prints the command's doc and its flags grouped by settings group, to stdout, and
exits 0 — before anything heavy is imported: the groups' modules import no TensorFlow.

A field's metadata may also say how a resumed run treats it (`resume="guarded"`: may change
only with --allow_changed; `"fixed"`: never) and whether a sweep may vary it
(`sweepable=True`); `fields_with` lists them, so those lists live on the fields.
"""

from __future__ import annotations

import dataclasses
import shlex
import sys
import typing
from collections.abc import Iterable, Mapping

from absl import flags

from data_pipeline.cli import Bounds, check_no_positional


class UsageError(ValueError):
    """A bad command line: one line, naming the flag."""


class Settings:
    """Base of every command's settings value (a frozen dataclass made by `Command`):
    attribute access to every field of every group, plus what the user typed."""

    _given: frozenset = frozenset()

    def given(self, name: str) -> bool:
        """True when --name was on the command line (a recipe keeps such a value)."""
        return name in self._given

    def group(self, cls, **overrides):
        """`cls(...)` from this value's fields named as cls's (fields it lacks keep their
        defaults), `overrides` replacing some (e.g. a step count a runner derives)."""
        names = {f.name for f in dataclasses.fields(self)}
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(cls) if f.name in names}
        values.update(overrides)
        return cls(**values)

    def values(self) -> dict:
        """{field: value} of every setting (what run_config.json records as the flags)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def command_line(self, program: str) -> str:
        """`program` followed by the flags given on the command line (what the user typed,
        as parsed: lists joined by commas, a repeatable flag once a value; shell-quoted),
        in the settings' order: the command a model card says made the model."""
        parts = [program]
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name not in self._given or value is None:
                continue
            if isinstance(value, bool):
                parts.append(f"--{'' if value else 'no'}{field.name}")
            elif isinstance(value, tuple) and field.metadata.get("repeatable"):
                parts += [f"--{field.name}={shlex.quote(str(v))}" for v in value]
            else:
                parts.append(f"--{field.name}={shlex.quote(_show(value))}")
        return " ".join(parts)

    def has(self, name: str) -> bool:
        """True when the command has a setting `name`."""
        return any(f.name == name for f in dataclasses.fields(self))

    def replace(self, **changes):
        """`dataclasses.replace`, keeping what the user typed."""
        new = dataclasses.replace(self, **changes)
        object.__setattr__(new, "_given", self._given)
        return new


def fields_with(groups: Iterable[type], key: str, value=True) -> tuple[str, ...]:
    """The names of the fields of `groups` whose metadata `key` is `value` (e.g.
    `fields_with(groups, "resume", "guarded")`), in declaration order."""
    out = []
    for cls in groups:
        for field in dataclasses.fields(cls):
            if field.metadata.get(key) == value and field.name not in out:
                out.append(field.name)
    return tuple(out)


def _flag_kind(hint) -> type:
    """str, int, float, bool or tuple (`X | None` is X; `tuple[str, ...]` is tuple)."""
    if typing.get_origin(hint) is tuple:
        return tuple
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    kind = args[0] if args else hint
    if typing.get_origin(kind) is tuple:
        return tuple
    if kind not in (str, int, float, bool):
        raise TypeError(f"no flag type for {hint!r}")
    return kind


@dataclasses.dataclass(frozen=True)
class Command:
    """A command's settings: `name` (its console script), `doc` (printed by --help),
    `groups` (settings dataclasses; a field name belongs to one group), `defaults` (this
    command's default for a field), `bounds` (this command's range for a field),
    `required` (fields that must be given), `omitted` (fields of its groups it has no flag
    for: they keep their group's default, and --name is an unknown flag, never ignored)."""

    name: str
    doc: str
    groups: tuple[type, ...]
    defaults: Mapping = dataclasses.field(default_factory=dict)
    bounds: Mapping = dataclasses.field(default_factory=dict)
    required: tuple[str, ...] = ()
    omitted: tuple[str, ...] = ()

    def fields(self) -> list[tuple[type, dataclasses.Field, object]]:
        """(group, field, resolved type) of every setting, in group order."""
        seen, out = {}, []
        for cls in self.groups:
            hints = typing.get_type_hints(cls)
            for field in dataclasses.fields(cls):
                if field.name in self.omitted:
                    continue
                if field.name in seen:
                    raise TypeError(
                        f"{self.name}: {field.name} is in {seen[field.name].__name__} and "
                        f"{cls.__name__}"
                    )
                seen[field.name] = cls
                out.append((cls, field, hints[field.name]))
        return out

    def default(self, field: dataclasses.Field):
        if field.name in self.defaults:
            return self.defaults[field.name]
        if field.default is not dataclasses.MISSING:
            return field.default
        if field.default_factory is not dataclasses.MISSING:
            return field.default_factory()
        return None

    def settings_class(self) -> type:
        """The frozen dataclass of this command's settings (one field per setting, with
        its metadata); one class per command, so that two of its values compare."""
        made = self.__dict__.get("_settings_class")
        if made is not None:
            return made
        spec = []
        for _, field, hint in self.fields():
            copy = dataclasses.field(default=self.default(field), metadata=field.metadata)
            spec.append((field.name, hint, copy))
        name = "".join(p.capitalize() for p in self.name.replace("-", "_").split("_"))
        made = dataclasses.make_dataclass(f"{name}Settings", spec, bases=(Settings,), frozen=True)
        object.__setattr__(self, "_settings_class", made)
        return made

    def flag_values(self) -> flags.FlagValues:
        """A new flag set with one flag per setting."""
        fv = flags.FlagValues()
        for _, field, hint in self.fields():
            _define(fv, field, hint, self.default(field))
        return fv

    def help_text(self) -> str:
        """The doc, then each group's flags (help, choices, default) under its docstring's
        first line."""
        lines = [self.doc.strip(), "", "flags:"]
        for cls in self.groups:
            title = (cls.__doc__ or cls.__name__).strip().splitlines()[0]
            lines += ["", f"  {title}"]
            for field in dataclasses.fields(cls):
                if field.name in self.omitted:
                    continue
                default = self.default(field)
                shown = "" if default in (None, (), "") else f" (default: {_show(default)})"
                choices = field.metadata.get("choices")
                listed = f" (one of: {', '.join(choices)})" if choices else ""
                text = (field.metadata.get("help") or field.name) + listed + shown
                lines.append(f"    --{field.name}: {text}")
        return "\n".join(lines)

    def parse(self, argv, *, check: bool = True) -> Settings:
        """The settings of `argv` (argv[0] is the program). --help/-h: the help on stdout,
        SystemExit(0). A bad flag, a value out of range, a missing required flag or a
        positional argument: UsageError (one line). `check`: also each value's range."""
        argv = list(sys.argv if argv is None else argv)
        if any(a in ("-h", "--help", "-help", "--helpfull") for a in argv[1:]):
            print(self.help_text())
            raise SystemExit(0)
        fv = self.flag_values()
        try:
            rest = fv(argv)
        except flags.Error as e:
            raise UsageError(str(e).splitlines()[0]) from None
        check_no_positional(rest)
        values, given = {}, set()
        for _, field, hint in self.fields():
            flag = fv[field.name]
            value = flag.value
            if _flag_kind(hint) is tuple and value is not None:
                value = tuple(value)
            values[field.name] = value
            if flag.present:
                given.add(field.name)
        for name in self.required:
            if values.get(name) in (None, "", ()):
                raise UsageError(f"--{name} is required")
        if check:
            self.check(values)
        settings = self.settings_class()(**values)
        object.__setattr__(settings, "_given", frozenset(given))
        return settings

    def parse_tool(self, argv) -> Settings | None:
        """`parse` for a module tool (`python -m ...`): a bad command line (a UsageError,
        or stray positional arguments) is one `error: ...` line on stderr and None, and the
        tool exits 2 without writing; --help exits 0 as in `parse`."""
        try:
            return self.parse(argv)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return None

    def check(self, values: Mapping) -> None:
        """UsageError (one line, `--name=value must be ...`) for the first value out of
        its field's range (this command's `bounds` first) or choices; None is not
        checked."""
        for _, field, _hint in self.fields():
            value = values.get(field.name)
            if value is None:
                continue
            choices = field.metadata.get("choices")
            items = value if isinstance(value, tuple) else (value,)
            if choices and any(v not in choices for v in items):
                bad = next(v for v in items if v not in choices)
                raise UsageError(f"--{field.name}={bad} is not one of {', '.join(choices)}")
            found = self.bounds.get(field.name, field.metadata.get("bounds"))
            message = found.error(f"--{field.name}", value) if found else None
            if message:
                raise UsageError(message)

    def build(self, **values) -> Settings:
        """The settings value of `values` without a command line (tests, callers in
        Python): defaults for the rest, checked as `parse` checks."""
        known = {f.name for _, f, _ in self.fields()}
        unknown = sorted(set(values) - known)
        if unknown:
            raise UsageError(f"{self.name} has no setting {', '.join(unknown)}")
        full = {f.name: self.default(f) for _, f, _ in self.fields()}
        full.update(values)
        for name in self.required:
            if full.get(name) in (None, "", ()):
                raise UsageError(f"--{name} is required")
        self.check(full)
        settings = self.settings_class()(**full)
        object.__setattr__(settings, "_given", frozenset(values))
        return settings


def _show(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _define(fv: flags.FlagValues, field: dataclasses.Field, hint, default) -> None:
    """One absl flag on `fv` for `field` (its help, `default`, its choices)."""
    help_text = field.metadata.get("help") or field.name
    choices = field.metadata.get("choices")
    kind = _flag_kind(hint)
    name = field.name
    if kind is tuple:
        listed = list(default or ()) or None
        if field.metadata.get("repeatable"):
            if choices:
                flags.DEFINE_multi_enum(name, listed, list(choices), help_text, flag_values=fv)
            else:
                flags.DEFINE_multi_string(name, listed, help_text, flag_values=fv)
        else:
            flags.DEFINE_list(name, list(default or ()), help_text, flag_values=fv)
    elif choices:
        flags.DEFINE_enum(name, default, list(choices), help_text, flag_values=fv)
    elif kind is bool:
        flags.DEFINE_bool(name, default, help_text, flag_values=fv)
    elif kind is int:
        flags.DEFINE_integer(name, default, help_text, flag_values=fv)
    elif kind is float:
        flags.DEFINE_float(name, default, help_text, flag_values=fv)
    else:
        flags.DEFINE_string(name, default, help_text, flag_values=fv)


__all__ = ["Bounds", "Command", "Settings", "UsageError", "fields_with"]
