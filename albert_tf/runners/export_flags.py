"""What a runner's --export_dir writes: the export format flags (--export_format,
--export_quantize) and the export of the trained model with them."""

from __future__ import annotations

from absl import flags

FLAGS = flags.FLAGS


def define_export_format_flags() -> None:
    """--export_format and --export_quantize: what `--export_dir` receives
    (albert_tf.serving.formats owns their names and defaults)."""
    from albert_tf.serving.formats import define_format_flags

    define_format_flags()


def export_formats_from_flags() -> dict:
    """export_trained's / export_formats' `formats` and `quantize` from the flags."""
    from albert_tf.serving.formats import formats_from_flags

    return formats_from_flags(FLAGS)


def export_trained_from_flags(model, export_dir: str, serving_task, tokenizer_spec):
    """`albert_tf.serving.export.export_trained` of `model` with its TaskInfo `serving_task`,
    the format flags and the tokenizer of `tokenizer_spec`; prints one line per path
    written and returns the paths."""
    from albert_tf.serving.export import export_trained

    paths = export_trained(
        model, export_dir, serving_task, tokenizer_spec, **export_formats_from_flags()
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
