"""The shared base of the serving modules, one per format:

  `Serving`     a SavedModel's tf.Module: the model plus its in-graph tokenizer, always a
                `TextTokenizer` (one vocabulary asset and one sha256 for either kind), the
                packing of `text_ops` and the `tokenize` signature every text model has;
  `LiteModule`  the same for a LiteRT file: the model plus `litert_text`'s builtin-op front
                end; its `functions()` are what `litert.convert` converts, its
                `ids_functions()` (the same outputs from ids) what `onnx_export` converts;
  `ServingTask` what each kind's `albert_tf.serving.tasks.<kind>.modules` gives the
                exporters (their registry: `albert_tf.serving.registry.SERVING`).

Each is built from a `resolve.ResolvedModel` (model, TaskInfo, tokenizer, sequence length),
never by reading settings back out of another module.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Callable

import tensorflow as tf

from albert_tf.modeling.packing import packed_tokens
from albert_tf.serving.compute_dtype import model_dtype
from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.litert_text import lite_tokenizer
from albert_tf.serving.litert_text import pack as lite_pack
from albert_tf.serving.text_ops import pack, same_rows, valid_utf8
from albert_tf.serving.text_tokenizer import TextTokenizer

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass(frozen=True)
class ServingTask:
    """One task kind's (`kind`) builders: `saved_model(resolved)` → a `Serving` with
    `signatures()`; `litert(resolved, fixed_length)` → (a `LiteModule`, the task's own
    metadata, extra metadata entries {name: bytes}) for the on-device file;
    `onnx(resolved)` → ({"serving_default": an ids-in tf.function}, the task's own
    metadata) for the ONNX file (`albert_tf.serving.onnx_export`; its runner packs what
    the metadata's `text_inputs` name)."""

    kind: str
    saved_model: Callable
    litert: Callable
    onnx: Callable


def model_inputs(input_ids, input_mask, segment_ids) -> dict:
    return dict(zip(INPUT_NAMES, (input_ids, input_mask, segment_ids)))


class Serving(tf.Module):
    """The model and its tokenizer for a SavedModel (the task modules add the signatures).

    text: the TextTokenizer (tracked: its vocabulary asset, sha256 and op resources are
    saved); tokenizer: its graph tokenizer; cls_id, sep_id; max_seq_length; compute_dtype:
    the string variable recording the dtype the model computes in (float32 / bfloat16,
    read back by `compute_dtype.recorded_dtype`)."""

    def __init__(self, model, text: TextTokenizer, max_seq_length: int):
        super().__init__()
        self.model = model
        self.text = text
        self.tokenizer = text.graph_tokenizer
        self.cls_id, self.sep_id = text.cls_id, text.sep_id
        self.max_seq_length = max_seq_length
        # (a variable, not a constant: constants are not saved as attributes)
        self.compute_dtype = tf.Variable(model_dtype(model), trainable=False)

    def _ids(self, text):
        return self.tokenizer(valid_utf8(text))

    def tokenize(self, text_a, text_b):
        """The model's inputs for (text_a, text_b) as training packs them ("" text_b: a
        single sentence): what a client can compare with its own tokenizer."""
        text_a, text_b = same_rows(text_a=text_a, text_b=text_b)
        ids = pack(
            self._ids(text_a), self._ids(text_b), self.max_seq_length, self.cls_id, self.sep_id
        )
        return model_inputs(*ids)

    def _tokenize_signature(self):
        return graph_function(
            self.tokenize,
            input_signature=[
                tf.TensorSpec([None], tf.string, "text_a"),
                tf.TensorSpec([None], tf.string, "text_b"),
            ],
        ).get_concrete_function()

    def _forward(self, input_ids, input_mask, segment_ids):
        """The model on real tokens only (`packing`: a request's padding costs only its
        attention cores)."""
        with packed_tokens():
            return self.model(model_inputs(input_ids, input_mask, segment_ids), training=False)

    def _logits(self, input_ids, input_mask, segment_ids):
        return tf.cast(self._forward(input_ids, input_mask, segment_ids)["logits"], tf.float32)


def string_spec(name):
    return tf.TensorSpec([None], tf.string, name)


class LiteModule(abc.ABC):
    """The model plus the LiteRT text front end (`litert_text`), for `python_tokenizer` (an
    AlbertTokenizer or WordPieceTokenizer); `functions()` are what gets converted.

    A subclass computes its outputs from packed ids in `_from_ids(ids)` (input_ids,
    input_mask, segment_ids int32 of rank `ids_rank`: [B, S], or [B, C, S] for multiple
    choice), which its text-in `functions()` call after the front end and `ids_functions()`
    exposes alone: an ONNX file's graph, whose runner packs the ids in Python (ONNX has no
    tokenizer op: docs/design/onnx.md)."""

    ids_rank = 2

    def __init__(self, model, python_tokenizer, max_seq_length: int, fixed_length=False):
        self.model = model
        self.max_seq_length = max_seq_length
        self.fixed_length = fixed_length
        self.python_tokenizer = python_tokenizer

    @functools.cached_property
    def tokenizer(self):
        """The LiteRT front end (`litert_text.lite_tokenizer`), built when a text-in function
        first needs it (seconds for a SentencePiece model's baked normalization; the ids-in
        functions of ONNX files never do), eagerly even inside that function's trace (its
        tables are constants read with .numpy())."""
        with tf.init_scope():
            return lite_tokenizer(self.python_tokenizer)

    def _pack(self, a, b):
        return lite_pack(
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
        return self.model(model_inputs(input_ids, input_mask, segment_ids), training=False)

    def tokenize(self, text_a, text_b):
        return model_inputs(*self._pack(self.tokenizer(text_a), self.tokenizer(text_b)))

    def _tokenize_function(self):
        return graph_function(
            self.tokenize, input_signature=[string_spec("text_a"), string_spec("text_b")]
        )

    @abc.abstractmethod
    def _from_ids(self, ids) -> dict:
        """The kind's outputs from packed ids (input_ids, input_mask, segment_ids)."""

    def ids_functions(self) -> dict:
        """{"serving_default": tf.function(input_ids, input_mask, segment_ids int32, each
        [None] * ids_rank) → `_from_ids`' outputs}: the same outputs as `functions()`'
        serving_default, from ids packed by the caller."""
        specs = [tf.TensorSpec([None] * self.ids_rank, tf.int32, n) for n in INPUT_NAMES]
        fn = graph_function(
            lambda input_ids, input_mask, segment_ids: self._from_ids(
                (input_ids, input_mask, segment_ids)
            ),
            input_signature=specs,
        )
        return {"serving_default": fn}


class LiteWindows:
    """An on-device file that scores windows its runner cut (SQuAD, NER, long documents):
    ids in (int32 [batch, seq] input_ids, input_mask, segment_ids; seq fixed at
    max_seq_length with `fixed_length`), the model's outputs out (floating ones as
    float32). What LiteRT cannot express (tokenizers with offsets, ragged windows,
    substrings) stays in the runner, albert_tf.serving.tflite_predict, with the Python code
    of the task's runner; the SentencePiece model travels in the file's metadata, so the
    file needs no custom op."""

    def __init__(self, model, max_seq_length: int, fixed_length: bool = False):
        self.model, self.max_seq_length, self.fixed_length = model, max_seq_length, fixed_length

    def logits(self, input_ids, input_mask, segment_ids):
        out = self.model(model_inputs(input_ids, input_mask, segment_ids), training=False)
        return {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v for k, v in out.items()}

    def functions(self):
        length = self.max_seq_length if self.fixed_length else None
        specs = [tf.TensorSpec([None, length], tf.int32, n) for n in INPUT_NAMES]
        return {"serving_default": graph_function(self.logits, input_signature=specs)}
