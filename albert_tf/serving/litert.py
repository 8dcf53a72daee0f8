"""On-device models: LiteRT (TFLite) files that take raw text, float32 / float16 / int8.

    python -m albert_tf.serving.export --export_format tflite --task {classifier,
        multiple_choice,squad,encoder,fill_mask} --init_checkpoint FINETUNED_DIR --export_dir D
        [--export_quantize float32,float16,int8] [--fixed_length]

writes `D/litert/<task>-<quantize>.tflite` and the same metadata beside it as `.json`
(runners: `--export_dir D --export_format tflite`). Run it with
`python -m albert_tf.serving.tflite_predict` or any LiteRT interpreter that registers
tensorflow-text's ops (`tensorflow_text.tflite_registrar`).

Signatures (batch first; the same inputs and outputs as the SavedModel's, except where
LiteRT cannot express a step):
  classifier       serving_default(text_a [B] (, text_b [B])) → probabilities [B, L],
                   logits, label [B] string; regression: score [B].
  multiple_choice  serving_default(passage [B], choices [B, C]) → probabilities [B, C],
                   logits, choice [B]. `choices` are the question with each option filled
                   in (`data_pipeline.classification.examples.choice_text`; the runner does it:
                   LiteRT has no string split/join); "" = no such option.
  encoder          embed(text [B]) → pooled_output [B, H], sequence_output [B, S, H],
                   input_mask [B, S] (S = max_seq_length, as the SavedModel's).
  squad            serving_default(input_ids, input_mask, segment_ids [B, S]) →
                   start_logits, end_logits [B, S] (the ALBERT v2.0 head: its beam,
                   start/end_top_log_probs and _index, and cls_logits): windows in. Windowing,
                   character offsets and answer text are the runner's (the same Python
                   code as run_squad): tensorflow-text's LiteRT ops have no tokenizer with
                   offsets, and LiteRT has no substring op. The SentencePiece model is in
                   the file's metadata, so a squad file needs no custom op at all.
  fill_mask        serving_default(input_ids, input_mask [B, S], masked_lm_positions
                   [B, M]) → scores, token_ids [B, M, k]: ids in, top-k out; the "[MASK]"
                   rule and filled texts are the runner's (fill_mask's lite_runner), with the
                   SentencePiece model or WordPiece vocab.txt the file carries.
  all text models  tokenize(text_a [B], text_b [B]) → input_ids, input_mask, segment_ids.

This module is the conversion route, the op check, the metadata and the writing; each
task's LiteRT module is in its `albert_tf.serving.tasks` module, built from the one
`resolve.ResolvedModel` the SavedModel is built from.

Text → ids runs in the file with builtin ops and one custom op (`litert_text`); ids equal
the SavedModel's but for final sigma in uncased models
(`data_pipeline.tokenization.baked_normalization`).
WordPiece models (vocab.txt) use three of tensorflow-text's LiteRT ops instead
(FastSentencepieceTokenize with BERT's basic tokenization baked in, FastWordpieceDetokenize,
FastWordpieceTokenizeWithOffsets: `data_pipeline.tokenization.baked_wordpiece`), ids equal to the
SavedModel's but for the same final sigma; squad files of WordPiece models are not written
(their runner windows text with the SentencePiece model they carry).
The sequence length is the request's longest row (LiteRT resizes per call: a short sentence
costs what its length costs); `--fixed_length` pads to max_seq_length for delegates that
need static shapes.

Quantization: `float16` stores weights as float16 (computed in float32); `int8` is dynamic-
range quantization (int8 weights, activations quantized per call). Full-integer int8 is not
offered: the converter's calibration cannot run the tokenizer's custom op ("unresolved
custom op TFText>FastSentencepieceTokenize"), and integer-only accelerators could not run it
either.

Metadata (`METADATA_NAME` in the file's metadata table, and `<file>.json`): task, labels,
max_seq_length, casing, the tokenizer kind ("sentencepiece" / "wordpiece") and the
vocabulary's sha256, quantization, the squad settings; squad files also carry the
SentencePiece model (`SPM_NAME`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import tensorflow as tf

from albert_tf.serving.formats import QUANTIZATIONS
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.tflite_predict import FORMAT, METADATA_NAME
from data_pipeline.io import filesystem

# The only ops outside LiteRT's builtins a file may contain: the tokenizers' (the last two
# for WordPiece vocabularies, litert_text.LiteWordPieceTokenizer).
ALLOWED_CUSTOM_OPS = (
    "TFText>FastSentencepieceTokenize",
    "TFText>FastWordpieceDetokenize",
    "FastWordpieceTokenizeWithOffsets",
)


# --- conversion ---------------------------------------------------------------------------


class LiteRTError(ValueError):
    """A step LiteRT cannot express, or a file that would not run."""


def _named(frozen, names):
    """A function returning {name: output} of the frozen function's flat outputs."""
    return lambda *args: dict(zip(names, frozen(*args)))


