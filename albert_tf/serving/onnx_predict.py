"""Predict with an ONNX ALBERT (`<task>.onnx` from `albert_tf.serving.onnx_export`) from a
text file or stdin, with ONNX Runtime:

    python -m albert_tf.serving.onnx_predict --model out/sst2/onnx/classifier.onnx < sentences.txt
    python -m albert_tf.serving.onnx_predict --model out/squad/onnx/squad-int8.onnx \\
        --input questions.jsonl

Input and output are `albert_tf.serving.tflite_predict`'s, line for line (one JSON answer
per input line, `"line"` numbered; empty lines answered `{"line": N}`): the answers come
from the same code. `OnnxModel` has `LiteModel`'s call interface (`run(signature,
**inputs)`, `metadata`, `text_in`, `check_rows`, `tokenize`, `sentencepiece`), so each
kind's runner (`albert_tf.serving.tasks.<kind>.lite_runner`, found through
`tflite_predict.RUNNERS` by the file's metadata `task`) turns requests into features and
model outputs into answers unchanged.

The difference: an ONNX file takes ids, never text (ONNX has no tokenizer op). The files
whose LiteRT twin tokenizes in its graph (classifier, multiple choice, encoder) name their
text inputs in the metadata (`text_inputs`); `run` packs those texts into ids in Python
(`albert_tf.serving.onnx_inputs`) with the tokenizer recorded beside the file
(`tokenizer.json` and `spm.model` / `vocab.txt`: `TokenizerSpec`, its sha256 checked
against the file's metadata), then runs the session.

A missing, damaged or foreign file, a file of a kind without a runner, a vocabulary that is
not the file's, or a request beyond the file's limits is one `error:` line and exit 1.
Needs onnxruntime (`pip install .[onnx]`), numpy and sentencepiece / tokenizers; neither
TensorFlow nor Keras is imported.
"""

from __future__ import annotations

import json
import os
import sys
import threading

import numpy as np

from albert_tf.serving.length_groups import ONNX_GROUP
from albert_tf.serving.tflite_predict import RUNNERS, LiteModel, predict_command

FORMAT = "albert-onnx/1"
METADATA_NAME = "albert_metadata"  # (the model's metadata_props key; onnx_export writes it)
# The suffix of an output named as an input in the file (ONNX names each value once).
RENAMED_OUTPUT = ".output"


def output_name(name: str) -> str:
    """The function's name of the file's output `name` (`RENAMED_OUTPUT` removed)."""
    return name.removesuffix(RENAMED_OUTPUT)


def _session(path: str, num_threads: int | None):
    """An onnxruntime.InferenceSession of `path` on the CPU; ValueError (one line naming
    `path`) for a missing file or one ONNX Runtime cannot load."""
    import onnxruntime as ort

    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file")
    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads or os.cpu_count() or 1
    options.log_severity_level = 3  # (errors only: its warnings are not the answers')
    try:
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # (onnxruntime's own exception types, per build)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path}: not an ONNX model ONNX Runtime can load ({first})") from None


