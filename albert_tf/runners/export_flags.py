"""What a runner's --export_dir writes: the export format flags (--export_format,
--export_quantize) and the export of the trained model with them."""

from __future__ import annotations

from absl import flags

FLAGS = flags.FLAGS


def define_export_format_flags() -> None:
    """--export_format and --export_quantize: what `--export_dir` receives."""
    from albert_tf.serving.export import FORMATS
    from albert_tf.serving.litert import QUANTIZATIONS

    flags.DEFINE_multi_enum(
        "export_format",
        ["savedmodel"],
        list(FORMATS),
        "--export_dir: savedmodel (EXPORT_DIR/N) and/or tflite (on-device LiteRT files in "
        "EXPORT_DIR/litert/, one per --export_quantize).",
    )
    flags.DEFINE_list(
        "export_quantize",
        ["float32", "float16", "int8"],
        f"--export_format tflite: the weights' precisions ({', '.join(QUANTIZATIONS)}).",
    )

    def _known(values):
        return set(values) <= set(QUANTIZATIONS)

    flags.register_validator(
        "export_quantize", _known, f"--export_quantize takes {', '.join(QUANTIZATIONS)}"
    )


def export_formats_from_flags() -> dict:
    """export_trained's / export_formats' `formats` and `quantize` from the flags."""
    return {"formats": tuple(FLAGS.export_format), "quantize": tuple(FLAGS.export_quantize)}


def export_trained_from_flags(model, export_dir: str, serving_task: dict, tokenizer_spec):
    """`albert_tf.serving.export.export_trained` of `model` with the format flags and the
    tokenizer of `tokenizer_spec`; prints one line per path written and returns the paths."""
    from albert_tf.serving.export import export_trained

    files = {"spm_model_file": None, "vocab_file": None}
    files["vocab_file" if tokenizer_spec.is_wordpiece else "spm_model_file"] = tokenizer_spec.path
    paths = export_trained(
        model,
        export_dir,
        serving_task,
        files["spm_model_file"],
        vocab_file=files["vocab_file"],
        **export_formats_from_flags(),
    )
    print_exports(paths, finetuned=True)
    return paths


def print_exports(paths, finetuned: bool = False) -> None:
    """One line per export: `LiteRT: PATH`, or `SavedModel: PATH` (`finetuned`: with the
    fine-tuned model directory inside it, N/assets.extra/finetuned)."""
    import os

    for path in paths:
        if path.endswith(".tflite"):
            print(f"LiteRT: {path}", flush=True)
        elif finetuned:
            inside = os.path.join(path, "assets.extra", "finetuned")
            print(f"SavedModel: {path} (fine-tuned checkpoint in {inside})", flush=True)
        else:
            print(f"SavedModel: {path}", flush=True)
