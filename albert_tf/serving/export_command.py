"""The command line of `albert-export` (`python -m albert_tf.serving.export`): its settings
and `Command`, parsed once by export's `main`. A module of its own, importing no TensorFlow,
so that `--help` and a bad flag are answered before the exporters load.

The per-kind options are the kinds' own task.json fields that an export may set
(`TaskKind.export_options`; tests/serving/test_kind_hooks.py checks they are settings here):
each overrides the fine-tuned model's value, None keeps it."""

from __future__ import annotations

import dataclasses

from albert_tf.serving.formats import LITERT_DIR, ONNX_DIR, ExportFormats
from data_pipeline.cli import setting
from data_pipeline.command import Command

TASKS = (
    "classifier",
    "multiple_choice",
    "squad",
    "token_classifier",
    "encoder",
    "fill_mask",
    "zero_shot",
)
# The encoder's embedding choices (albert_tf.modeling.pooling.POOLINGS, listed here so that
# --help needs no TensorFlow; tests/serving/test_embedding_export.py checks they agree).
POOLING_CHOICES = ("pooler", "cls", "mean", "max")


@dataclasses.dataclass(frozen=True)
class ExportTarget:
    """What is exported, from which weights, where, and how text is read."""

    task: str | None = setting(None, "What the SavedModel does.", choices=TASKS)
    init_checkpoint: str | None = setting(
        None,
        "A fine-tuned model directory (a runner's --export_dir), or any checkpoint for "
        "--task encoder.",
    )
    albert_config_file: str | None = setting(
        None,
        "Config (encoder exports of plain checkpoints; found beside the checkpoint otherwise).",
    )
    spm_model_file: str | None = setting(
        None, "SentencePiece model (default: the fine-tuned directory's)."
    )
    vocab_file: str | None = setting(
        None,
        "WordPiece vocab.txt, instead of --spm_model_file (default: the fine-tuned directory's).",
    )
    export_dir: str | None = setting(
        None,
        f"SavedModel versions are written as EXPORT_DIR/N, LiteRT files in "
        f"EXPORT_DIR/{LITERT_DIR}/, ONNX files in EXPORT_DIR/{ONNX_DIR}/.",
    )
    fixed_length: bool = setting(
        False,
        "tflite: pad every request to max_seq_length (static shapes, for delegates that "
        "need them) instead of to its longest row.",
    )
    max_seq_length: int | None = setting(
        None, "Default: the fine-tuned model's or the pretraining run's (else 128)."
    )
    do_lower_case: bool | None = setting(
        None, "Default: the fine-tuned model's or the pretraining run's (else True)."
    )


@dataclasses.dataclass(frozen=True)
class KindOptions:
    """Per task kind: its task.json fields an export may set (None: the model's)."""

    pooling: str | None = setting(
        None,
        "encoder: the sentence embedding of embed/similarity (default mean): pooler = "
        "tanh(dense(h_[CLS])), cls = h_[CLS], mean/max over the real tokens.",
        choices=POOLING_CHOICES,
    )
    normalize: bool | None = setting(None, "encoder: L2-normalize the embeddings (default no).")
    encoder_outputs: bool | None = setting(
        None, "encoder: embed also returns every block's output, encoder_outputs [B, N, S, H]."
    )
    top_k: int | None = setting(None, "fill_mask: candidates per mask (default 5).")
    doc_stride: int | None = setting(None, "squad: default the model's (else 128).")
    max_query_length: int | None = setting(None, "squad: default the model's (else 64).")
    max_answer_length: int | None = setting(
        None, "squad: longest answer in tokens (default the model's, else 30)."
    )
    n_best_size: int | None = setting(
        None, "squad: start/end candidates per window (default the model's, else 20)."
    )
    null_score_diff_threshold: float | None = setting(
        None, "squad v2.0: default the model's (else 0)."
    )
    max_windows: int | None = setting(
        None,
        "squad, token_classifier, classifier (with a doc_stride): the most windows one "
        "request may need (default the model's, else "
        "albert_tf.serving.request_windows.DEFAULT_MAX_WINDOWS); beyond, an error.",
        minimum=1,
    )
    max_pairs: int | None = setting(
        None,
        "zero_shot: the most (text, candidate label) pairs one request may hold (default "
        "the model's, else albert_tf.serving.request_windows.DEFAULT_MAX_WINDOWS); beyond, "
        "an error.",
        minimum=1,
    )


def command(doc: str = "") -> Command:
    """The command, whose --help prints `doc` (export's docstring, `COMMAND`'s: its
    usage and signatures are the export module's)."""
    return Command(
        "albert-export",
        doc,
        (ExportTarget, ExportFormats, KindOptions),
        required=("task", "init_checkpoint", "export_dir"),
    )


COMMAND = command(
    "python -m albert_tf.serving.export --task KIND --init_checkpoint C --export_dir D: "
    "SavedModels (and LiteRT files) that take raw text, and ids-in ONNX files; the "
    "signatures of each task are in albert_tf/serving/export.py's docstring."
)
