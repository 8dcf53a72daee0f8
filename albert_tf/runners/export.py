"""What a runner's --export_dir writes: the trained model with its task.json in the formats
of the settings (albert_tf.serving.export), one line per path written."""

from __future__ import annotations

import os


def export_trained(model, export_dir: str, info, tokenizer_spec, s) -> list[str]:
    """`albert_tf.serving.export.export_trained` of `model` with its TaskInfo `info`, the
    formats of `s` and the tokenizer of `tokenizer_spec`; prints and returns the paths."""
    from albert_tf.serving.export import export_trained as export
    from albert_tf.serving.formats import export_formats

    paths = export(model, export_dir, info, tokenizer_spec, **export_formats(s))
    print_exports(paths, finetuned=True)
    return paths


def print_exports(paths, finetuned: bool = False) -> None:
    """One line per export: `LiteRT: PATH`, or `SavedModel: PATH` (`finetuned`: with the
    fine-tuned model directory inside it, N/assets.extra/finetuned)."""
    for path in paths:
        if path.endswith(".tflite"):
            print(f"LiteRT: {path}", flush=True)
        elif finetuned:
            inside = os.path.join(path, "assets.extra", "finetuned")
            print(f"SavedModel: {path} (fine-tuned checkpoint in {inside})", flush=True)
        else:
            print(f"SavedModel: {path}", flush=True)
