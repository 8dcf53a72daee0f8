"""Command-line parsing for the module tools (`python -m albert_tf.checkpoints.convert`,
`...checkpoints.export_encoder`, `...serving.export`, `...tools.analysis`): each has its
own `absl.flags.FlagValues`, so importing a tool never defines flags in the runners'
global FLAGS. The base tier: imports nothing of this project."""

from __future__ import annotations

from absl import flags


def parse_tool_flags(flag_values: flags.FlagValues, argv, required) -> bool:
    """For the module CLIs (convert, export_encoder, analysis), each with its own
    FlagValues: marks `required`, parses `argv` (default sys.argv) and, on a bad command
    line, prints one error line plus the usage. Returns False when parsing failed."""
    import sys

    for name in required:
        flags.mark_flag_as_required(name, flag_values=flag_values)
    try:
        flag_values(sys.argv if argv is None else argv)
    except flags.Error as e:
        print(f"error: {e}\n{flag_values.main_module_help()}", file=sys.stderr)
        return False
    return True
