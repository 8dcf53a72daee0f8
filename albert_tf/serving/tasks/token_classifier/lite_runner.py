"""The token classifier's side of the on-device runner (albert_tf.serving.tflite_predict):
raw texts → words, tags and entities around a LiteRT file that maps windows of ids to
per-token logits (`modules.LiteTagger`). Every step but the model is data_pipeline.tagging's own
Python code, as the runner's evaluation runs it: words (text_words.split_words: the
SavedModel's rule), pieces and windows (features.convert_sentences), each word's
max-context window (predictions.word_predictions), entities (metrics.entities with the
task's scheme). So the file answers the SavedModel's tags on the same texts.

Scores as the SavedModel's: a word's is the probability of its tag at its first piece, an
entity's the mean of its words'.

Limits as the SavedModel's (request_windows, the file's metadata `max_windows`): the
request's bytes are checked before its words are split, its windows (counted from its
pieces, linear in the text) before any feature is built or the model runs; beyond
either, one ValueError naming the limit and the request's size."""

from __future__ import annotations

import numpy as np

from albert_tf.serving.request_windows import DEFAULT_MAX_WINDOWS, Wording

INPUTS = ("input_ids", "input_mask", "segment_ids")
WORDING = Wording("token classifier")  # how the limits' errors name the model


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def word_logits(run, features: dict, sentence_lengths, max_seq_length, fixed_length, batch_size):
    """float32 logits [words, labels] per sentence: `run(**inputs)` → {"logits": [b, L, labels]}
    over the features' windows, `batch_size` windows at a time in length order
    (`length_groups`), each call cut to its longest window (all max_seq_length columns
    with `fixed_length`), read at each word's first piece in its max-context window."""
    from albert_tf.serving.length_groups import length_groups
    from data_pipeline.tagging.predictions import word_predictions

    count = len(features["input_ids"])
    lengths = features["input_mask"].sum(1)
    logits = np.zeros([count, max_seq_length, 1], np.float32)
    for take in length_groups(lengths, batch_size):
        length = max_seq_length if fixed_length else max(int(lengths[take].max()), 1)
        out = run(**{k: features[k][take, :length].astype(np.int32) for k in INPUTS})["logits"]
        if logits.shape[2:] != out.shape[2:]:
            logits = np.zeros((count, max_seq_length) + out.shape[2:], np.float32)
        logits[take, :length] = out
    # Each word's flat position (window × max_seq_length + column), through the one rule
    # that maps windows back to words.
    positions = np.arange(count * max_seq_length).reshape(count, max_seq_length)
    flat = word_predictions(
        features["word_index"], features["sentence_index"], positions, sentence_lengths
    )
    table = logits.reshape(count * max_seq_length, -1)
    return [table[np.asarray(p, np.int64)] for p in flat]


def window_counts(sentences, tokenizer, max_seq_length: int, doc_stride: int) -> list[int]:
    """Each sentence's windows as features.convert_sentences lays them out (alignment's
    pieces and windows), counted without building them."""
    from data_pipeline.tagging.alignment import windows, word_pieces

    pieces = word_pieces(tokenizer, sentences)
    return [len(windows(sum(map(len, p)), max_seq_length - 2, doc_stride)) for p in pieces]


def tag_texts(
    run, metadata: dict, tokenizer, texts, batch_size: int = 8, where: str = ""
) -> list[dict]:
    """[{"words", "tags", "tag_scores", "entities": [{"type", "text", "start", "end",
    "score"}]}] per text: start/end are character offsets (end exclusive) of the text.
    `run`: the file's serving_default; `metadata`: its albert_metadata (labels,
    doc_stride, scheme, max_seq_length, fixed_length, max_windows: files written before
    it have request_windows.DEFAULT_MAX_WINDOWS); `tokenizer`: the Python tokenizer of the
    SentencePiece model the file carries. A request beyond the limits: ValueError
    ("`where`: ..." when given, e.g. the input lines)."""
    from albert_tf.serving.request_windows import check_python_request, check_python_windows
    from data_pipeline.tagging.data import TaggedSentence
    from data_pipeline.tagging.features import convert_sentences
    from data_pipeline.tagging.metrics import entities
    from data_pipeline.tagging.text_words import split_words

    labels, S = metadata["labels"], metadata["max_seq_length"]
    limit = int(metadata.get("max_windows", DEFAULT_MAX_WINDOWS))
    try:  # the bytes before the words are split, the windows before they are built
        check_python_request(texts, limit, S, WORDING)
        words = [split_words(t) for t in texts]
        sentences = [
            TaggedSentence(tuple(w for w, _, _ in ws), ("O",) * len(ws), i)
            for i, ws in enumerate(words)
        ]
        counts = window_counts(sentences, tokenizer, S, metadata["doc_stride"])
        check_python_windows(counts, limit, S, WORDING)
    except ValueError as e:
        raise ValueError(f"{where}: {e}" if where else str(e)) from None
    features = convert_sentences(sentences, tokenizer, S, metadata["doc_stride"], None)
    logits = word_logits(
        run, features, [len(ws) for ws in words], S, metadata["fixed_length"], batch_size
    )
    out = []
    for text, ws, lg in zip(texts, words, logits):
        ids = lg.argmax(-1) if len(ws) else np.zeros([0], np.int64)
        scores = _softmax(lg).max(-1) if len(ws) else np.zeros([0], np.float32)
        tags = [labels[i] for i in ids]
        found = []
        for kind, a, b in entities([tags], metadata.get("scheme")):
            start, end = ws[a][1], ws[b - 1][2]
            found.append(
                {
                    "type": kind,
                    "text": text[start:end],
                    "start": start,
                    "end": end,
                    "score": float(np.mean(scores[a:b])),
                }
            )
        out.append(
            {
                "words": [w for w, _, _ in ws],
                "tags": tags,
                "tag_scores": [float(s) for s in scores],
                "entities": found,
            }
        )
    return out


class TaggerRunner:
    """The runner of a token-classifier file (`model`: its tflite_predict.LiteModel): `tag`,
    and `answers` for the command line (a text a line)."""

    KIND = "token_classifier"

    def __init__(self, model):
        self.model = model
        self._tokenizer = None

    @staticmethod
    def takes_ids(metadata: dict) -> bool:
        return True

    def tag(self, texts, batch_size: int | None = None, where: str = "") -> list[dict]:
        """[{"words", "tags", "tag_scores", "entities"}] per text (`tag_texts` around the
        file's per-token logits, `batch_size` windows a call, default the file's runtime's
        `group`; its limits' errors: "`where`: ")."""
        if self._tokenizer is None:
            self._tokenizer = self.model.sentencepiece()
        texts = [self.model.text(t) for t in texts]
        return tag_texts(
            self.model.run,
            self.model.metadata,
            self._tokenizer,
            texts,
            batch_size or self.model.group,
            where,
        )

    def answers(self, chunk, source: str, where: str, batch_size: int):
        yield from self.tag([line for _, line in chunk], batch_size, where)
