"""SavedModels that take raw text: classify, choose, answer questions, tag words, embed.

    python -m albert_tf.serving.export --task {classifier,multiple_choice,squad,
        token_classifier,encoder,fill_mask} \\
        --init_checkpoint C [--albert_config_file F] [--spm_model_file M | --vocab_file V] \\
        --export_dir D \\
        [--export_format savedmodel --export_format tflite --export_format onnx \\
         --export_quantize float32,float16,int8 --onnx_quantize float32,int8] \\
        [--export_dtype bfloat16]

(`--export_format tflite`: on-device LiteRT files, see albert_tf.serving.litert;
`--export_format onnx`: ids-in ONNX files, see albert_tf.serving.onnx_export; the formats,
precisions and their defaults are albert_tf.serving.formats'.)

The model is resolved once (`albert_tf.serving.resolve`: task.json read once, weights
restored once) and handed to each format's writer (`saved_model`, `litert`); each task's
modules are in its folder of `albert_tf.serving.tasks`, found through the registry
(`albert_tf.serving.registry.SERVING`). This module imports no TensorFlow until it exports.

The tokenization the model was trained with runs inside the graph: ALBERT's normalization
and SentencePiece (tensorflow-text;
`data_pipeline.tokenization.sentencepiece_tokenizer.GraphTokenizer`, whose ids
equal the Python tokenizer's), with the SentencePiece model stored in the SavedModel (and
as the file `assets/<name>.model`); then truncation and packing exactly as for training;
then the model. A client needs only `tensorflow` and `tensorflow_text` (for the op kernels).
A WordPiece model (`--vocab_file`, the official Chinese ALBERTs') tokenizes with BERT's
basic tokenizer and WordPiece in the graph instead (`albert_tf.serving.text_tokenizer.
TextTokenizer`, ids equal to `data_pipeline.tokenization.wordpiece.WordPieceTokenizer`'s), its
vocab.txt
under `assets/`: every task but squad.

`--init_checkpoint` is best a fine-tuned model directory (a runner's `--export_dir`,
`albert_tf.checkpoints.finetuned`): its task.json (`TaskInfo`) brings the labels, sequence
length, casing and vocabulary, so none can be mismatched. Any checkpoint works for `--task
encoder` (give `--spm_model_file` or `--vocab_file`; a pretraining run's checkpoint is
checked against the tokenizer its records were written with, recorded in its
run_config.json). Each export is a new version directory `D/1`, `D/2`, ... as TF Serving
expects, written under a temporary name and renamed when complete.

`--export_dtype bfloat16`: the model computes in bfloat16 over float32 variables
(albert_tf.serving.compute_dtype; the SavedModel's root records it as `compute_dtype`).

Signatures (batch dimension first; strings are UTF-8, invalid bytes become U+FFFD):
  classifier       serving_default(text_a [B] (, text_b [B] for pair tasks)) →
                   probabilities [B, L] float32, label [B] string, logits; regression:
                   score [B].
  multiple_choice  serving_default(passage [B], question [B], options [B, C]) →
                   probabilities [B, C], choice [B] int32; "" options are padding.
  encoder          embed(text [B]) → embeddings [B, H] (--pooling, --normalize),
                   pooled_output [B, H], sequence_output [B, S, H], input_mask [B, S]
                   (--encoder_outputs: and encoder_outputs [B, N, S, H]);
                   vectors(text [B]) → embeddings [B, H] alone (rows in length-sorted
                   groups: the fast path for vectors);
                   similarity(text_a [B], text_b [B]) → similarity [B] (cosine);
                   encode(input_ids, input_mask, segment_ids [B, S]).
  fill_mask        serving_default(text [B], each with one or more "[MASK]") → token_ids,
                   tokens, scores, sequences [B, M, k] (--top_k), mask_count [B]
                   (SentencePiece models; any pretraining checkpoint with its MLM head).
  squad            serving_default(question [B], context [B]) → answer [B] string,
                   score [B], start/end [B] int32 (character offsets in the context;
                   -1 for no answer), and no_answer_probability, null_odds [B] for v2.0.
  token_classifier serving_default(text [B]) → words, tags [B, W] string, tag_scores,
                   word_start/word_end [B, W] (character offsets), num_words [B];
                   entity_type, entity_text [B, E], entity_start/entity_end, entity_score,
                   num_entities [B] (albert_tf.serving.tasks.token_classifier); windowed
                   with the doc stride, every word tagged once; at most --max_windows
                   windows and its bytes a request, else InvalidArgumentError.
  classifier, multiple_choice, encoder:
                   tokenize(text_a [B], text_b [B]) → input_ids, input_mask, segment_ids
                   [B, S]: the packed ids, to check a client's own tokenization.
Empty strings give [CLS] [SEP] (a defined prediction); text longer than max_seq_length is
truncated as in training; a SQuAD context longer than one window is windowed in the
graph with the doc stride (as many windows as the batch's longest context needs).
Control characters and NUL bytes are tokenized as the Python tokenizer does (see
`data_pipeline.tokenization.sentencepiece_tokenizer`). An empty batch (0 rows) gives empty outputs
of the same
dtypes ([0, L] probabilities, [0] labels, ...). Inputs of one request must have the same
number of rows, else InvalidArgumentError "text_a has 3 rows but text_b has 2".
"""

