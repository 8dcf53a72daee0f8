"""SQuAD's side of the on-device runner (albert_tf.serving.tflite_predict): the file scores
windows of ids; the runner cuts each question + context into the windows run_squad made
(data_pipeline.squad.features, the SentencePiece model the file carries) and reads the
answers back as run_squad writes them (data_pipeline.squad.postprocess), with character
offsets. A request beyond the file's limit (albert_tf.serving.request_windows, in SQuAD's
`WORDING`) is a one-line ValueError before any feature is built. No TensorFlow here."""

from __future__ import annotations

import numpy as np

from albert_tf.serving.request_windows import (
    DEFAULT_MAX_WINDOWS,
    Wording,
    bytes_message,
    max_request_bytes,
    windows_message,
)

# How SQuAD's limit errors name the model and a request's text.
WORDING = Wording("SQuAD model", "questions and contexts", "contexts", "answers")


def check_python_request(
    examples,
    tokenizer,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    max_windows: int,
) -> None:
    """ValueError unless SquadExamples `examples` (one request) fit the limits: their
    bytes, then their windows as data_pipeline.squad.features.convert_squad_examples lays them
    out (tokenized once more here, a cost linear in the text, so that the quadratic-time
    features of a huge context are never built)."""
    from data_pipeline.squad.offsets import offset_tokenizer
    from data_pipeline.windows import doc_spans

    size = sum(len(ex.question.encode()) + len(ex.context.encode()) for ex in examples)
    if size > max_request_bytes(max_windows, max_seq_length):
        raise ValueError(bytes_message(f"{size:,}", max_windows, max_seq_length, WORDING))
    offsets, windows = offset_tokenizer(tokenizer), 0
    for ex in examples:
        query = tokenizer.encode(ex.question)[:max_query_length]
        tokens = len(offsets.encode(ex.context)[0])
        windows += len(doc_spans(tokens, max_seq_length - len(query) - 3, doc_stride))
    if windows > max_windows:
        raise ValueError(
            windows_message(windows, len(examples), max_windows, max_seq_length, WORDING)
        )


class SquadRunner:
    """The runner of a SQuAD file (`model`: its tflite_predict.LiteModel): `answer`,
    `predict_squad`, and `answers` for the command line's JSON lines
    ({"question", "context"} each)."""

    KIND = "squad"

    def __init__(self, model):
        self.model = model

    @staticmethod
    def takes_ids(metadata: dict) -> bool:
        return True

    @property
    def max_windows(self) -> int:
        """The most windows one `answer` request may need (the export's setting)."""
        return int(self.model.metadata.get("max_windows", DEFAULT_MAX_WINDOWS))

    def answer(self, questions, contexts, batch_size: int = 8) -> list[dict]:
        """[{"answer", "start", "end", "score"(, "no_answer_probability")}] per question:
        windows, span search and character offsets as run_squad computes them."""
        from data_pipeline.squad.examples import SquadExample

        text = self.model.text
        self.model.check_rows(question=questions, context=contexts)
        examples = [
            SquadExample(str(i), text(q), text(c), [])
            for i, (q, c) in enumerate(zip(questions, contexts))
        ]
        predictions, nbest, null_odds = self.predict_squad(
            examples, batch_size, max_windows=self.max_windows
        )
        out = []
        for ex in examples:
            best = nbest[ex.qas_id][0] if nbest[ex.qas_id] else {}
            found = predictions[ex.qas_id]
            row = {
                "answer": found,
                "start": best.get("start", -1) if found else -1,
                "end": best.get("end", -1) if found else -1,
                "score": best.get("start_logit", 0.0) + best.get("end_logit", 0.0),
            }
            if ex.qas_id in null_odds:
                row["no_answer_probability"] = float(1 / (1 + np.exp(-null_odds[ex.qas_id])))
            out.append(row)
        return out

    def predict_squad(self, examples, batch_size: int = 8, max_windows: int | None = None):
        """(predictions, nbest, null_odds) for SquadExamples, as `run_squad` writes them.
        `max_windows`: ValueError (naming the limit and the request's size) before any
        feature is built when the examples need more windows or bytes (`answer`: the
        file's limit; None: any number, as run_squad over a whole file)."""
        from data_pipeline.squad.features import convert_squad_examples
        from data_pipeline.squad.postprocess import postprocess, postprocess_beam

        m = self.model.metadata
        tokenizer = self.model.sentencepiece()
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
            out = self.model.run(
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

    def answers(self, chunk, source: str, where: str, batch_size: int):
        """One answer per (line number, JSON line) of `chunk`: the batch at once, or, when
        it is beyond the file's limits, line by line (the error names its line)."""
        from data_pipeline.io.text_lines import json_object

        rows = [json_object(source, number, line) for number, line in chunk]
        try:
            found = self.answer(
                [r["question"] for r in rows], [r["context"] for r in rows], batch_size
            )
        except ValueError:  # beyond the file's limits: which line, answering those before
            found = None
        if found is not None:
            yield from found
            return
        for (number, _), r in zip(chunk, rows):
            try:
                (one,) = self.answer([r["question"]], [r["context"]], batch_size)
            except ValueError as e:
                raise ValueError(f"{source}:{number}: {e}") from None
            yield one
