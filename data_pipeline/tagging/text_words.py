"""Raw text → the words a token classifier tags, with their character offsets: the rule the
SavedModel applies in the graph (albert_tf.serving.tasks.token_classifier.word_split) and
the on-device runner applies in Python, written once here as the reference.

The training files give one word a line (data.py): CoNLL-2003's words are whitespace
tokens, and resume_zh (like MSRA and Weibo) gives every character of a Chinese text its own
line, digits and Latin letters included ("2009年" is five lines). So:

  * the text is split at whitespace (`str.isspace`, the characters SentencePiece
    normalization treats as spaces);
  * a whitespace token holding a CJK character (BERT's `_is_chinese_char` blocks,
    data_pipeline.tokenization.wordpiece.CJK_RANGES) is cut into its characters, each a
    word, as resume_zh's sentences are; any other token is one word.

"EU rejects" → EU, rejects; "吴重阳，2009年" → 吴 重 阳 ， 2 0 0 9 年; "毕业于MIT" → 毕 业 于 M I T.
"""

from __future__ import annotations

from data_pipeline.tokenization.wordpiece import CJK_RANGES


def is_cjk(char: str) -> bool:
    cp = ord(char)
    return any(a <= cp <= b for a, b in CJK_RANGES)


def split_words(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of every word of `text` in order; start/end are character
    offsets (`text[start:end] == word`)."""
    out, position = [], 0
    for token in text.split():
        start = text.index(token, position)
        position = start + len(token)
        if any(is_cjk(c) for c in token):
            out += [(c, start + i, start + i + 1) for i, c in enumerate(token)]
        else:
            out.append((token, start, position))
    return out
