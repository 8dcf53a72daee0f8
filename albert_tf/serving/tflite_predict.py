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
  token_classifier a text (words: albert_tf.serving.lite_tagging)
  fill_mask        a text with one or more "[MASK]" (albert_tf.serving.lite_fill_mask)
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

import numpy as np

METADATA_NAME = "albert_metadata"  # (albert_tf.serving.litert writes these)
SPM_NAME = "albert_spm_model"
VOCAB_NAME = "albert_wordpiece_vocab"  # (fill-mask files of WordPiece models)
FORMAT = "albert-litert/1"
_INPUTS = ("input_ids", "input_mask", "segment_ids")


def read_metadata(path: str) -> dict:
    """{name: bytes} of the file's metadata table (ai-edge-litert's flatbuffer schema)."""
    from ai_edge_litert import schema_py_generated as schema

    with open(path, "rb") as f:
        buf = f.read()
    model = schema.Model.GetRootAs(buf, 0)
    out = {}
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        out[entry.Name().decode()] = model.Buffers(entry.Buffer()).DataAsNumpy().tobytes()
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
    """A .tflite ALBERT with its metadata. `num_threads`: the interpreter's threads (None:
    every core; ai-edge-litert's own default is one thread, half the speed on 2 cores)."""

    def __init__(self, path: str, num_threads: int | None = None):
        entries = read_metadata(path)
        if METADATA_NAME not in entries:
            raise ValueError(f"{path}: no {METADATA_NAME} metadata; not an ALBERT LiteRT file")
        self.metadata = json.loads(entries[METADATA_NAME])
        if self.metadata.get("format") != FORMAT:
            raise ValueError(f"{path}: format {self.metadata.get('format')!r}, expected {FORMAT}")
        self.task = self.metadata["task"]
        self._drop_nul = self.metadata.get("tokenizer") == "wordpiece"
        options = dict(model_path=path, num_threads=num_threads or os.cpu_count() or 1)
        ids_in = self.task in ("squad", "token_classifier", "fill_mask")
        ids_in = ids_in or self.metadata.get("doc_stride")
        if ids_in:  # (ids in, windows here: no custom op)
            from ai_edge_litert.interpreter import Interpreter

            self.interpreter = Interpreter(**options)
            self._spm_model = entries.get(SPM_NAME)
            self._vocab = entries.get(VOCAB_NAME)
        else:
            import tensorflow_text  # the TFText custom ops' registrar
            from ai_edge_litert.interpreter import InterpreterWithCustomOps

            self.interpreter = InterpreterWithCustomOps(
                custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
                **options,
            )
        self.signatures = self.interpreter.get_signature_list()
        self._runners = {}

    def run(self, signature: str = "serving_default", **inputs) -> dict:
        """One call of a signature: numpy inputs → numpy outputs."""
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

    def _text_in(self, values) -> np.ndarray:
        return _strings(values, self._drop_nul)

    def _rows(self, **inputs):
        counts = {k: len(v) for k, v in inputs.items()}
        if len(set(counts.values())) > 1:
            (a, n), (b, m) = list(counts.items())[:2]
            raise ValueError(f"{a} has {n} rows but {b} has {m}")

    # --- tasks ------------------------------------------------------------------------

    def classify(self, text_a, text_b=None) -> dict:
        """probabilities [B, L], logits, label [B] (regression: score [B]); a long-document
        file's per document (`classify_documents`)."""
        if self.metadata.get("doc_stride"):
            if text_b is not None and any(_text(b) for b in text_b):
                raise ValueError("this model classifies single texts; text_b was given")
            return self.classify_documents(text_a)
        inputs = {"text_a": self._text_in(text_a)}
        if self.metadata.get("text_pair"):
            inputs["text_b"] = self._text_in(text_b if text_b is not None else [""] * len(text_a))
        elif text_b is not None and any(_text(b) for b in text_b):
            raise ValueError("this model classifies single sentences; text_b was given")
        self._rows(**inputs)
        return self.run(**inputs)

    def classify_documents(self, texts, batch_size: int = 32) -> dict:
        """A long-document file's outputs: each text cut into the windows run_classifier's
        --doc_stride made (data_pipeline.classification.long_documents), the windows' logits
        combined per text. ValueError beyond the file's limits (classifier_limits) before
        the model runs."""
        from albert_tf.serving.classifier_limits import check_python_request, check_python_windows
        from data_pipeline.classification.examples import Example
        from data_pipeline.classification.long_documents import (
            DocumentWindows,
            aggregate_logits,
            convert_windowed,
        )

        m, texts = self.metadata, [_text(t) for t in texts]
        S, limit = m["max_seq_length"], int(m["max_windows"])
        check_python_request(texts, limit, S)
        windows = DocumentWindows(m["doc_stride"], m["max_document_windows"], m["aggregate"])
        stats = {}
        examples = [Example(str(i), t, None, None) for i, t in enumerate(texts)]
        labels = m["labels"] or None
        features = convert_windowed(examples, self._python_tokenizer(), S, labels, windows, stats)
        check_python_windows(stats["document_windows"], limit, S)
        logits = []
        for first in range(0, len(features["input_ids"]), batch_size):
            rows = slice(first, first + batch_size)
            length = S if m["fixed_length"] else int(features["input_mask"][rows].sum(1).max())
            batch = {k: features[k][rows, :length].astype(np.int32) for k in _INPUTS}
            logits.append(self.run(**batch)["logits"].astype(np.float32))
        n = len(texts)
        width = max(len(m["labels"]), 1)
        out = aggregate_logits(np.concatenate(logits), stats["document_windows"], m["aggregate"])
        out = out.reshape(n, width)
        if m.get("regression"):
            return {"score": out[:, 0]}
        probs = np.exp(out - out.max(-1, keepdims=True))
        labels = np.array(m["labels"], dtype=object)
        return {
            "probabilities": probs / probs.sum(-1, keepdims=True),
            "logits": out,
            "label": labels[out.argmax(-1)] if n else labels[:0],
        }

    def _python_tokenizer(self):
        """The AlbertTokenizer of the SentencePiece model the file carries."""
        from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

        m = self.metadata
        with tempfile.NamedTemporaryFile(suffix=".model") as f:
            f.write(self._spm_model)
            f.flush()
            return AlbertTokenizer(f.name, m["do_lower_case"], m.get("keep_accents", False))

    def tokenize(self, text_a, text_b) -> dict:
        self._rows(text_a=text_a, text_b=text_b)
        return self.run("tokenize", text_a=self._text_in(text_a), text_b=self._text_in(text_b))

    def choose(self, passages, questions, options) -> dict:
        """options: [B][C] strings ("" or missing = no such option): probabilities [B, C],
        logits, choice [B]."""
        from data_pipeline.classification.examples import choice_text

        self._rows(passage=passages, question=questions, options=options)
        width = max([len(o) for o in options] + [1])
        choices = [
            [
                choice_text(_text(q), _text(o)) if i < len(opts) and _text(o) else ""
                for i, o in enumerate(list(opts) + [""] * (width - len(opts)))
            ]
            for q, opts in zip(questions, options)
        ]
        return self.run(
            passage=self._text_in(passages),
            choices=self._text_in(choices),
        )

    def embed(self, texts) -> dict:
        return self.run("embed", text=self._text_in(texts))

    def vectors(self, texts) -> np.ndarray:
        """embeddings [B, H] as `embed`'s, computed in length-sorted groups (lite_vectors)."""
        from albert_tf.serving.lite_vectors import grouped_vectors

        return grouped_vectors(self.run, self._text_in(texts))

    def _sentencepiece(self):
        """The Python tokenizer of the SentencePiece model the file carries."""
        from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

        m = self.metadata
        with tempfile.NamedTemporaryFile(suffix=".model") as f:
            f.write(self._spm_model)
            f.flush()
            return AlbertTokenizer(f.name, m["do_lower_case"], m.get("keep_accents", False))

    def tag(self, texts, batch_size: int = 8, where: str = "") -> list[dict]:
        """[{"words", "tags", "tag_scores", "entities"}] per text: albert_tf.serving.
        lite_tagging around the file's per-token logits (its limits' errors: "`where`: ")."""
        from albert_tf.serving.lite_tagging import tag_texts

        if not hasattr(self, "_tagger_tokenizer"):
            self._tagger_tokenizer = self._sentencepiece()
        texts = [_text(t) for t in texts]
        return tag_texts(self.run, self.metadata, self._tagger_tokenizer, texts, batch_size, where)

    def fill(self, texts, batch_size: int = 8, names=None) -> list[list[list[dict]]]:
        """Per text, per "[MASK]": the top-k candidates (albert_tf.serving.lite_fill_mask)."""
        from albert_tf.serving.lite_fill_mask import file_tokenizer, fill_texts

        if not hasattr(self, "_fill_tokenizer"):
            self._fill_tokenizer = file_tokenizer(self.metadata, self._spm_model, self._vocab)
        texts = [_text(t) for t in texts]
        return fill_texts(self.run, self.metadata, self._fill_tokenizer, texts, batch_size, names)

    def answer(self, questions, contexts, batch_size: int = 8) -> list[dict]:
        """[{"answer", "start", "end", "score"(, "no_answer_probability")}] per question:
        windows, span search and character offsets as run_squad computes them."""
        from data_pipeline.squad.examples import SquadExample

        self._rows(question=questions, context=contexts)
        examples = [
            SquadExample(str(i), _text(q), _text(c), [])
            for i, (q, c) in enumerate(zip(questions, contexts))
        ]
        predictions, nbest, null_odds = self.predict_squad(
            examples, batch_size, max_windows=self.max_windows
        )
        out = []
        for ex in examples:
            best = nbest[ex.qas_id][0] if nbest[ex.qas_id] else {}
            text = predictions[ex.qas_id]
            row = {
                "answer": text,
                "start": best.get("start", -1) if text else -1,
                "end": best.get("end", -1) if text else -1,
                "score": best.get("start_logit", 0.0) + best.get("end_logit", 0.0),
            }
            if ex.qas_id in null_odds:
                row["no_answer_probability"] = float(1 / (1 + np.exp(-null_odds[ex.qas_id])))
            out.append(row)
        return out

    @property
    def max_windows(self) -> int:
        """The most windows one `answer` request may need (the export's setting,
        albert_tf.serving.squad_limits)."""
        from albert_tf.serving.squad_limits import DEFAULT_MAX_WINDOWS

        return int(self.metadata.get("max_windows", DEFAULT_MAX_WINDOWS))

    def predict_squad(self, examples, batch_size: int = 8, max_windows: int | None = None):
        """(predictions, nbest, null_odds) for SquadExamples, as `run_squad` writes them.
        `max_windows`: ValueError (naming the limit and the request's size) before any
        feature is built when the examples need more windows or bytes (`answer`: the
        file's limit; None: any number, as run_squad over a whole file)."""
        from albert_tf.serving.squad_limits import check_python_request
        from data_pipeline.squad.features import convert_squad_examples
        from data_pipeline.squad.postprocess import postprocess, postprocess_beam

        m = self.metadata
        tokenizer = self._python_tokenizer()
        if max_windows is not None:
            check_python_request(
                examples,
                tokenizer,
                m["max_seq_length"],
                m["doc_stride"],
                m["max_query_length"],
                max_windows,
            )
        features = convert_squad_examples(
            examples, tokenizer, m["max_seq_length"], m["doc_stride"], m["max_query_length"]
        )
        count = len(features["input_ids"])
        start = np.zeros([count, m["max_seq_length"]], np.float32)
        end = np.zeros_like(start)
        beam = {}
        for first in range(0, count, batch_size):
            rows = slice(first, first + batch_size)
            mask = features["input_mask"][rows]
            length = m["max_seq_length"] if m["fixed_length"] else max(int(mask.sum(1).max()), 1)
            out = self.run(
                **{
                    k: features[k][rows, :length].astype(np.int32)
                    for k in ("input_ids", "input_mask", "segment_ids")
                }
            )
            if m.get("squad_head") == "albert":  # positions in the window: no padding back
                for k, v in out.items():
                    beam.setdefault(k, []).append(v)
                continue
            start[rows] = -1e4  # beyond the window: never an answer
            end[rows] = -1e4
            start[rows, :length], end[rows, :length] = out["start_logits"], out["end_logits"]
        if m.get("squad_head") == "albert":
            outputs = {k: np.concatenate(v) for k, v in beam.items()}
            return postprocess_beam(
                examples,
                features,
                outputs,
                m["n_best_size"],
                m["max_answer_length"],
                m["null_score_diff_threshold"],
            )
        return postprocess(
            examples,
            features,
            start,
            end,
            m["n_best_size"],
            m["max_answer_length"],
            m["version_2_with_negative"],
            m["null_score_diff_threshold"],
        )


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
    docstring), in order."""
    from data_pipeline.io.text_lines import json_object

    task, meta = model.task, model.metadata
    lines = [line for _, line in numbered]
    for first in range(0, len(lines), batch_size):
        batch = lines[first : first + batch_size]
        numbers = [n for n, _ in numbered[first : first + batch_size]]  # (its errors: which)
        where = f"{source}:{numbers[0]}" + (f"-{numbers[-1]}" if len(numbers) > 1 else "")
        if task == "classifier":
            parts = [line.split("\t", 1) if meta.get("text_pair") else [line] for line in batch]
            a = [p[0] for p in parts]
            b = [p[1] if len(p) > 1 else "" for p in parts] if meta.get("text_pair") else None
            try:
                out = model.classify(a, b)
            except ValueError as e:  # (a long-document file's limits): which lines
                raise ValueError(f"{where}: {e}") from None
            for i in range(len(batch)):
                if meta.get("regression"):
                    yield {"score": float(out["score"][i])}
                    continue
                probs = dict(zip(meta["labels"], map(float, out["probabilities"][i])))
                if meta.get("multi_label"):
                    labels = [_text(x) for x in out["label"][i] if _text(x)]
                    yield {"labels": labels, "probabilities": probs}
                else:
                    yield {"label": _text(out["label"][i]), "probabilities": probs}
        elif task == "token_classifier":
            yield from model.tag(batch, batch_size, where)
        elif task == "fill_mask":
            names = [f"{source}:{n}" for n in numbers]
            yield from ({"masks": m} for m in model.fill(batch, batch_size, names))
        elif task == "encoder":
            out = model.embed(batch)
            for i in range(len(batch)):
                yield {
                    "embedding": out["embeddings"][i].tolist(),
                    "pooled_output": out["pooled_output"][i].tolist(),
                }
        else:
            chunk = numbered[first : first + batch_size]
            rows = [json_object(source, number, line) for number, line in chunk]
            if task == "multiple_choice":
                out = model.choose(
                    [r["passage"] for r in rows],
                    [r["question"] for r in rows],
                    [r["options"] for r in rows],
                )
                for i in range(len(rows)):
                    yield {
                        "choice": int(out["choice"][i]),
                        "probabilities": out["probabilities"][i].tolist(),
                    }
            else:
                try:
                    answers = model.answer(
                        [r["question"] for r in rows], [r["context"] for r in rows], batch_size
                    )
                except ValueError:  # beyond the file's limits: which line, answering those before
                    answers = None
                if answers is not None:
                    yield from answers
                    continue
                for (number, _), r in zip(chunk, rows):
                    try:
                        (answer,) = model.answer([r["question"]], [r["context"]], batch_size)
                    except ValueError as e:
                        raise ValueError(f"{source}:{number}: {e}") from None
                    yield answer


def main(argv=None) -> int:
    """The console command: parse once (tflite_command); 2: a bad command line."""
    from albert_tf.serving.tflite_command import command

    s = command(__doc__).parse_tool(argv)
    if s is None:
        return 2
    try:
        model = LiteModel(s.model, s.threads)
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