from __future__ import annotations

import os
import sys

from albert_tf.serving.compute_dtype import check_dtype
from albert_tf.serving.export_dir import check_export_dir
from albert_tf.serving.formats import (
    DEFAULT_EXPORT_DTYPE,
    DEFAULT_FORMATS,
    DEFAULT_QUANTIZE,
    FORMATS,
    LITERT_DIR,
    ONNX_DIR,
)
from albert_tf.serving.resolve import resolve
from data_pipeline.io import filesystem
from data_pipeline.phases import phase


def serving_task(kind: str):
    """The serving builders of `kind` (albert_tf.serving.registry); ValueError (one line)
    for a kind with none."""
    from albert_tf.serving.registry import SERVING

    if kind not in SERVING:
        raise ValueError(f"--task {kind!r} is not one of {', '.join(SERVING)}")
    return SERVING[kind]


def build_module(task: str, init_checkpoint: str, **options):
    """The SavedModel module of `task` with weights from `init_checkpoint` (options: those
    of `resolve.resolve`)."""
    builders = serving_task(task)
    return builders.saved_model(resolve(task, init_checkpoint, **options))


def export(task: str, init_checkpoint: str, export_dir: str, **options) -> str:
    """Builds and writes the SavedModel; returns its version directory."""
    return export_formats(task, init_checkpoint, export_dir, ("savedmodel",), **options)[0]


def export_tflite(
    task: str,
    init_checkpoint: str,
    export_dir: str,
    quantize=DEFAULT_QUANTIZE,
    fixed_length: bool = False,
    **options,
) -> list[str]:
    """The LiteRT files alone, in `export_dir` itself (not its litert/): see
    `litert.write_litert`."""
    from albert_tf.serving.litert import write_litert

    builders = serving_task(task)
    check_export_dir(export_dir)
    resolved = resolve(task, init_checkpoint, on_device=True, **options)
    built = builders.litert(resolved, fixed_length)
    return write_litert(resolved, built, export_dir, quantize, fixed_length)


