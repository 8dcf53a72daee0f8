"""The export formats, their weight precisions (LiteRT's, ONNX's) and the SavedModel's
compute dtype: one name and one default for every command that exports (the runners'
`--export_dir`, `python -m albert_tf.serving.export`).

Defining the flags is not reading them: each command passes its own FlagValues and reads
the values itself."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting

FORMATS = ("savedmodel", "tflite", "onnx")
QUANTIZATIONS = ("float32", "float16", "int8")
DEFAULT_FORMATS = ("savedmodel",)
DEFAULT_QUANTIZE = ("float32",)
LITERT_DIR = "litert"  # EXPORT_DIR/litert/<task>-<quantization>.tflite
# ONNX: float32 weights, or dynamic-range int8 weights (onnxruntime's quantize_dynamic).
ONNX_QUANTIZATIONS = ("float32", "int8")
ONNX_DIR = "onnx"  # EXPORT_DIR/onnx/<task>.onnx, <task>-int8.onnx
# The SavedModel's compute dtype (albert_tf.serving.compute_dtype): float32, or bfloat16
# matmuls over float32 variables (the mixed-precision policy training uses).
EXPORT_DTYPES = ("float32", "bfloat16")
DEFAULT_EXPORT_DTYPE = "float32"


@dataclasses.dataclass(frozen=True)
class ExportFormats:
    """The export's formats: SavedModel, on-device files and/or ONNX, their precisions."""

    export_format: tuple[str, ...] = setting(
        DEFAULT_FORMATS,
        "savedmodel (EXPORT_DIR/N: TF Serving, TensorFlow), tflite (on-device LiteRT "
        "files in EXPORT_DIR/litert/, one per --export_quantize) and/or onnx (ids-in ONNX "
        "files in EXPORT_DIR/onnx/, one per --onnx_quantize, the vocabulary beside them).",
        choices=FORMATS,
        repeatable=True,
    )
    export_quantize: tuple[str, ...] = setting(
        DEFAULT_QUANTIZE,
        "--export_format tflite: the weights' precisions, any of "
        f"{', '.join(QUANTIZATIONS)} (float16 weights; dynamic-range int8 weights).",
        choices=QUANTIZATIONS,
    )
    onnx_quantize: tuple[str, ...] = setting(
        DEFAULT_QUANTIZE,
        "--export_format onnx: the weights' precisions, any of "
        f"{', '.join(ONNX_QUANTIZATIONS)} (int8: dynamic-range int8 weights, "
        "<task>-int8.onnx).",
        choices=ONNX_QUANTIZATIONS,
    )
    export_dtype: str = setting(
        DEFAULT_EXPORT_DTYPE,
        "The SavedModel's compute dtype: float32, or bfloat16 (matmuls in bfloat16 over "
        "float32 variables, as --precision bfloat16 trains; inputs and float32 outputs "
        "unchanged; fast on CPUs with avx512_bf16/amx_bf16). LiteRT and ONNX files stay "
        "float32.",
        choices=EXPORT_DTYPES,
    )


@dataclasses.dataclass(frozen=True)
class ExportSettings(ExportFormats):
    """What --export_dir writes when a run is done (albert_tf.serving.export)."""

    export_dir: str | None = setting(
        None,
        "When done, export the trained model as EXPORT_DIR/N (next version; raw text in; "
        "the fine-tuned checkpoint, vocabulary and task.json in N/assets.extra/finetuned); "
        "with --num_runs, one per run (EXPORT_DIR/run_i/N).",
    )


def export_formats(s) -> dict:
    """The `formats`, `quantize`, `onnx_quantize` and `dtype` arguments of the export
    functions, from settings `s` (ExportSettings' fields)."""
    return {
        "formats": tuple(s.export_format),
        "quantize": tuple(s.export_quantize),
        "onnx_quantize": tuple(s.onnx_quantize),
        "dtype": s.export_dtype,
    }