class OnnxModel(LiteModel):
    """An .onnx ALBERT with its metadata, its vocabulary and its kind's runner (`runner`),
    whose methods it answers (`classify`, `answer`, `tag`, ...), as `LiteModel`.

    tokenizer: the Python tokenizer of the vocabulary beside the file; spm_model / vocab:
    that file's bytes (fill-mask's runner builds its own tokenizer from them). One object
    is safe to share between threads (`LiteModel.run`'s lock)."""

    group = ONNX_GROUP  # rows per session call (length_groups)

    def __init__(self, path: str, num_threads: int | None = None):
        self.session = _session(path, num_threads)
        props = self.session.get_modelmeta().custom_metadata_map
        if METADATA_NAME not in props:
            raise ValueError(f"{path}: no {METADATA_NAME} metadata; not an ALBERT ONNX file")
        self.metadata = json.loads(props[METADATA_NAME])
        if self.metadata.get("format") != FORMAT:
            raise ValueError(f"{path}: format {self.metadata.get('format')!r}, expected {FORMAT}")
        self.task = self.metadata["task"]
        if self.task not in RUNNERS:
            raise ValueError(
                f"{path}: task {self.task!r} has no runner (runners: {', '.join(RUNNERS)})"
            )
        self.tokenizer, vocabulary = _recorded_tokenizer(path, self.metadata)
        wordpiece = self.metadata.get("tokenizer") == "wordpiece"
        self.spm_model, self.vocab = (None, vocabulary) if wordpiece else (vocabulary, None)
        self._drop_nul = wordpiece
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]
        self._lock = threading.Lock()
        self.runner = RUNNERS[self.task](self)

    def _run_locked(self, signature: str, inputs: dict) -> dict:
        """`run` with the lock held. "tokenize": the packed ids of text_a, text_b (as the
        text models' signature); any other signature is the file's one graph: texts (the
        metadata's `text_inputs`) packed into ids, then the session on length-sorted groups
        of rows (`length_groups.run_grouped`: the file computes every padded position)."""
        from albert_tf.serving.length_groups import run_grouped
        from albert_tf.serving.onnx_inputs import packed_inputs

        S = self.metadata["max_seq_length"]
        if signature == "tokenize":
            return packed_inputs(self.tokenizer, S, inputs["text_a"], inputs["text_b"])
        names = self.metadata.get("text_inputs")
        if not names:
            return self._session_run(inputs)
        inputs = packed_inputs(self.tokenizer, S, *(inputs[n] for n in names if n in inputs))
        return run_grouped(lambda **feed: self._session_run(feed), inputs, self.group)

    def _session_run(self, inputs: dict) -> dict:
        """The session on `inputs` (the file's inputs by name) → its outputs by name."""
        feed = {name: np.asarray(inputs[name]) for name in self.inputs}
        rows = [len(v) for v in feed.values() if v.ndim]  # (not a scalar: multi_label)
        empty = bool(rows) and not any(rows)
        if empty:  # 0 rows: one row of zeros run and cut off (as LiteModel)
            feed = {
                k: np.zeros((1,) + v.shape[1:], v.dtype) if v.ndim else v for k, v in feed.items()
            }
        try:
            values = self.session.run(self.outputs, feed)
        except Exception as e:  # (onnxruntime's own exception types)
            raise ValueError(f"ONNX Runtime: {str(e).strip().splitlines()[0]}") from None
        return {output_name(k): (v[:0] if empty else v) for k, v in zip(self.outputs, values)}

    def sentencepiece(self):
        """The Python tokenizer of the vocabulary beside the file (the ids-in kinds'
        runners window text with it)."""
        return self.tokenizer


def _recorded_tokenizer(path: str, metadata: dict):
    """(tokenizer, the vocabulary file's bytes) of the tokenizer.json beside `path`, with
    the file's casing; ValueError (one line) when there is none or its sha256 is not the
    one the file was exported with."""
    from albert_tf.checkpoints.tokenizer_record import TOKENIZER_RECORD_FILE, read_tokenizer_record
    from data_pipeline.tokenization.spec import TokenizerSpec

    directory = os.path.dirname(os.path.abspath(path))
    record = read_tokenizer_record(directory)
    if record is None:
        raise ValueError(f"{path}: no {TOKENIZER_RECORD_FILE} beside it (the vocabulary's record)")
    spec = TokenizerSpec(
        record.get("kind", metadata.get("tokenizer", "sentencepiece")),
        os.path.join(directory, os.path.basename(record.get("file", ""))),
        metadata.get("do_lower_case", True),
        metadata.get("keep_accents", False),
        from_flag=False,
    )
    tokenizer = spec.build()
    if tokenizer.checksum != metadata.get("vocab_sha256"):
        raise ValueError(
            f"{spec.path}: sha256 {tokenizer.checksum[:16]}... is not the vocabulary {path} "
            f"was exported with ({str(metadata.get('vocab_sha256'))[:16]}...)"
        )
    with open(spec.path, "rb") as f:
        return tokenizer, f.read()


def main(argv=None) -> int:
    """The command (`tflite_predict.predict_command` with `OnnxModel`): 2: a bad command
    line; 1 and one `error:` line: a bad model or request."""
    return predict_command(argv, __doc__, "python -m albert_tf.serving.onnx_predict", OnnxModel)


if __name__ == "__main__":
    sys.exit(main())
