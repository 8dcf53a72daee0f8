"""The classifier's side of the on-device runner (albert_tf.serving.tflite_predict): a file
that takes text (tensorflow-text's custom ops tokenize in it), or, for a long-document
classifier (its metadata's doc_stride), windows of ids the runner cuts as run_classifier's
--doc_stride did (data_pipeline.classification.long_documents), their logits combined per
document here, within the file's limits (albert_tf.serving.request_windows). No TensorFlow
here."""

from __future__ import annotations

import numpy as np

_INPUTS = ("input_ids", "input_mask", "segment_ids")


class ClassifierRunner:
    """The runner of a classifier file (`model`: its tflite_predict.LiteModel): `classify`,
    `classify_documents`, and `answers` for the command line (a sentence a line, or
    `text_a<TAB>text_b` for a pair task)."""

    KIND = "classifier"

    def __init__(self, model):
        self.model = model

    @staticmethod
    def takes_ids(metadata: dict) -> bool:
        """Long documents: windows of ids in; otherwise text in."""
        return bool(metadata.get("doc_stride"))

    def classify(self, text_a, text_b=None) -> dict:
        """probabilities [B, L], logits, label [B] (regression: score [B]); a long-document
        file's per document (`classify_documents`)."""
        model, text = self.model, self.model.text
        if model.metadata.get("doc_stride"):
            if text_b is not None and any(text(b) for b in text_b):
                raise ValueError("this model classifies single texts; text_b was given")
            return self.classify_documents(text_a)
        inputs = {"text_a": model.text_in(text_a)}
        if model.metadata.get("text_pair"):
            inputs["text_b"] = model.text_in(text_b if text_b is not None else [""] * len(text_a))
        elif text_b is not None and any(text(b) for b in text_b):
            raise ValueError("this model classifies single sentences; text_b was given")
        model.check_rows(**inputs)
        return model.run(**inputs)

    def classify_documents(self, texts, batch_size: int = 32) -> dict:
        """A long-document file's outputs: each text cut into the windows run_classifier's
        --doc_stride made, the windows' logits combined per text. ValueError beyond the
        file's limits before the model runs."""
        from albert_tf.serving.request_windows import check_python_request, check_python_windows
        from data_pipeline.classification.examples import Example
        from data_pipeline.classification.long_documents import (
            DocumentWindows,
            aggregate_logits,
            convert_windowed,
        )

        m, texts = self.model.metadata, [self.model.text(t) for t in texts]
        S, limit = m["max_seq_length"], int(m["max_windows"])
        check_python_request(texts, limit, S)
        windows = DocumentWindows(m["doc_stride"], m["max_document_windows"], m["aggregate"])
        stats = {}
        examples = [Example(str(i), t, None, None) for i, t in enumerate(texts)]
        labels = m["labels"] or None
        tokenizer = self.model.sentencepiece()
        features = convert_windowed(examples, tokenizer, S, labels, windows, stats)
        check_python_windows(stats["document_windows"], limit, S)
        logits = []
        for first in range(0, len(features["input_ids"]), batch_size):
            rows = slice(first, first + batch_size)
            length = S if m["fixed_length"] else int(features["input_mask"][rows].sum(1).max())
            batch = {k: features[k][rows, :length].astype(np.int32) for k in _INPUTS}
            logits.append(self.model.run(**batch)["logits"].astype(np.float32))
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

    def answers(self, chunk, source: str, where: str, batch_size: int):
        """One answer per (line number, line) of `chunk`: the label and probabilities (a
        multi-label file's "labels" at or over their thresholds; a regression's score)."""
        meta, text = self.model.metadata, self.model.text
        batch = [line for _, line in chunk]
        pair = meta.get("text_pair")
        parts = [line.split("\t", 1) if pair else [line] for line in batch]
        a = [p[0] for p in parts]
        b = [p[1] if len(p) > 1 else "" for p in parts] if pair else None
        try:
            out = self.classify(a, b)
        except ValueError as e:  # (a long-document file's limits): which lines
            raise ValueError(f"{where}: {e}") from None
        for i in range(len(batch)):
            if meta.get("regression"):
                yield {"score": float(out["score"][i])}
                continue
            probs = dict(zip(meta["labels"], map(float, out["probabilities"][i])))
            if meta.get("multi_label"):
                labels = [text(x) for x in out["label"][i] if text(x)]
                yield {"labels": labels, "probabilities": probs}
            else:
                yield {"label": text(out["label"][i]), "probabilities": probs}
