"""Settings as dataclass fields (the base tier: imports nothing of this project, so data
tools and albert_tf use it alike): a setting is declared once, as a field whose metadata
holds its help text, range, choices, resume rule and sweepability (`setting`); the one
parser (`data_pipeline.command`) makes its flag, checks its range and builds the value.

    @dataclasses.dataclass(frozen=True)
    class Config:
        steps: int = setting(100, "Optimizer steps.", minimum=1)
        dropout: float = setting(0.1, "Dropout.", minimum=0, below=1)
        dtype: str = setting("float32", "Compute dtype.", choices=("float32", "bfloat16"))

        def __post_init__(self):
            check_fields(self)      # values built without a command line are checked too

A range is a `Bounds`; its one-line complaint is the same from the command line
(`--steps=0 must be >= 1`) and from the dataclass (`steps=0 must be >= 1`). Stray positional
arguments are refused (`check_no_positional`): an unquoted `--input_file data/*.tfrecord`
expands into one flag value and the other files as arguments, which absl would otherwise
leave unread.
"""

from __future__ import annotations

import dataclasses


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
