"""ONNX files of the served kinds: each kind's ids-in inference function converted with
tf2onnx, float32 and/or dynamic-range int8 weights.

    python -m albert_tf.serving.export --export_format onnx --task {classifier,
        multiple_choice,squad,token_classifier,encoder,fill_mask} --init_checkpoint DIR \\
        --export_dir D [--onnx_quantize float32,int8]

writes `D/onnx/<task>.onnx` (float32) and `D/onnx/<task>-int8.onnx`, each with its
metadata as `.json` beside it, and the vocabulary the ids come from: `D/onnx/spm.model`
(or `vocab.txt`) and `D/onnx/tokenizer.json` (`albert_tf.checkpoints.tokenizer_record`'s
file: kind, file, sha256). Run them with `python -m albert_tf.serving.onnx_predict` or any
ONNX runtime.

What is converted: the function the LiteRT file of the kind is converted from, from ids
(`ServingTask.onnx`: `LiteModule.ids_functions()` for the kinds whose LiteRT file takes
text, the LiteRT file's own function for those that take windows of ids), frozen as
`litert.convert` freezes it and traced with plain kernels, unrolled layers and the packed
encoder (`albert_tf.modeling.packing`: outside attention only a call's real tokens are
computed, so the runner's groups of rows pay little for their padding). Inputs:
input_ids, input_mask, segment_ids int32 [B, S] ([B, C, S] for multiple choice; fill-mask:
input_ids, input_mask [B, S], masked_lm_positions [B, M]); S is free (the runner pads to
the request's longest row). Outputs: the LiteRT file's (classifier: probabilities, logits
[B, L], label [B] string; ...). ONNX has no tokenizer op in its standard set, so text →
ids is the runner's, in Python with the recorded vocabulary (docs/design/onnx.md: what
onnxruntime-extensions' SentencePiece op did here).

Why tf2onnx and not Keras' `Model.export(format="onnx")`: the served function is not a
Keras model's call (outputs after the head: softmax, labels, top-k, pooling, padding), and
Keras' ONNX export of the TensorFlow backend goes through tf2onnx anyway.

Metadata (the model's `metadata_props` under `METADATA_NAME`, and `<file>.json`): the LiteRT
file's (`litert.metadata`: task, labels, max_seq_length, casing, tokenizer kind and
sha256, the kind's own settings), format `FORMAT`, quantization, and `text_inputs` for the
kinds whose runner packs text.
"""

from __future__ import annotations

import json
import os
import tempfile

from albert_tf.serving.formats import ONNX_QUANTIZATIONS
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.onnx_predict import FORMAT, METADATA_NAME, RENAMED_OUTPUT
from data_pipeline.io import filesystem

OPSET = 17  # onnxruntime 1.31 runs opsets up to 23; 17 keeps older runtimes able


def convert(functions: dict) -> bytes:
    """The serialized ONNX model of `functions["serving_default"]` (a tf.function with an
    input signature of int32 ids), its variables frozen into initializers (captured
    constants too: a label table would otherwise become a graph input). ValueError (one
    line) when tf2onnx cannot convert an op."""
    import tf2onnx
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    from albert_tf.modeling.kernels import portable_kernels
    from albert_tf.modeling.layer_loop import looped_layers
    from albert_tf.modeling.packing import packed_tokens

    fn = functions["serving_default"]
    with portable_kernels(), looped_layers(False), packed_tokens():
        concrete = fn.get_concrete_function()
    names = sorted(concrete.structured_outputs)  # the frozen function's output order
    frozen = convert_variables_to_constants_v2(concrete)
    # ONNX names every value once: an output named as an input (the encoder's input_mask)
    # is renamed, and the runner names it back (onnx_predict.output_name).
    inputs = {spec.name for spec in fn.input_signature}
    names = [n + RENAMED_OUTPUT if n in inputs else n for n in names]
    wrapped = graph_function(
        lambda *args: dict(zip(names, frozen(*args))), input_signature=fn.input_signature
    )
    try:
        proto, _ = tf2onnx.convert.from_function(
            wrapped, input_signature=fn.input_signature, opset=OPSET
        )
    except (ValueError, RuntimeError, KeyError) as e:  # (an op tf2onnx lacks)
        raise ValueError(f"tf2onnx cannot convert: {str(e).splitlines()[0]}") from None
    return proto.SerializeToString()