def convert(functions: dict, quantize: str = "float32", loop: bool = True) -> bytes:
    """The LiteRT flatbuffer of `functions` ({signature: tf.function with an input
    signature}), weights frozen into constants; with `loop`, the shared layer as one while
    loop (`albert_tf.modeling.layer_loop`: its weights packed once by XNNPack; a file for
    accelerators that need static shapes, `fixed_length`, stays unrolled, as few of them
    run a WHILE op).

    The route (each shortcut fails): trace with plain kernels, freeze each concrete
    function (`convert_variables_to_constants_v2`), wrap it in a variable-free tf.function
    with named outputs, save that without custom gradients (the GELU's tf.custom_gradient
    cannot be saved frozen, and the converter would silently drop the signatures), and
    convert the SavedModel with LiteRT builtins plus custom ops (checked afterwards:
    `check_ops`). Converting the Keras model's variables directly leaves VAR_HANDLE ops
    that LiteRT never initializes: NaN outputs."""
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    from albert_tf.modeling.kernels import portable_kernels
    from albert_tf.modeling.layer_loop import looped_layers

    if quantize not in QUANTIZATIONS:
        raise ValueError(f"--export_quantize {quantize!r} is not one of {', '.join(QUANTIZATIONS)}")
    holder, signatures = tf.Module(), {}
    for name, fn in functions.items():
        with portable_kernels(), looped_layers(loop):
            concrete = fn.get_concrete_function()
        names = sorted(concrete.structured_outputs)  # the frozen function's output order
        frozen = convert_variables_to_constants_v2(concrete)

        wrapped = graph_function(_named(frozen, names), input_signature=fn.input_signature)
        setattr(holder, f"fn_{name}", wrapped)
        signatures[name] = wrapped.get_concrete_function()
    tmp = tempfile.mkdtemp(prefix="albert-litert-")
    try:
        tf.saved_model.save(
            holder,
            tmp,
            signatures=signatures,
            options=tf.saved_model.SaveOptions(experimental_custom_gradients=False),
        )
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, list(signatures))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # only the tokenizer's; check_ops verifies
        if quantize != "float32":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return bytes(converter.convert())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _model_object(data: bytes):
    from tensorflow.lite.tools import flatbuffer_utils

    return flatbuffer_utils.convert_bytearray_to_object(bytearray(data))


def check_ops(model) -> None:
    """Raises LiteRTError naming every op of `model` (a flatbuffer ModelT) that a LiteRT
    interpreter with tensorflow-text's registrar cannot run: Flex (TensorFlow) ops, custom
    ops other than the tokenizer's, and resource variables."""
    from tensorflow.lite.tools import flatbuffer_utils

    bad = set()
    for code in model.operatorCodes:
        if code.customCode is not None:
            name = code.customCode.decode()
            if name not in ALLOWED_CUSTOM_OPS:
                bad.add(name)
        else:
            name = flatbuffer_utils.opcode_to_name(model, model.operatorCodes.index(code))
            if name in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"):
                bad.add(name)
    if bad:
        raise LiteRTError(
            "LiteRT cannot express these steps (no builtin op, no registered custom op): "
            + ", ".join(sorted(bad))
        )


