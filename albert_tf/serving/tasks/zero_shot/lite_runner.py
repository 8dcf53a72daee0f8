"""The zero-shot side of the runners (albert_tf.serving.tflite_predict's `RUNNERS`; only
ONNX files of the kind exist, `albert_tf.serving.onnx_predict`): texts and candidate
labels → the NLI classifier's scores, as the SavedModel's graph computes them
(`modules.ZeroShotServing`, Hugging Face's zero-shot-classification pipeline).

The file scores pairs of ids ([B, N, S]: each text with each hypothesis) and computes the
scores in its graph (`modules.zero_shot_outputs`, the candidates' order as indices); here
are the request's checks, the hypotheses (the template with each label in its "{}"), the
pairs packed as `pairs.pair_inputs` packs them (only the premise cut, the hypothesis kept
whole) and the labels put back in score order. The error messages are the graph's
(`pairs_message`, `bytes_message`: owned here, `pairs` imports them). No TensorFlow here."""

from __future__ import annotations

import numpy as np

from albert_tf.serving.request_windows import (
    BYTES_PER_WINDOW_POSITION,
    DEFAULT_MAX_WINDOWS,
    max_request_bytes,
)


def pairs_message(texts, labels, pairs, max_pairs: int) -> str:
    """The error of a request of `texts` × `labels` = `pairs` ("{}" for tf.strings.format)."""
    return (
        f"the request holds {texts} texts × {labels} candidate labels = {pairs} pairs; this "
        f"zero-shot classifier reads at most max_pairs={max_pairs} pairs per request; send "
        "fewer texts or labels"
    )


def bytes_message(size, max_pairs: int, max_seq_length: int) -> str:
    """The error of a request of `size` bytes to tokenize."""
    return (
        f"the request holds {size} bytes of text, labels and hypotheses; this zero-shot "
        f"classifier reads at most {max_request_bytes(max_pairs, max_seq_length):,} per "
        f"request ({BYTES_PER_WINDOW_POSITION} per position of its max_pairs={max_pairs} "
        f"pairs of {max_seq_length} tokens); send fewer or shorter texts"
    )


def pair_ids(tokenizer, texts, hypotheses, max_seq_length: int) -> dict:
    """input_ids, input_mask, segment_ids int32 [B, N, L] of every (text, hypothesis):
    `[CLS] text [SEP] hypothesis [SEP]`, the text cut to max_seq_length - 3 - len(h)
    (`pairs.pair_inputs`' rule), L the longest pair."""
    from albert_tf.serving.onnx_inputs import INPUT_NAMES, pack_ids

    h = [tokenizer.encode(x) for x in hypotheses]
    rows = []
    for text in texts:
        p = tokenizer.encode(text)
        for b in h:
            a = p[: max(0, min(len(p), max_seq_length - 3 - len(b)))]
            rows.append(pack_ids(tokenizer, a, b, max_seq_length))
    length = max([len(ids) for ids, _ in rows] + [2])
    out = {k: np.zeros([len(rows), length], np.int32) for k in INPUT_NAMES}
    for i, (ids, segments) in enumerate(rows):
        out["input_ids"][i, : len(ids)] = ids
        out["input_mask"][i, : len(ids)] = 1
        out["segment_ids"][i, : len(ids)] = segments
    return {k: v.reshape(len(texts), len(h), length) for k, v in out.items()}


class ZeroShotRunner:
    """The runner of a zero-shot file (`model`: its OnnxModel): `classify`, and `answers`
    for the command line's JSON lines ({"text", "candidate_labels", "hypothesis_template"?,
    "multi_label"?} each)."""

    KIND = "zero_shot"

    def __init__(self, model):
        self.model = model

    @staticmethod
    def takes_ids(metadata: dict) -> bool:
        return True

    def classify(self, texts, candidate_labels, hypothesis_template="", multi_label=False):
        """scores [B, N] (candidate order), labels [B, N] and sorted_scores [B, N] (best
        first), logits [B, N, C]: the SavedModel's outputs. ValueError (one line, the
        graph's words) for no label, a bad template, or more than the file's max_pairs
        pairs or bytes."""
        from albert_tf.checkpoints.task_kinds.zero_shot import SLOT, check_template

        m, text = self.model.metadata, self.model.text
        texts, labels = [text(t) for t in texts], [text(x) for x in candidate_labels]
        template = text(hypothesis_template) or m["hypothesis_template"]
        S, limit = m["max_seq_length"], int(m.get("max_pairs") or DEFAULT_MAX_WINDOWS)
        if not labels:
            raise ValueError("candidate_labels is empty: give at least one candidate label")
        check_template(template)
        if len(texts) * len(labels) > limit:
            raise ValueError(
                pairs_message(len(texts), len(labels), len(texts) * len(labels), limit)
            )
        size = sum(len(t.encode()) for t in texts) + sum(len(x.encode()) for x in labels)
        size += len(labels) * len(template.encode())
        if size > max_request_bytes(limit, S):
            raise ValueError(bytes_message(size, limit, S))
        before, after = template.split(SLOT)
        hypotheses = [before + x + after for x in labels]
        ids = pair_ids(self.model.sentencepiece(), texts, hypotheses, S)
        out = self.model.run(**ids, multi_label=np.array(bool(multi_label)))
        order = out["labels"].astype(np.int64)
        return dict(out, labels=np.array(labels, dtype=object)[order])

    def answers(self, chunk, source: str, where: str, batch_size: int):
        """One {"labels", "scores"} (best first) per (line number, JSON line) of `chunk`;
        each line is its own request (its own labels)."""
        from data_pipeline.io.text_lines import json_object

        for number, line in chunk:
            r = json_object(source, number, line)
            try:
                out = self.classify(
                    [r["text"]],
                    r["candidate_labels"],
                    r.get("hypothesis_template", ""),
                    r.get("multi_label", False),
                )
            except ValueError as e:
                raise ValueError(f"{source}:{number}: {e}") from None
            yield {
                "labels": list(out["labels"][0]),
                "scores": [float(s) for s in out["sorted_scores"][0]],
            }
