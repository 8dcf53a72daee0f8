"""Predict with an on-device ALBERT (.tflite from `albert_tf.serving.litert`) from a text
file or stdin: what an app developer tries first.

    python -m albert_tf.serving.tflite_predict --model sst2.tflite < sentences.txt
    python -m albert_tf.serving.tflite_predict --model squad.tflite --input questions.jsonl
    python -m albert_tf.serving.tflite_predict --model token_classifier.tflite < texts.txt

Input, one example per line (UTF-8; invalid bytes become U+FFFD, as in the SavedModel):
  classifier       a sentence, or `text_a<TAB>text_b` for a pair task
  multiple_choice  {"passage": ..., "question": ..., "options": [...]}
  squad            {"question": ..., "context": ...}
  encoder          a sentence
  token_classifier a text (words: albert_tf.serving.tasks.token_classifier.lite_runner)
  fill_mask        a text with one or more "[MASK]" (albert_tf.serving.tasks.fill_mask.lite_runner)
Output: exactly one JSON object per input line, in order, each with its input line number
`"line"` (label and probabilities; a multi-label classifier's: "labels", those at or over
their thresholds; choice; answer with character offsets; the embedding chosen at export
and the pooled output; words, tags and entities with character offsets; "masks": per
mask the top-k token_id, token, score and filled-in sequence).
Lines are split at "\n" only (a trailing "\r" is dropped): U+2028, form feeds and the other
characters str.splitlines() would split at stay inside their line. An empty line (nothing
but whitespace) is answered `{"line": N}`, never dropped, so answer i is input line i.

Files of WordPiece models (vocab.txt) work the same; NUL characters are deleted before
the file, as BERT's tokenizer deletes them (data_pipeline.tokenization.baked_wordpiece).

Each task kind's side is its runner class (`albert_tf.serving.tasks.<kind>.lite_runner`),
found through `RUNNERS` by the file's metadata `task`: its `takes_ids(metadata)` (ids in:
windows or tokens cut here; else text in, tokenized by tensorflow-text's ops in the file),
its own methods (classify, choose, answer, tag, fill, embed, ...: reached on `LiteModel`)
and `answers` (one JSON-ready answer per input line).

Needs only the LiteRT interpreter (`pip install ai-edge-litert`) plus, for the text-in
models, tensorflow-text's op registrar (`tensorflow_text.tflite_registrar`, which brings
TensorFlow); squad, token_classifier and fill_mask files take ids and run on ai-edge-litert
alone (the runner tokenizes with this project's Python code, sentencepiece or tokenizers,
and numpy). Neither Keras nor the model-building code is imported.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading

import numpy as np

from albert_tf.serving.length_groups import FILE_GROUP
from albert_tf.serving.tasks.classifier.lite_runner import ClassifierRunner
from albert_tf.serving.tasks.encoder.lite_runner import EncoderRunner
from albert_tf.serving.tasks.fill_mask.lite_runner import FillMaskRunner
from albert_tf.serving.tasks.multiple_choice.lite_runner import MultipleChoiceRunner
from albert_tf.serving.tasks.squad.lite_runner import SquadRunner
from albert_tf.serving.tasks.token_classifier.lite_runner import TaggerRunner
from albert_tf.serving.tasks.zero_shot.lite_runner import ZeroShotRunner

METADATA_NAME = "albert_metadata"  # (albert_tf.serving.litert writes these)
SPM_NAME = "albert_spm_model"
VOCAB_NAME = "albert_wordpiece_vocab"  # (fill-mask files of WordPiece models)
FORMAT = "albert-litert/1"
# The runner of each task kind, one line a kind (LiteRT files and ONNX files: onnx_predict;
# zero_shot's files are ONNX only).
RUNNERS = {
    r.KIND: r
    for r in (
        ClassifierRunner,
        MultipleChoiceRunner,
        SquadRunner,
        TaggerRunner,
        EncoderRunner,
        FillMaskRunner,
        ZeroShotRunner,
    )
}


def read_metadata(path: str) -> dict:
    """{name: bytes} of the file's metadata table (ai-edge-litert's flatbuffer schema).
    ValueError (one line naming `path`) for a file that is not a LiteRT model (no "TFL3"
    identifier) or whose tables point outside it (a truncated or damaged file), rather
    than the flatbuffer reader's struct.error."""
    import struct

    from ai_edge_litert import schema_py_generated as schema

    with open(path, "rb") as f:
        buf = f.read()
    if buf[4:8] != b"TFL3":
        raise ValueError(f"{path}: not a LiteRT (.tflite) file (no TFL3 identifier)")
    try:
        model = schema.Model.GetRootAs(buf, 0)
        out = {}
        for i in range(model.MetadataLength()):
            entry = model.Metadata(i)
            out[entry.Name().decode()] = model.Buffers(entry.Buffer()).DataAsNumpy().tobytes()
    except (struct.error, IndexError, UnicodeDecodeError, AttributeError, TypeError) as e:
        raise ValueError(f"{path}: a damaged LiteRT file ({type(e).__name__}: {e})") from None
    return out


