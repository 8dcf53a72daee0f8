"""On-device models: LiteRT (TFLite) files that take raw text, float32 / float16 / int8.

    python -m albert_tf.serving.export --format tflite --task {classifier,multiple_choice,
        squad,encoder} --init_checkpoint FINETUNED_DIR --export_dir D [--quantize
        float32,float16,int8] [--fixed_length]

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
                   in (`data_pipeline.classification.data.choice_text`; the runner does it:
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
  all text models  tokenize(text_a [B], text_b [B]) → input_ids, input_mask, segment_ids.

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

from albert_tf.serving.export import classifier_outputs
from albert_tf.serving.litert_text import lite_tokenizer, pack, take_rows
from albert_tf.serving.tflite_predict import FORMAT, METADATA_NAME, SPM_NAME
from data_pipeline.io import filesystem

QUANTIZATIONS = ("float32", "float16", "int8")
# The only ops outside LiteRT's builtins a file may contain: the tokenizers' (the last two
# for WordPiece vocabularies, litert_text.LiteWordPieceTokenizer).
ALLOWED_CUSTOM_OPS = (
    "TFText>FastSentencepieceTokenize",
    "TFText>FastWordpieceDetokenize",
    "FastWordpieceTokenizeWithOffsets",
)


def _string(name):
    return tf.TensorSpec([None], tf.string, name)


class _LiteModule:
    """The model plus the LiteRT text front end; `functions()` are what gets converted."""

    def __init__(self, model, tokenizer, max_seq_length: int, fixed_length: bool = False):
        self.model = model
        self.max_seq_length = max_seq_length
        self.fixed_length = fixed_length
        self.tokenizer = lite_tokenizer(tokenizer)

    def _pack(self, a, b):
        return pack(
            a,
            b,
            self.max_seq_length,
            self.tokenizer.cls_id,
            self.tokenizer.sep_id,
            self.fixed_length,
        )

    def _single(self, text):
        tokens = self.tokenizer(text)
        none = tf.zeros_like(tokens[1])
        return self._pack(tokens, (tf.zeros([0], tf.int32), none, none))

    def _forward(self, input_ids, input_mask, segment_ids):
        return self.model(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
            training=False,
        )

    def tokenize(self, text_a, text_b):
        ids = self._pack(self.tokenizer(text_a), self.tokenizer(text_b))
        return dict(zip(("input_ids", "input_mask", "segment_ids"), ids))

    def _tokenize_function(self):
        return tf.function(self.tokenize, input_signature=[_string("text_a"), _string("text_b")])


class LiteClassifier(_LiteModule):
    def __init__(self, model, tokenizer, max_seq_length, labels, regression, text_pair, **kw):
        super().__init__(model, tokenizer, max_seq_length, **kw)
        self.labels = tf.constant(list(labels or [""]))
        self.regression, self.text_pair = regression, text_pair

    def _classify(self, ids):
        logits = tf.cast(self._forward(*ids)["logits"], tf.float32)
        return classifier_outputs(logits, self.labels, self.regression)

    def functions(self):
        if self.text_pair:
            fn = tf.function(
                lambda text_a, text_b: self._classify(
                    self._pack(self.tokenizer(text_a), self.tokenizer(text_b))
                ),
                input_signature=[_string("text_a"), _string("text_b")],
            )
        else:
            fn = tf.function(
                lambda text_a: self._classify(self._single(text_a)),
                input_signature=[_string("text_a")],
            )
        return {"serving_default": fn, "tokenize": self._tokenize_function()}


class LiteMultipleChoice(_LiteModule):
    def choose(self, passage, choices):
        """passage [B]; choices [B, C] (question with the option filled in, "" = none)."""
        rows, columns = tf.shape(choices)[0], tf.shape(choices)[1]
        flat = self.tokenizer(tf.reshape(choices, [-1]))  # [B*C] rows
        owner = tf.range(rows * columns) // tf.maximum(columns, 1)
        ids = self._pack(take_rows(self.tokenizer(passage), owner), flat)
        present = tf.cast(flat[2] > 0, tf.int32)[:, None]  # a choice with tokens
        shaped = [tf.reshape(x * present, [rows, columns, tf.shape(x)[1]]) for x in ids]
        logits = tf.cast(self._forward(*shaped)["logits"], tf.float32)
        return {
            "probabilities": tf.nn.softmax(logits),
            "logits": logits,
            "choice": tf.argmax(logits, -1, output_type=tf.int32),
        }

    def functions(self):
        fn = tf.function(
            self.choose,
            input_signature=[_string("passage"), tf.TensorSpec([None, None], tf.string, "choices")],
        )
        return {"serving_default": fn, "tokenize": self._tokenize_function()}


class LiteEncoder(_LiteModule):
    def embed(self, text):
        ids = self._single(text)
        out = self._forward(*ids)
        extra = self.max_seq_length - tf.shape(ids[1])[1]
        mask = tf.expand_dims(tf.cast(ids[1], tf.float32), -1)  # (no [..., None]: see encoder)
        sequence = tf.cast(out["sequence_output"], tf.float32) * mask
        return {
            "pooled_output": tf.cast(out["pooled_output"], tf.float32),
            "sequence_output": tf.pad(sequence, [[0, 0], [0, extra], [0, 0]]),
            "input_mask": tf.pad(ids[1], [[0, 0], [0, extra]]),
        }

    def functions(self):
        fn = tf.function(self.embed, input_signature=[_string("text")])
        return {"serving_default": fn, "embed": fn, "tokenize": self._tokenize_function()}


class LiteSquad:
    """Span logits of windows the caller built (see the module docstring for why)."""

    def __init__(self, model, max_seq_length: int, fixed_length: bool = False):
        self.model, self.max_seq_length, self.fixed_length = model, max_seq_length, fixed_length

    def logits(self, input_ids, input_mask, segment_ids):
        out = self.model(
            {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids},
            training=False,
        )
        return {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v for k, v in out.items()}

    def functions(self):
        length = self.max_seq_length if self.fixed_length else None
        specs = [
            tf.TensorSpec([None, length], tf.int32, n)
            for n in ("input_ids", "input_mask", "segment_ids")
        ]
        return {"serving_default": tf.function(self.logits, input_signature=specs)}


# --- conversion ---------------------------------------------------------------------------


class LiteRTError(ValueError):
    """A step LiteRT cannot express, or a file that would not run."""


def _named(frozen, names):
    """A function returning {name: output} of the frozen function's flat outputs."""
    return lambda *args: dict(zip(names, frozen(*args)))