def export_formats(
    task: str,
    init_checkpoint: str,
    export_dir: str,
    formats=DEFAULT_FORMATS,
    quantize=DEFAULT_QUANTIZE,
    fixed_length: bool = False,
    onnx_quantize=DEFAULT_QUANTIZE,
    dtype: str = DEFAULT_EXPORT_DTYPE,
    card_sources=None,
    command: str | None = None,
    **options,
) -> list[str]:
    """Each of `formats`: the SavedModel as version `export_dir/N`, the on-device files
    as `export_dir/litert/<task>-<quantize>.tflite` (albert_tf.serving.litert), one per
    `quantize`, `fixed_length` or not, the ONNX files as `export_dir/onnx/<task>[-int8].onnx`
    (albert_tf.serving.onnx_export), one per `onnx_quantize`, all from one resolution of
    the model (`resolve`); the SavedModel computes in `dtype` (albert_tf.serving.
    compute_dtype: float32, or bfloat16 over float32 variables), the other files in
    float32. Everything is checked before anything is written. Returns what was written.
    Each version's model card (`albert_tf.checkpoints.model_card`; one in litert/ and onnx/
    too) is made from the records in `card_sources` (default: beside `init_checkpoint`, a
    run's best/ or a fine-tuned directory) and names `command`, the export's."""
    from albert_tf.checkpoints.model_card import CardRecords, near
    from albert_tf.serving.litert import write_litert
    from albert_tf.serving.saved_model import write_saved_model

    check_dtype(dtype)
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"--export_format {unknown[0]!r} is not one of {', '.join(FORMATS)}")
    builders = serving_task(task)
    on_device = "tflite" in formats
    check_export_dir(export_dir, LITERT_DIR if on_device else None)
    if "onnx" in formats:
        check_export_dir(export_dir, ONNX_DIR)
    resolved = resolve(task, init_checkpoint, on_device=on_device, **options)
    onnx_built = builders.onnx(resolved) if "onnx" in formats else None  # (refusals first)
    paths = []
    card = {
        "sources": near(init_checkpoint) if card_sources is None else tuple(card_sources),
        "commands": (command,) if command else (),
        "known": CardRecords(  # (resolved once: task.json is not read again for the cards)
            task=resolved.task,
            tokenizer={
                "kind": resolved.tokenizer.kind,
                "sha256": resolved.python_tokenizer.checksum,
            },
            tokenizer_source=resolved.tokenizer.path,
        ),
    }
    if "savedmodel" in formats:
        with phase(f"writing the {task} SavedModel to {export_dir}") as done:
            module = builders.saved_model(resolved.in_dtype(dtype))
            written = write_saved_model(
                module, export_dir, resolved.finetuned_dir, resolved.task, card
            )
            paths.append(written)
            done.wrote(written)
    if on_device:
        litert_dir = os.path.join(export_dir, LITERT_DIR)
        with phase(f"writing {task} LiteRT files ({', '.join(quantize)}) to {litert_dir}") as done:
            built = builders.litert(resolved, fixed_length)
            written = write_litert(resolved, built, litert_dir, quantize, fixed_length)
            paths += written
            _files_card(litert_dir, resolved, card, "On-device LiteRT files")
            done.wrote(f"{len(written)} files")
    if onnx_built is not None:
        from albert_tf.serving.onnx_export import write_onnx

        onnx_dir = os.path.join(export_dir, ONNX_DIR)
        with phase(f"writing {task} ONNX files ({', '.join(onnx_quantize)}) to {onnx_dir}") as done:
            written = write_onnx(resolved, onnx_built, onnx_dir, onnx_quantize)
            paths += written
            _files_card(onnx_dir, resolved, card, "ONNX files")
            done.wrote(f"{len(written)} files")
    return paths


def _files_card(directory: str, resolved, card: dict, what: str) -> None:
    """README.md of the LiteRT or ONNX directory: the model's records (its fine-tuned
    directory's, then the run's), naming the files it holds."""
    from albert_tf.checkpoints.model_card import write_model_card

    names = sorted(n for n in filesystem.listdir(directory) if n.endswith((".tflite", ".onnx")))
    kept = (resolved.finetuned_dir,) if resolved.finetuned_dir else ()
    write_model_card(
        directory,
        (*kept, *card["sources"]),
        name=os.path.basename(os.path.normpath(directory)),
        what=f"{what} of the {resolved.task.task_kind.title} model: {', '.join(names)}.",
        commands=card["commands"],
        known=card["known"],
    )


