"""Long documents for the classifier: a text longer than the model reads becomes overlapping
windows, each an example, and the windows' outputs are combined into one per document.

Windows (`DocumentWindows.doc_stride` > 0; 0 keeps the official truncation). A text of more
than `max_seq_length - 2` pieces is cut into windows of that many pieces, each starting
`doc_stride` pieces after the previous one (run_squad's `doc_stride`: the step between
window starts; data_pipeline.windows.doc_spans), every window packed `[CLS] pieces [SEP]`
(segment 0). `max_document_windows` > 0 keeps the first that many windows of a document
(the rest of a longer one is not read, in training, evaluation, prediction and serving
alike). Only single texts are windowed: a sentence pair (a text_b) is refused with a
one-line error naming its file and line, as is a multiple-choice task.

Training: every window is an example carrying its document's label, as the BERT/ALBERT
long-document baselines do (a window without the signal is noise the model averages out;
aggregation at evaluation makes that noise cheap). The training windows are written in an
order shuffled with the run's seed: a document's windows are many and consecutive, and a
file sorted by label (movie_reviews is) would otherwise fill the reader's shuffle buffer
(10,000 records) with one label for thousands of steps. Evaluation and prediction: a document's
window logits [w, L] become one row [L] (`aggregate`):
  mean_logits  the mean of the windows' logits (regression: the mean score);
  max_prob     log of the largest probability each class reaches in any window, so that a
               softmax of it gives those maxima renormalized (its argmax: the class some
               window is most sure of). Not for regression.
Metrics, submission files and the serving outputs are then per document, never per window.
The default, mean_logits, is the measured better one: movie_reviews dev accuracy 0.780
against max_prob's 0.715 (truncation to 128 tokens: 0.590), one seed, 900 steps at batch
32 from scratch, 128-token windows every 64 (experiments/long_documents_quality.py); at 300
steps neither windowed run had learned yet (0.500, truncation 0.640).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from data_pipeline.classification.multi_label import multi_hot
from data_pipeline.cli import check_fields, setting
from data_pipeline.windows import WindowSettings, doc_spans

WINDOW_STRIDE = next(f for f in dataclasses.fields(WindowSettings) if f.name == "doc_stride")

AGGREGATES = ("mean_logits", "max_prob")


@dataclasses.dataclass(frozen=True)
class DocumentWindows(WindowSettings):
    """How long documents are read (the module docstring); doc_stride 0: truncation."""

    doc_stride: int = dataclasses.field(default=0, metadata=WINDOW_STRIDE.metadata)
    max_document_windows: int = setting(
        0, "With --doc_stride: read the first this many windows of a document (0: all).", minimum=0
    )
    aggregate: str = setting(
        "mean_logits",
        "With --doc_stride: a document's output from its windows': the mean of their logits, "
        "or the largest probability each class reaches (max_prob).",
        choices=AGGREGATES,
    )

    def __post_init__(self):
        check_fields(self)

    @property
    def enabled(self) -> bool:
        return self.doc_stride > 0

    def check_task(
        self, multiple_choice: bool, regression: bool, multi_label: bool = False
    ) -> None:
        """ValueError (one line, naming the flag) for a task these windows cannot serve."""
        if not self.enabled:
            return
        if multiple_choice:
            raise ValueError("--doc_stride windows single texts; multiple-choice tasks are not")
        if regression and self.aggregate == "max_prob":
            raise ValueError("--aggregate=max_prob needs class probabilities; regression has none")
        if multi_label and self.aggregate == "max_prob":
            raise ValueError(
                "--aggregate=max_prob combines softmax probabilities; with --multi_label (one "
                "sigmoid a label) use --aggregate=mean_logits"
            )

    def fingerprint(self) -> dict:
        """What the windowed features depend on (the cache key's part)."""
        return {"doc_stride": self.doc_stride, "max_document_windows": self.max_document_windows}

    def task_fields(self) -> dict:
        """The exported model's task.json fields (albert_tf.checkpoints.task_kinds.classifier)."""
        return dataclasses.asdict(self)


def document_spans(
    num_pieces: int, max_seq_length: int, doc_stride: int, max_windows: int = 0
) -> list[tuple[int, int]]:
    """(start, length) of a document's windows of at most max_seq_length − 2 pieces, the
    first `max_windows` of them (0: all)."""
    spans = doc_spans(num_pieces, max_seq_length - 2, doc_stride)
    return spans[:max_windows] if max_windows > 0 else spans


def convert_windowed(
    examples,
    tokenizer,
    max_seq_length: int,
    labels: list[str] | None,
    windows: DocumentWindows,
    stats: dict,
    source: str = "?",
    shuffle_seed: int | None = None,
    multi_label: bool = False,
) -> dict:
    """Examples (`examples.Example`, single texts) → {input_ids, input_mask, segment_ids
    [W, S], label_ids [W]}: every document's windows in order, each with the document's
    label (int64 class index, float32 score when `labels` is None, float32 multi-hot
    [W, L] with `multi_label`: multi_label.multi_hot). Fills
    `stats["document_windows"]` (windows of each document, [D] ints), `stats["windowed"]`
    (documents of more than one window), `stats["truncated"]` (documents whose windows
    beyond `max_document_windows` were dropped) and `stats["text_pair"]` (False).
    `shuffle_seed` (training): the windows in an order shuffled with it instead
    (`stats["shuffled"]`: no per-document aggregation then). A text_b is a ValueError
    naming `source`:line."""
    for e in examples:
        if e.text_b:
            raise ValueError(
                f"{source}:{e.line or '?'}: --doc_stride windows single texts; this example "
                "has a second text (text_b): drop --doc_stride or the second text"
            )
    index = {name: i for i, name in enumerate(labels)} if labels else None
    hot = multi_hot(examples, labels) if multi_label else None
    rows, label_ids, counts = [], [], []
    windowed = truncated = 0
    texts = tokenizer.encode_batch([e.text_a for e in examples])
    for n, (e, ids) in enumerate(zip(examples, texts)):
        spans = document_spans(len(ids), max_seq_length, windows.doc_stride)
        kept = spans[: windows.max_document_windows or len(spans)]
        windowed += len(spans) > 1
        truncated += len(kept) < len(spans)
        if multi_label:
            label = hot[n]
        elif e.label is None:
            label = 0
        else:
            label = float(e.label) if index is None else index[str(e.label)]
        for start, length in kept:
            rows.append([tokenizer.cls_id, *ids[start : start + length], tokenizer.sep_id])
            label_ids.append(label)
        counts.append(len(kept))
    input_ids = np.zeros((len(rows), max_seq_length), np.int64)
    input_mask = np.zeros_like(input_ids)
    for i, row in enumerate(rows):
        input_ids[i, : len(row)] = row
        input_mask[i, : len(row)] = 1
    stats.update(document_windows=counts, windowed=windowed, truncated=truncated, text_pair=False)
    out = {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": np.zeros_like(input_ids),
        "label_ids": np.array(label_ids, np.float32 if index is None or multi_label else np.int64),
    }
    if multi_label and not rows:
        out["label_ids"] = out["label_ids"].reshape(0, len(labels))
    if shuffle_seed is None:
        return out
    stats["shuffled"] = True
    order = np.random.default_rng(shuffle_seed).permutation(len(rows))
    return {k: v[order] for k, v in out.items()}


def aggregate_logits(logits: np.ndarray, counts, how: str) -> np.ndarray:
    """Window logits [W, L] (documents' windows consecutive, `counts` [D] of them each) →
    document logits [D, L] (module docstring: mean_logits, max_prob), float32."""
    counts = np.asarray(counts, np.int64)
    if counts.sum() != len(logits) or (counts < 1).any():
        raise ValueError(f"{len(logits)} windows do not match the documents' counts")
    logits = np.asarray(logits, np.float64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    if how == "mean_logits":
        return (np.add.reduceat(logits, starts, axis=0) / counts[:, None]).astype(np.float32)
    if how == "max_prob":
        shifted = logits - logits.max(-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        return np.maximum.reduceat(log_probs, starts, axis=0).astype(np.float32)
    raise ValueError(f"aggregate={how!r} is not one of {', '.join(AGGREGATES)}")


def document_outputs(logits, label_ids, info: dict, how: str):
    """(logits, label_ids) of a split's records → per document when its features are
    windowed (`info["document_windows"]`: each document's label is its first window's);
    unchanged otherwise."""
    counts = info.get("document_windows")
    if counts is None:
        return logits, label_ids
    if info.get("shuffled"):
        raise ValueError("these windows are shuffled (training records): no per-document outputs")
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return aggregate_logits(logits, counts, how), np.asarray(label_ids)[first]
