"""The command line of `albert-tflite-predict` (`python -m albert_tf.serving.tflite_predict`):
its settings and `Command`, parsed once by tflite_predict's `main`. A module of its own so
that importing the runner (`LiteModel`) needs no flag machinery."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting
from data_pipeline.command import Command


@dataclasses.dataclass(frozen=True)
class PredictSettings:
    """The .tflite file, the text in and the answers out."""

    model: str | None = setting(None, "The .tflite file.")
    input: str = setting("-", "Input file (default stdin).")
    output: str = setting("-", "Output file (default stdout).")
    threads: int | None = setting(None, "Interpreter threads (default: every core).", minimum=1)
    batch_size: int = setting(1, "Rows per call.", minimum=1)


def command(doc: str) -> Command:
    """The command, whose --help prints `doc` (tflite_predict's docstring)."""
    return Command("albert-tflite-predict", doc, (PredictSettings,), required=("model",))