def export_trained(
    model,
    export_dir: str,
    task,
    tokenizer,
    formats=DEFAULT_FORMATS,
    quantize=DEFAULT_QUANTIZE,
    run_dir: str | None = None,
    **options,
) -> list[str]:
    """A runner's `--export_dir`: `model` (just trained) with its TaskInfo `task` and
    TokenizerSpec `tokenizer` → fine-tuned model directory → SavedModel version
    `export_dir/N` (with the directory in its assets.extra/finetuned) and/or LiteRT files
    (`export_formats`; its model card from the records of the run in `run_dir`). Returns
    what was written."""
    import tempfile

    from albert_tf.checkpoints import finetuned
    from albert_tf.serving.resolve import on_device_refusal

    check_export_dir(export_dir)
    if "tflite" in formats:  # refused before anything is written
        on_device_refusal(task.kind, tokenizer, export_dir)
    filesystem.makedirs(export_dir)
    # Beside the export (same disk), or in the local temporary directory for a URL.
    scratch = None if filesystem.is_url(export_dir) else export_dir
    with tempfile.TemporaryDirectory(dir=scratch, prefix=".finetuned-") as tmp:
        directory = finetuned.save_finetuned(model, os.path.join(tmp, "model"), task, tokenizer)
        sources = (run_dir,) if run_dir else ()
        return export_formats(
            task.kind, directory, export_dir, formats, quantize, card_sources=sources, **options
        )


def print_exports(paths, finetuned: bool = False) -> None:
    """One line per export: `LiteRT: PATH`, `ONNX: PATH`, or `SavedModel: PATH`
    (`finetuned`: with the fine-tuned model directory inside it, N/assets.extra/finetuned)."""
    for path in paths:
        if path.endswith(".tflite"):
            print(f"LiteRT: {path}", flush=True)
        elif path.endswith(".onnx"):
            print(f"ONNX: {path}", flush=True)
        elif finetuned:
            inside = os.path.join(path, "assets.extra", "finetuned")
            print(f"SavedModel: {path} (fine-tuned checkpoint in {inside})", flush=True)
        else:
            print(f"SavedModel: {path}", flush=True)


def main(argv=None) -> int:
    """`albert-export`: the command line parsed once (albert_tf.serving.export_command;
    --help and a bad flag before TensorFlow loads: exit 0 / 2), then `run_export`; SIGTERM:
    one line, exit 143, the staging directories removed (`stops.sigterm_raises`)."""
    from albert_tf.serving.export_command import COMMAND
    from albert_tf.training.stops import Terminated, sigterm_raises

    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    try:
        with sigterm_raises():
            return run_export(s)
    except Terminated as e:
        print(str(e), file=sys.stderr)
        return 143


def run_export(s) -> int:
    """The export of parsed settings `s` (export_command's): exit 1 and one `error:`
    line for a bad export."""
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.checkpoints.task_kinds import task_kind
    from albert_tf.modeling.config import AlbertConfig, ConfigError
    from data_pipeline.tokenization.spec import TokenizerSpec

    # The kind's own fields this command sets (its `export_options`; the others: ignored).
    details = {k: getattr(s, k) for k in task_kind(s.task).export_options}
    try:
        config = AlbertConfig.from_json_file(s.albert_config_file) if s.albert_config_file else None
        paths = export_formats(
            s.task,
            s.init_checkpoint,
            s.export_dir,
            fixed_length=s.fixed_length,
            albert_config=config,
            tokenizer=TokenizerSpec.optional(s.spm_model_file, s.vocab_file),
            max_seq_length=s.max_seq_length,
            do_lower_case=s.do_lower_case,
            formats=tuple(s.export_format),
            quantize=tuple(s.export_quantize),
            onnx_quantize=tuple(s.onnx_quantize),
            dtype=s.export_dtype,
            command=s.command_line("python -m albert_tf.serving.export"),
            **details,
        )
    except (ValueError, OSError, CheckpointError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"exported {s.task}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