def _text(x) -> str:
    return x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)


def _strings(values, drop_nul: bool = False) -> np.ndarray:
    """UTF-8 bytes, invalid sequences replaced (LiteRT has no transcoding op); any shape.
    `drop_nul`: NUL characters deleted, as BERT's basic tokenizer does (a WordPiece file's
    rewrite table cannot hold NUL: data_pipeline.tokenization.baked_wordpiece)."""
    array = np.asarray(values, dtype=object)
    flat = [_text(v) for v in array.reshape(-1)]
    flat = [(v.replace("\x00", "") if drop_nul else v).encode("utf-8") for v in flat]
    return np.array(flat + [b""], dtype=object)[:-1].reshape(array.shape)


class LiteModel:
    """A .tflite ALBERT with its metadata and its kind's runner (`runner`, from `RUNNERS`),
    whose methods it answers (`classify`, `answer`, `tag`, ...). `num_threads`: the
    interpreter's threads (None: every core; ai-edge-litert's own default is one thread,
    half the speed on 2 cores).

    One object is safe to share between threads (a threaded web server's request
    handlers): a LiteRT interpreter keeps one set of input tensors, so each call's
    resize, set, invoke and read of the outputs is one step under the model's lock
    (`run`); calls from several threads take turns at the interpreter, each getting its
    own answer, while their tokenizing and decoding outside `run` overlap. Without it,
    concurrent calls overwrote each other's inputs and shapes: other requests' rows, or
    a crash in the interpreter. For calls that truly run in parallel, give each thread
    its own LiteModel (bench/lite_threads.py compares the two)."""

    group = FILE_GROUP  # rows per call of the file (length_groups)

    def __init__(self, path: str, num_threads: int | None = None):
        entries = read_metadata(path)
        if METADATA_NAME not in entries:
            raise ValueError(f"{path}: no {METADATA_NAME} metadata; not an ALBERT LiteRT file")
        self.metadata = json.loads(entries[METADATA_NAME])
        if self.metadata.get("format") != FORMAT:
            raise ValueError(f"{path}: format {self.metadata.get('format')!r}, expected {FORMAT}")
        self.task = self.metadata["task"]
        if self.task not in RUNNERS:
            raise ValueError(
                f"{path}: task {self.task!r} has no on-device runner (runners: "
                f"{', '.join(RUNNERS)})"
            )
        self._drop_nul = self.metadata.get("tokenizer") == "wordpiece"
        options = dict(model_path=path, num_threads=num_threads or os.cpu_count() or 1)
        if RUNNERS[self.task].takes_ids(self.metadata):  # (ids in: no custom op)
            from ai_edge_litert.interpreter import Interpreter

            self.interpreter = Interpreter(**options)
        else:
            import tensorflow_text  # the TFText custom ops' registrar
            from ai_edge_litert.interpreter import InterpreterWithCustomOps

            self.interpreter = InterpreterWithCustomOps(
                custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
                **options,
            )
        # The vocabulary the file carries (ids-in files: the runner tokenizes).
        self.spm_model, self.vocab = entries.get(SPM_NAME), entries.get(VOCAB_NAME)
        self.signatures = self.interpreter.get_signature_list()
        self._runners = {}
        self._lock = threading.Lock()  # one interpreter: one call at a time (class docstring)
        self.runner = RUNNERS[self.task](self)

    def __getattr__(self, name):
        """The kind's own methods and properties (classify, answer, max_windows, ...): its
        runner's."""
        runner = self.__dict__.get("runner")
        if runner is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(runner, name)

    def run(self, signature: str = "serving_default", **inputs) -> dict:
        """One call of a signature: numpy inputs → numpy outputs (copies, the caller's own),
        under the model's lock so that concurrent callers never share the interpreter's
        tensors."""
        with self._lock:
            return self._run_locked(signature, inputs)

    def _run_locked(self, signature: str, inputs: dict) -> dict:
        """`run` with the lock held: resize, set, invoke and read one signature."""
        if signature not in self._runners:
            self._runners[signature] = self.interpreter.get_signature_runner(signature)
        if inputs and all(len(v) == 0 for v in inputs.values()):
            # 0 rows: run one empty row (the graph cannot reshape 0 rows) and return none.
            one = {k: np.zeros((1,) + v.shape[1:], v.dtype) for k, v in inputs.items()}
            for v in one.values():
                if v.dtype == object:
                    v[...] = b""
            return {k: v[:0] for k, v in self._runners[signature](**one).items()}
        return self._runners[signature](**inputs)

    @staticmethod
    def text(x) -> str:
        """An input as str (bytes decoded, invalid UTF-8 replaced)."""
        return _text(x)

    def text_in(self, values) -> np.ndarray:
        """`values` as the file's string input (UTF-8 bytes; a WordPiece file's NULs
        deleted)."""
        return _strings(values, self._drop_nul)

    def check_rows(self, **inputs):
        """ValueError unless the inputs have one number of rows."""
        counts = {k: len(v) for k, v in inputs.items()}
        if len(set(counts.values())) > 1:
            (a, n), (b, m) = list(counts.items())[:2]
            raise ValueError(f"{a} has {n} rows but {b} has {m}")

    def tokenize(self, text_a, text_b) -> dict:
        """The ids of a text-in file's `tokenize` signature."""
        self.check_rows(text_a=text_a, text_b=text_b)
        return self.run("tokenize", text_a=self.text_in(text_a), text_b=self.text_in(text_b))

    def sentencepiece(self):
        """The AlbertTokenizer of the SentencePiece model the file carries."""
        from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

        m = self.metadata
        with tempfile.NamedTemporaryFile(suffix=".model") as f:
            f.write(self.spm_model)
            f.flush()
            return AlbertTokenizer(f.name, m["do_lower_case"], m.get("keep_accents", False))


