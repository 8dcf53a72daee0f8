"""Per-token predictions of the windows → one tag per word, and the CoNLL file of them.

The model predicts a label id at every position of every window [F, S]; a word's tag is
the prediction at its first piece in the one window that owns it (`word_index` of
features.py, the max-context window). Every word must receive exactly one prediction: a
word with none or two is an error, never a silent default.
"""

from __future__ import annotations

import numpy as np

from data_pipeline.io.atomic import atomic_open
from data_pipeline.tagging.features import IGNORED


def word_predictions(
    word_index: np.ndarray,
    sentence_index: np.ndarray,
    predicted: np.ndarray,
    sentence_lengths: list[int],
) -> list[list[int]]:
    """Label ids per word: [sentence][word].

    word_index [F, S], sentence_index [F]: the features' own; predicted [F, S'] label ids
    per position in feature order, S' <= S (length-bucketed batches are shorter: the cut
    positions are padding, owning no word); sentence_lengths: words per sentence."""
    word_index = np.asarray(word_index)
    predicted = np.asarray(predicted)
    if predicted.shape[0] != word_index.shape[0]:
        raise ValueError(
            f"{predicted.shape[0]} rows of predictions for {word_index.shape[0]} features"
        )
    width = predicted.shape[1]
    if (word_index[:, width:] != IGNORED).any():
        raise ValueError(f"predictions of width {width} cut off owned positions")
    out = [[None] * n for n in sentence_lengths]
    rows, cols = np.nonzero(word_index[:, :width] != IGNORED)
    for r, c in zip(rows.tolist(), cols.tolist()):
        sentence, word = int(sentence_index[r]), int(word_index[r, c])
        if out[sentence][word] is not None:
            raise ValueError(f"sentence {sentence} word {word} is predicted twice")
        out[sentence][word] = int(predicted[r, c])
    for sentence, tags in enumerate(out):
        if None in tags:
            raise ValueError(f"sentence {sentence} word {tags.index(None)} has no prediction")
    return out


def write_conll(path: str, sentences, predicted_tags: list[list[str]]) -> None:
    """`token gold predicted` a line, a blank line after each sentence (conlleval's
    input), written atomically. `sentences`: `data.TaggedSentence`s (tokens, gold tags);
    a token holding a space, tab or newline (possible in JSON lines) is a ValueError."""
    if len(sentences) != len(predicted_tags):
        raise ValueError(f"{len(predicted_tags)} predictions for {len(sentences)} sentences")
    with atomic_open(path) as f:
        for number, (sentence, tags) in enumerate(zip(sentences, predicted_tags)):
            if len(tags) != len(sentence.tokens):
                raise ValueError(
                    f"sentence {number}: {len(tags)} predicted tags for "
                    f"{len(sentence.tokens)} tokens"
                )
            for token, gold, tag in zip(sentence.tokens, sentence.tags, tags):
                if not token or any(c in token for c in " \t\n"):
                    raise ValueError(f"sentence {number}: token {token!r} cannot be a CoNLL column")
                f.write(f"{token} {gold} {tag}\n")
            f.write("\n")
