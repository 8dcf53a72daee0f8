"""The command line of `albert-tflite-predict` (`python -m albert_tf.serving.tflite_predict`)
and of `python -m albert_tf.serving.onnx_predict`: their settings and `Command`, parsed once
by `tflite_predict.predict_command`. A module of its own so that importing the runner
(`LiteModel`, `OnnxModel`) needs no flag machinery."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting
from data_pipeline.command import Command


@dataclasses.dataclass(frozen=True)
class PredictSettings:
    """The model file, the text in and the answers out."""

    model: str | None = setting(None, "The model file (.tflite; .onnx for onnx_predict).")
    input: str = setting("-", "Input file (default stdin).")
    output: str = setting("-", "Output file (default stdout).")
    threads: int | None = setting(
        None,
        "The interpreter's (ONNX Runtime's intra-op) threads (default: every core).",
        minimum=1,
    )
    batch_size: int = setting(1, "Rows per call.", minimum=1)


def command(doc: str, name: str = "albert-tflite-predict") -> Command:
    """The command `name`, whose --help prints `doc` (the runner module's docstring)."""
    return Command(name, doc, (PredictSettings,), required=("model",))
