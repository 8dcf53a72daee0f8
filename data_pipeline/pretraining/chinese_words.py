"""Chinese whole-word masking units (`--zh_whole_word_mask`): jieba's words over the tokens.

BERT-style tokenizers see Chinese as characters: WordPiece makes every CJK character a word
of its own, and the official SentencePiece whole-word rule starts a word at every piece
holding a character that is not an ASCII letter. Whole-word masking then masks characters.
Chinese-BERT-wwm (LTP) and brightmart/albert_zh (jieba, `get_new_segment`) segment the text
into words and mask whole words instead; the ids stay the characters' ids. The official
ALBERT code has no such option, so it is off by default.

`ChineseWords.mark(ids)` takes one encoded sentence. It spells the sentence as its tokens
do (each piece without its "##"; a SentencePiece "▁" as a space) and segments that text
with jieba. A token continues the unit of the token before it when its first character
is a Chinese character (the official `_is_chinese_char` blocks) and lies inside a jieba
word, not at the word's first character. Every other token keeps the tokenizer's rule
(`vocab_tables`: "##", "▁"), so Latin words and numbers are units as before. The n-gram
masker then treats these units as it treats words: n consecutive units, p(n) ∝ 1/n.

The mark travels with the id as bit 30 (`INSIDE_WORD`; vocabularies are far smaller), so
that every cut, truncation, swap and random segment of the instance maker keeps it with its
token without a parallel array. The instance maker removes it before anything is written;
`token_boundary` records the units, so dynamic masking (run_pretraining) masks them too.

Differences from brightmart's get_new_segment: a token joins the jieba word at its own
position (brightmart looks the characters up in the set of the sentence's words, so a word
found elsewhere in the sentence joins too), and a word of any length is one unit (brightmart
tries 3, 2 and 1 characters, so longer words become several units).

Determinism: jieba's default dictionary, with its HMM for words the dictionary lacks
(jieba's default, as brightmart). Each process builds the prefix dictionary in memory from
the package's dict.txt and never reads or writes jieba's cache file: that file sits in the
shared temporary directory, jieba trusts it without checking which dictionary made it, and
concurrent workers would race on it. The segmenter's identity (`identity()`: jieba version,
dict.txt sha256, HMM) is part of the job's fingerprint and of meta_data.json.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools

from data_pipeline.tokenization.wordpiece import CJK_RANGES

INSIDE_WORD = 1 << 30  # set on the id of a token that continues a Chinese word
TOKEN_ID_BITS = INSIDE_WORD - 1
HMM = True
INSTALL_HINT = "pip install jieba==0.42.1 (the project's zh extra: pip install -e '.[zh]')"


def load_jieba():
    """The jieba module, or a one-line ImportError saying how to install it."""
    try:
        import jieba
    except ImportError:
        raise ImportError(
            f"--zh_whole_word_mask segments Chinese with jieba, which is not installed: "
            f"{INSTALL_HINT}"
        ) from None
    return jieba


@functools.cache
def _dictionary() -> bytes:
    """The bytes of jieba's default dictionary (dict.txt inside the package)."""
    tokenizer = load_jieba().Tokenizer()
    with tokenizer.get_dict_file() as f:
        return f.read()


@functools.cache
def identity() -> dict:
    """What decides the words: {"segmenter", "version", "dictionary_sha256", "hmm"}."""
    return {
        "segmenter": "jieba",
        "version": load_jieba().__version__,
        "dictionary_sha256": hashlib.sha256(_dictionary()).hexdigest(),
        "hmm": HMM,
    }


@functools.cache
def _segmenter():
    """A jieba Tokenizer on the default dictionary, built in memory (no cache file); one per
    process (forked workers inherit their parent's)."""
    jieba = load_jieba()
    segmenter = jieba.Tokenizer()
    segmenter.FREQ, segmenter.total = segmenter.gen_pfdict(io.BytesIO(_dictionary()))
    segmenter.initialized = True
    return segmenter


def is_chinese(character: str) -> bool:
    """A CJK ideograph of the official `_is_chinese_char` blocks."""
    cp = ord(character)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


class ChineseWords:
    """Marks the tokens that continue a jieba word (module docstring).

    Args:
      tokenizer: an `AlbertTokenizer` or `WordPieceTokenizer` (its pieces spell the text).
    """

    def __init__(self, tokenizer):
        from data_pipeline.tokenization.spec import tokenizer_kind

        if tokenizer.vocab_size > INSIDE_WORD:
            raise ValueError(f"vocab_size={tokenizer.vocab_size} exceeds {INSIDE_WORD}")
        wordpiece = tokenizer_kind(tokenizer) == "wordpiece"
        # Per id (Python lists: `mark` looks ids up one by one): the text it spells, where
        # its first character is in that text, and whether that character is Chinese.
        self.texts, self.lead, self.chinese = [], [], []
        for i in range(tokenizer.vocab_size):
            piece = tokenizer.id_to_piece(i)
            text = piece.removeprefix("##") if wordpiece else piece.replace("\u2581", " ")
            word = text.lstrip(" ")
            self.texts.append(text)
            self.lead.append(len(text) - len(word))
            self.chinese.append(bool(word) and is_chinese(word[0]))
        self.segmenter = _segmenter()

    def words(self, text: str) -> list[str]:
        """jieba's words of `text` (HMM as recorded in `identity()`)."""
        return list(self.segmenter.cut(text, HMM=HMM))

    def mark(self, ids: list[int]) -> list[int]:
        """One sentence's ids with `INSIDE_WORD` set on every token that continues a
        Chinese word (module docstring); `ids` itself when none does."""
        chinese = self.chinese
        if not any(map(chinese.__getitem__, ids)):
            return ids
        texts = list(map(self.texts.__getitem__, ids))
        word_starts = set(itertools.accumulate(map(len, self.words("".join(texts))), initial=0))
        lead = self.lead
        out = list(ids)
        position = 0
        for k, i in enumerate(ids):
            if chinese[i] and position + lead[i] not in word_starts:
                out[k] = i | INSIDE_WORD
            position += len(texts[k])
        return out