def convert(functions: dict, quantize: str = "float32") -> bytes:
    """The LiteRT flatbuffer of `functions` ({signature: tf.function with an input
    signature}), weights frozen into constants.

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

    if quantize not in QUANTIZATIONS:
        raise ValueError(f"--quantize {quantize!r} is not one of {', '.join(QUANTIZATIONS)}")
    holder, signatures = tf.Module(), {}
    for name, fn in functions.items():
        with portable_kernels():
            concrete = fn.get_concrete_function()
        names = sorted(concrete.structured_outputs)  # the frozen function's output order
        frozen = convert_variables_to_constants_v2(concrete)

        wrapped = tf.function(_named(frozen, names), input_signature=fn.input_signature)
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


# --- building and writing -----------------------------------------------------------------


def build(task: str, init_checkpoint: str, fixed_length: bool = False, **options):
    """(module, metadata) for `task` from a fine-tuned model directory (or any checkpoint
    for the encoder): the same model, vocabulary and settings as `export.build_module`."""
    from albert_tf.serving.export import build_module
    from data_pipeline.tokenization.choice import tokenizer_kind

    serving = build_module(task, init_checkpoint, **options)
    model, length, tokenizer = serving.model, serving.max_seq_length, serving.text_tokenizer
    kind = tokenizer_kind(tokenizer)
    if task == "squad" and kind == "wordpiece":
        raise LiteRTError(
            f"{init_checkpoint}: a WordPiece model; on-device SQuAD files of WordPiece "
            "models are not written (their runner windows text with the SentencePiece model "
            "the file carries)"
        )
    meta = {
        "format": FORMAT,
        "task": task,
        "max_seq_length": length,
        "fixed_length": fixed_length,
        "do_lower_case": tokenizer.do_lower_case,
        "keep_accents": tokenizer.keep_accents,
        "tokenizer": kind,
        "vocab_sha256": tokenizer.checksum,
        "vocab_size": tokenizer.vocab_size,
    }
    if task == "classifier":
        labels = [x.decode() for x in serving.labels.numpy()]
        regression, pair = serving.regression, serving.text_pair
        module = LiteClassifier(
            model, tokenizer, length, labels, regression, pair, fixed_length=fixed_length
        )
        meta.update(labels=[] if regression else labels, regression=regression, text_pair=pair)
    elif task == "multiple_choice":
        module = LiteMultipleChoice(model, tokenizer, length, fixed_length=fixed_length)
    elif task == "encoder":
        module = LiteEncoder(model, tokenizer, length, fixed_length=fixed_length)
    else:
        module = LiteSquad(model, length, fixed_length)
        meta.update(
            doc_stride=serving.doc_stride,
            max_query_length=serving.max_query_length,
            max_answer_length=serving.max_answer_length,
            n_best_size=serving.n_best_size,
            version_2_with_negative=serving.version_2,
            null_score_diff_threshold=float(serving.threshold),
            squad_head="albert" if serving.beam else "bert",
            max_windows=serving.max_windows,
        )
    return module, meta, tokenizer


def export_tflite(
    task: str,
    init_checkpoint: str,
    export_dir: str,
    quantize=("float32",),
    fixed_length: bool = False,
    **options,
) -> list[str]:
    """Writes `export_dir/<task>-<quantize>[-fixed].tflite` for each of `quantize` (a
    name or a sequence), each with its metadata as .json beside it, atomically (a crash
    leaves the previous file or none); returns the files' paths."""
    from data_pipeline.io.atomic import atomic_open, write_json

    quantize = [quantize] if isinstance(quantize, str) else list(quantize)
    for q in quantize:
        if q not in QUANTIZATIONS:
            raise ValueError(f"quantization {q!r} is not one of {', '.join(QUANTIZATIONS)}")
    module, meta, tokenizer = build(task, init_checkpoint, fixed_length, **options)
    paths = []
    for q in quantize:
        entries = {METADATA_NAME: json.dumps(dict(meta, quantization=q), sort_keys=True).encode()}
        if task == "squad":
            entries[SPM_NAME] = tokenizer.model_proto
        try:
            data = with_metadata(convert(module.functions(), q), entries)
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