def input_lines(raw: bytes) -> list[str]:
    """The lines of an input file's bytes: invalid UTF-8 replaced, split at "\n" only, a
    trailing "\r" dropped, no line after a final "\n" (so N newline-ended lines are N)."""
    text = raw.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def answer_lines(model: LiteModel, lines: list[str], batch_size: int, source: str):
    """One JSON-ready answer per line of `lines` (line 1 first), each carrying its
    `"line"` number: empty lines (whitespace only) `{"line": N}`, the others predicted in
    batches of `batch_size`."""
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    following = 1  # answered as they come: an error on line N leaves lines 1..N-1 answered
    for (n, _), answer in zip(numbered, _predict_lines(model, numbered, batch_size, source)):
        yield from ({"line": blank} for blank in range(following, n))
        yield {"line": n, **answer}
        following = n + 1
    yield from ({"line": blank} for blank in range(following, len(lines) + 1))


def _predict_lines(model: LiteModel, numbered, batch_size: int, source: str):
    """JSON-ready results of (line number, line) pairs of `source` (see the module
    docstring), in order: the kind's runner answers each batch."""
    for first in range(0, len(numbered), batch_size):
        chunk = numbered[first : first + batch_size]
        numbers = [n for n, _ in chunk]  # (its errors: which)
        where = f"{source}:{numbers[0]}" + (f"-{numbers[-1]}" if len(numbers) > 1 else "")
        yield from model.runner.answers(chunk, source, where, batch_size)


def main(argv=None) -> int:
    """The console command: parse once (tflite_command); 2: a bad command line."""
    return predict_command(argv, __doc__, "albert-tflite-predict", LiteModel)


def predict_command(argv, doc: str, name: str, open_model) -> int:
    """A runner command `name` (this module's, onnx_predict's): its command line parsed once
    (tflite_command, `doc` as --help), `open_model(path, threads)` (LiteModel, OnnxModel),
    one answer per input line. 2: a bad command line; 1 and one `error:` line: a bad model
    or request."""
    from albert_tf.serving.tflite_command import command

    s = command(doc, name).parse_tool(argv)
    if s is None:
        return 2
    try:
        model = open_model(s.model, s.threads)
        if s.input == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(s.input, "rb") as f:
                raw = f.read()
        lines = input_lines(raw)
        sink = sys.stdout if s.output == "-" else open(s.output, "w", encoding="utf-8")
        try:
            source = "stdin" if s.input == "-" else s.input
            for result in answer_lines(model, lines, s.batch_size, source):
                print(json.dumps(result, ensure_ascii=False), file=sink)
        finally:
            if sink is not sys.stdout:
                sink.close()
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