def with_metadata(data: bytes, entries: dict) -> bytes:
    """`data` with each {name: bytes} of `entries` added to the file's metadata table
    (where LiteRT tools look for model metadata; interpreters ignore it), after
    `check_ops`."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = _model_object(data)
    check_ops(model)
    model.metadata = list(model.metadata or [])
    for name, payload in entries.items():
        buffer = schema.BufferT()
        buffer.data = list(payload)
        model.buffers.append(buffer)
        entry = schema.MetadataT()
        entry.name = name
        entry.buffer = len(model.buffers) - 1
        model.metadata.append(entry)
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


# --- metadata and writing -----------------------------------------------------------------


def metadata(resolved, fixed_length: bool, task_meta: dict) -> dict:
    """The file's metadata (`METADATA_NAME`, and the `.json` beside it) from the resolved
    model: format, task, sequence length, casing, the tokenizer and its vocabulary, plus
    the task's own entries (`task_meta`: labels, SQuAD settings, ...). The ONNX files'
    too (`onnx_export`, with their own format)."""
    tokenizer = resolved.python_tokenizer
    return {
        "format": FORMAT,
        "task": resolved.task.kind,
        "max_seq_length": resolved.max_seq_length,
        "fixed_length": fixed_length,
        "do_lower_case": tokenizer.do_lower_case,
        "keep_accents": tokenizer.keep_accents,
        "tokenizer": resolved.tokenizer.kind,
        "vocab_sha256": tokenizer.checksum,
        "vocab_size": tokenizer.vocab_size,
        **task_meta,
    }


def write_litert(
    resolved, built, export_dir: str, quantize=("float32",), fixed_length: bool = False
) -> list[str]:
    """Writes `export_dir/<task>-<quantize>[-fixed].tflite` for each of `quantize` (a
    name or a sequence) from `built` = (LiteModule, the task's metadata, extra metadata
    entries) of the task's builder, each with its metadata as .json beside it, atomically
    (a crash leaves the previous file or none); returns the files' paths. The task kind's
    rule on WordPiece vocabularies is checked first (`TaskKind.on_device_refusal`)."""
    from data_pipeline.io.atomic import atomic_open, write_json

    task = resolved.task.kind
    reason = resolved.task.task_kind.on_device_refusal(resolved.tokenizer.is_wordpiece)
    if reason:
        raise LiteRTError(f"{resolved.finetuned_dir or task}: a WordPiece model; {reason}")
    quantize = [quantize] if isinstance(quantize, str) else list(quantize)
    for q in quantize:
        if q not in QUANTIZATIONS:
            raise ValueError(f"quantization {q!r} is not one of {', '.join(QUANTIZATIONS)}")
    module, task_meta, extra_entries = built
    meta = metadata(resolved, fixed_length, task_meta)
    paths = []
    for q in quantize:
        entries = {METADATA_NAME: json.dumps(dict(meta, quantization=q), sort_keys=True).encode()}
        entries.update(extra_entries)
        try:
            data = with_metadata(convert(module.functions(), q, loop=not fixed_length), entries)
        except tf.errors.OpError as e:
            raise LiteRTError(
                f"cannot convert the {task} model: {e.message.splitlines()[0]}"
            ) from None
        filesystem.makedirs(export_dir)
        name = f"{task}-{q}{'-fixed' if fixed_length else ''}.tflite"
        path = os.path.join(export_dir, name)
        with atomic_open(path, "wb") as f:
            f.write(data)
        write_json(path + ".json", dict(meta, quantization=q, file=name, bytes=len(data)))
        paths.append(path)
    return paths
