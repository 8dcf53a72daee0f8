"""The export formats and LiteRT weight precisions: one name and one default for every
command that exports (the runners' `--export_dir`, `python -m albert_tf.serving.export`).

Defining the two flags is not reading them: each command passes its own FlagValues and reads
the values itself."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting

FORMATS = ("savedmodel", "tflite")
QUANTIZATIONS = ("float32", "float16", "int8")
DEFAULT_FORMATS = ("savedmodel",)
DEFAULT_QUANTIZE = ("float32",)
LITERT_DIR = "litert"  # EXPORT_DIR/litert/<task>-<quantization>.tflite


def define_format_flags(flag_values=None) -> None:
    """--export_format (savedmodel and/or tflite) and --export_quantize (the LiteRT files'
    weight precisions), with one-line errors for unknown values."""
    from absl import flags

    fv = flags.FLAGS if flag_values is None else flag_values
    flags.DEFINE_multi_enum(
        "export_format",
        list(DEFAULT_FORMATS),
        list(FORMATS),
        "savedmodel (EXPORT_DIR/N: TF Serving, TensorFlow) and/or tflite (on-device LiteRT "
        f"files in EXPORT_DIR/{LITERT_DIR}/, one per --export_quantize).",
        flag_values=fv,
    )
    flags.DEFINE_list(
        "export_quantize",
        list(DEFAULT_QUANTIZE),
        "--export_format tflite: the weights' precisions, any of "
        f"{', '.join(QUANTIZATIONS)} (float16 weights; dynamic-range int8 weights).",
        flag_values=fv,
    )
    flags.register_validator(
        "export_quantize",
        lambda values: set(values) <= set(QUANTIZATIONS),
        f"--export_quantize takes {', '.join(QUANTIZATIONS)}",
        flag_values=fv,
    )


def formats_from_flags(flag_values) -> dict:
    """The `formats` and `quantize` arguments of the export functions, from parsed flags."""
    return {
        "formats": tuple(flag_values.export_format),
        "quantize": tuple(flag_values.export_quantize),
    }


@dataclasses.dataclass(frozen=True)
class ExportSettings:
    """What --export_dir writes when the run is done (albert_tf.serving.export)."""

    export_dir: str | None = setting(
        None,
        "When done, export the trained model as EXPORT_DIR/N (next version; raw text in; "
        "the fine-tuned checkpoint, vocabulary and task.json in N/assets.extra/finetuned); "
        "with --num_runs, one per run (EXPORT_DIR/run_i/N).",
    )
    export_format: tuple[str, ...] = setting(
        DEFAULT_FORMATS,
        "savedmodel (EXPORT_DIR/N: TF Serving, TensorFlow) and/or tflite (on-device LiteRT "
        "files in EXPORT_DIR/litert/, one per --export_quantize).",
        choices=FORMATS,
        repeatable=True,
    )
    export_quantize: tuple[str, ...] = setting(
        DEFAULT_QUANTIZE,
        "--export_format tflite: the weights' precisions, any of "
        f"{', '.join(QUANTIZATIONS)} (float16 weights; dynamic-range int8 weights).",
        choices=QUANTIZATIONS,
    )


def export_formats(s) -> dict:
    """The `formats` and `quantize` arguments of the export functions, from settings `s`
    (ExportSettings' fields)."""
    return {"formats": tuple(s.export_format), "quantize": tuple(s.export_quantize)}