def quantize_int8(data: bytes) -> bytes:
    """`data` with dynamic-range int8 weights (onnxruntime's `quantize_dynamic`: MatMul
    and Gather weights int8, per tensor; activations quantized per call)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="albert-onnx-") as tmp:
        source, target = os.path.join(tmp, "f32.onnx"), os.path.join(tmp, "int8.onnx")
        with open(source, "wb") as f:
            f.write(data)
        # (its root-logger advice to run shape-inference pre-processing is for static
        # quantization's per-op choices; dynamic weights need no shapes: not printed)
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)
        try:
            quantize_dynamic(source, target, weight_type=QuantType.QInt8)
        finally:
            root.setLevel(level)
        with open(target, "rb") as f:
            return f.read()


def with_metadata(data: bytes, meta: dict) -> bytes:
    """`data` with `meta` as JSON in the model's metadata_props (`METADATA_NAME`), where
    `onnxruntime.InferenceSession.get_modelmeta()` reads it."""
    import onnx

    model = onnx.load_from_string(data)
    del model.metadata_props[:]
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA_NAME, json.dumps(meta, sort_keys=True)
    return model.SerializeToString()


def file_name(task: str, quantization: str) -> str:
    """<task>.onnx (float32) or <task>-<quantization>.onnx."""
    return f"{task}.onnx" if quantization == "float32" else f"{task}-{quantization}.onnx"


def write_vocabulary(resolved, export_dir: str) -> None:
    """The vocabulary of `resolved` copied into `export_dir` (spm.model / vocab.txt) with
    its tokenizer.json record. ValueError (one line) when the directory already holds
    another vocabulary (files of two tokenizers cannot share one directory)."""
    from albert_tf.checkpoints.tokenizer_record import (
        file_record,
        read_tokenizer_record,
        write_tokenizer_record,
    )

    spec, checksum = resolved.tokenizer, resolved.python_tokenizer.checksum
    existing = read_tokenizer_record(export_dir)
    if existing is not None and existing.get("sha256") != checksum:
        raise ValueError(
            f"{export_dir} holds ONNX files of another vocabulary (sha256 "
            f"{str(existing.get('sha256'))[:16]}...); give another --export_dir"
        )
    target = os.path.join(export_dir, spec.file_name)
    filesystem.copy(spec.path, target)
    write_tokenizer_record(export_dir, file_record(target, spec.kind, spec.path))


def write_onnx(resolved, built, export_dir: str, quantize=("float32",)) -> list[str]:
    """Writes `export_dir/<task>[-int8].onnx` for each of `quantize` from `built` =
    ({"serving_default": ids-in tf.function}, the task's metadata) of the kind's builder,
    each with its metadata as .json beside it, and the vocabulary (`write_vocabulary`).
    Either vocabulary serves every kind: it lies beside the file, where the LiteRT files
    of SQuAD, NER and long documents must carry a SentencePiece model inside (their
    WordPiece refusal is not ONNX's). Returns the files' paths."""
    from albert_tf.serving.litert import metadata
    from data_pipeline.io.atomic import atomic_open, write_json

    task = resolved.task.kind
    quantize = [quantize] if isinstance(quantize, str) else list(quantize)
    for q in quantize:
        if q not in ONNX_QUANTIZATIONS:
            raise ValueError(f"--onnx_quantize {q!r} is not one of {', '.join(ONNX_QUANTIZATIONS)}")
    functions, task_meta = built
    meta = dict(metadata(resolved, False, task_meta), format=FORMAT)
    float32 = convert(functions)
    filesystem.makedirs(export_dir)
    write_vocabulary(resolved, export_dir)
    paths = []
    for q in quantize:
        data = float32 if q == "float32" else quantize_int8(float32)
        data = with_metadata(data, dict(meta, quantization=q))
        name = file_name(task, q)
        path = os.path.join(export_dir, name)
        with atomic_open(path, "wb", encoding=None) as f:
            f.write(data)
        write_json(path + ".json", dict(meta, quantization=q, file=name, bytes=len(data)))
        paths.append(path)
    return paths
