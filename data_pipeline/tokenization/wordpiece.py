"""WordPiece tokenization with BERT's semantics (the official Chinese ALBERTs' `vocab.txt`):
one owner, in Python and in-graph, with identical ids.

The official `FullTokenizer(vocab_file, do_lower_case)` (used when no SentencePiece model is
given) runs BERT's basic tokenizer, then WordPiece:
  1. clean: delete NUL, U+FFFD and control characters (Unicode category C*, except tab,
     newline and carriage return); every whitespace character becomes a space;
  2. a space on each side of every CJK ideograph (the CJK Unified Ideographs blocks and
     extensions A-E, the compatibility ideographs), so each is a word of its own;
  3. split on whitespace; under `do_lower_case`, lowercase each word (Python's `str.lower`:
     a word-final capital sigma becomes "ς"), NFD, drop nonspacing marks (Mn: accents);
  4. every punctuation character (ASCII symbols and Unicode P*) is a word of its own;
  5. WordPiece per word: greedy longest-match-first pieces, continuations prefixed `##`;
     a word with no segmentation, or longer than 100 characters, is one `[UNK]`.
Text that spells a special token ("[CLS]") is ordinary text here, as in the official code.

`WordPieceTokenizer` runs this with Hugging Face `tokenizers` (Rust; its BertNormalizer,
BertPreTokenizer and WordPiece model implement these steps, plus one regex rewrite for
the final sigma) and has `AlbertTokenizer`'s interface, so the data tools and runners
take either.
`GraphWordPieceTokenizer` is the same in TensorFlow ops for tf.data and SavedModels.
tensorflow-text's `FastBertTokenizer` is not used whole: its normalizer applies NFKC
(full-width "１" → "1", "ﬁ" → "fi", common in Chinese text) and turns control characters
into spaces ("a\\x00b" → "a" "b", officially "ab"), so ids would differ from training.
Steps 1-4 are regex rewrites whose character classes come from Python's own Unicode tables
(as in `data_pipeline.tokenization.sentencepiece_tokenizer`), and step 5 is tensorflow-text's
`FastWordpieceTokenizer` on the pre-split words (same greedy longest-match result).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import sys
import unicodedata

from data_pipeline.io import filesystem
from data_pipeline.tokenization.graph_call import traced_once

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CONTINUATION = "##"
MAX_WORD_CHARS = 100  # the official WordpieceTokenizer's max_input_chars_per_word

# The official `_is_chinese_char` blocks (code point ranges, inclusive).
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_UNUSED = re.compile(r"\[unused\d+\]")
# A capital sigma after a cased letter (case-ignorable characters between) and not before
# one: Unicode's Final_Sigma, as Python's str.lower applies it (Oniguruma syntax).
_FINAL_SIGMA = r"(?<=\p{Cased}\p{Case_Ignorable}*)\u03a3(?!\p{Case_Ignorable}*\p{Cased})"


def read_vocab(vocab_file: str) -> list[str]:
    """The tokens of a `vocab.txt` (one per line, id = line number, surrounding whitespace
    stripped as the official `load_vocab` does), checked: one-line errors naming the file."""
    if not filesystem.isfile(vocab_file):
        raise FileNotFoundError(f"WordPiece vocabulary not found: {vocab_file}")
    try:
        text = filesystem.read_bytes(vocab_file).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{vocab_file}: not a WordPiece vocab.txt (not UTF-8 text: {e})") from None
    tokens = [line.strip() for line in text.split("\n")]
    if tokens and tokens[-1] == "":  # the final newline
        tokens.pop()
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise ValueError(
            f"{vocab_file}: not a BERT/ALBERT WordPiece vocab.txt, it lacks the tokens "
            f"{missing} (needed: {list(SPECIAL_TOKENS)})"
        )
    seen = set()
    for i, t in enumerate(tokens):
        if t in seen:
            raise ValueError(
                f"{vocab_file}: token {t!r} appears twice (second time on line {i + 1})"
            )
        seen.add(t)
    return tokens


class WordPieceTokenizer:
    """A WordPiece `vocab.txt` plus BERT's basic tokenization (module docstring).

    Args:
      vocab_file: one token per line (id = line number) holding `[PAD]`, `[UNK]`, `[CLS]`,
        `[SEP]`, `[MASK]` (any ids; the official Chinese vocab has 0, 100-103).
      do_lower_case: lowercase and strip accents (the official Chinese models: True).
    """

    keep_accents = False  # (AlbertTokenizer's interface; accents follow do_lower_case here)

    def __init__(self, vocab_file: str, do_lower_case: bool = True):
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        self.vocab = read_vocab(vocab_file)
        self.token_to_id = {t: i for i, t in enumerate(self.vocab)}
        ids = {t: self.token_to_id[t] for t in SPECIAL_TOKENS}
        self.pad_id, self.unk_id = ids["[PAD]"], ids["[UNK]"]
        self.cls_id, self.sep_id, self.mask_id = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"]
        self.backend = _hf_tokenizer(self.token_to_id, do_lower_case)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @functools.cached_property
    def checksum(self) -> str:
        """sha256 of the vocab file: recorded with data so a mismatch can be detected."""
        return hashlib.sha256(filesystem.read_bytes(self.vocab_file)).hexdigest()

    def normalize(self, text: str) -> str:
        """Steps 1-3 of the module docstring (clean, CJK spacing, case and accents)."""
        return self.backend.normalizer.normalize_str(text)

    def tokenize(self, text: str) -> list[str]:
        return self.backend.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str) -> list[int]:
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """`[encode(t) for t in texts]`, fast: for bulk data (pretraining, task data).

        Each text is normalized whole (the backend's normalizer; for ASCII text a cheaper
        one giving the same string), then cut at spaces into chunks; each distinct chunk
        is pre-tokenized and WordPiece-encoded once (BertPreTokenizer + WordPiece, one
        Rust batch over both cores) and cached. Equal to `encode`: the pre-tokenizer
        splits at every space anyway, so cutting there first changes nothing, and
        normalizing happens once in both. Chinese text is one chunk per character, where
        per-word work inside `tokenizers` would dominate otherwise.
        """
        cache = self._chunk_cache
        if len(cache) > 2_000_000:  # bounded memory on endless corpora
            cache.clear()
        normalize = self._normalize_shortcut
        # (after normalization every whitespace character is a space, so `split()` cuts
        # exactly at spaces, and drops the empty chunks around each CJK character)
        chunked = [normalize(t).split() for t in texts]
        new = set()
        for chunks in chunked:
            new.update(chunks)
        new = list(new.difference(cache))
        if new:
            encodings = self._words.encode_batch(new, add_special_tokens=False)
            cache.update(zip(new, (e.ids for e in encodings)))
        lookup = cache.__getitem__
        return [list(itertools.chain.from_iterable(map(lookup, chunks))) for chunks in chunked]

    @functools.cached_property
    def _normalize_shortcut(self):
        """`normalize` as `str.translate` with a table of the normalizer's own result for
        each character alone (`_PerCharacter`), a fraction of the cost: normalization is
        per character except around a capital sigma and where NFD reorders marks, and
        texts holding such characters go through the normalizer whole."""
        normalize = self.backend.normalizer.normalize_str
        table = _PerCharacter(normalize, self.do_lower_case)

        def shortcut(text: str) -> str:
            out = text.translate(table)
            return normalize(text) if "\x00" in out else out

        return shortcut

    @functools.cached_property
    def _chunk_cache(self) -> dict:
        return {"": []}

    @functools.cached_property
    def _words(self):
        """The backend without its normalizer: for text normalized already."""
        words = _hf_tokenizer(self.token_to_id, self.do_lower_case)
        words.normalizer = None
        return words

    def id_to_piece(self, token_id: int) -> str:
        return self.vocab[token_id]

    def vocab_tables(self):
        """Per-id numpy tables for masking, as `AlbertTokenizer.vocab_tables`.

        Returns (word_start [V] bool, special [V] bool, ordinary [K] int32):
          word_start: the piece begins a word (no `##`), the whole-word rule of the official
            create_pretraining_data for WordPiece;
          special: `[PAD]` `[UNK]` `[CLS]` `[SEP]` `[MASK]`, never random replacements;
          ordinary: ids a random replacement may draw (not special, not `[unusedN]`).
        """
        import numpy as np

        word_start = np.array([not t.startswith(CONTINUATION) for t in self.vocab], bool)
        special = np.zeros(self.vocab_size, bool)
        special[[self.token_to_id[t] for t in SPECIAL_TOKENS]] = True
        unused = np.array([bool(_UNUSED.fullmatch(t)) for t in self.vocab], bool)
        ordinary = np.flatnonzero(~special & ~unused).astype(np.int32)
        return word_start, special, ordinary

    def graph_tokenizer(self) -> GraphWordPieceTokenizer:
        return GraphWordPieceTokenizer(self.vocab, self.do_lower_case, self.unk_id)


class _PerCharacter(dict):
    """`str.translate` table: code point → `normalize` of that character alone, filled on
    first sight. Characters whose result depends on their neighbours map to NUL (which
    normalized text never holds: cleaning deletes it), telling the caller to normalize
    the text whole: a capital sigma (final or not, by context) and, under lowercasing,
    characters whose NFD holds a combining character that is not a nonspacing mark (NFD
    may reorder it; nonspacing marks are dropped wherever they go)."""

    def __init__(self, normalize, do_lower_case: bool):
        super().__init__()
        self.normalize = normalize
        self.do_lower_case = do_lower_case

    def __missing__(self, cp: int) -> str:
        c = chr(cp)
        context = self.do_lower_case and (
            c == "\u03a3"
            or any(
                unicodedata.combining(x) and unicodedata.category(x) != "Mn"
                for x in unicodedata.normalize("NFD", c.lower())
            )
        )
        value = "\x00" if context else self.normalize(c)
        self[cp] = value
        return value


def _hf_tokenizer(token_to_id: dict, do_lower_case: bool):
    """A Hugging Face `tokenizers.Tokenizer` configured as BERT's FullTokenizer. No added
    or special tokens: "[CLS]" in text is split like any text, as officially."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tokenizer = Tokenizer(
        models.WordPiece(
            token_to_id,
            unk_token="[UNK]",
            max_input_chars_per_word=MAX_WORD_CHARS,
            continuing_subword_prefix=CONTINUATION,
        )
    )

    def bert(clean=False, cjk=False, lower=False):
        return normalizers.BertNormalizer(
            clean_text=clean, handle_chinese_chars=cjk, strip_accents=lower, lowercase=lower
        )

    if do_lower_case:
        # Python's str.lower (the official code's) lowercases a capital sigma that ends a
        # word to "ς" (Unicode's Final_Sigma condition), `tokenizers` always to "σ": that
        # case is rewritten first, then accents are stripped and the rest lowercased.
        # CJK characters are spaced last, on the shorter text (a quarter less time on
        # Chinese): the same result, since lowercasing and NFD never turn a CJK character
        # into another kind or back (tested on every code point) and spaces and CJK
        # characters are alike for the sigma rule (neither cased nor case-ignorable).
        final_sigma = normalizers.Replace(Regex(_FINAL_SIGMA), "\u03c2")
        tokenizer.normalizer = normalizers.Sequence(
            [bert(clean=True), final_sigma, bert(lower=True), bert(cjk=True)]
        )
    else:
        tokenizer.normalizer = bert(clean=True, cjk=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


# --- in-graph -----------------------------------------------------------------------------


def _ranges_class(ranges) -> str:
    parts = [f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges]
    return "[" + "".join(parts) + "]"


def _punctuation(c: str) -> bool:
    """The official `_is_punctuation`: ASCII non-alphanumeric symbols, or Unicode P*."""
    cp = ord(c)
    return (
        33 <= cp <= 47
        or 58 <= cp <= 64
        or 91 <= cp <= 96
        or 123 <= cp <= 126
        or unicodedata.category(c).startswith("P")
    )


@functools.cache
def character_classes() -> dict[str, str]:
    """RE2 classes of the basic tokenizer, from Python's Unicode tables in one pass:
    deleted (cleaning), space (whitespace left after cleaning: Python's `str.split`
    separators), punctuation, nonspacing marks (Mn), and cjk."""
    ranges = {name: [] for name in ("deleted", "space", "punctuation", "mark")}

    def add(name, cp):
        r = ranges[name]
        if r and r[-1][1] == cp - 1:
            r[-1] = (r[-1][0], cp)
        else:
            r.append((cp, cp))

    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        category = unicodedata.category(c)
        deleted = cp == 0 or cp == 0xFFFD or (category[0] == "C" and c not in "\t\n\r")
        if deleted:
            add("deleted", cp)
        elif c.isspace():
            add("space", cp)
        if category[0] == "P" or (cp < 127 and _punctuation(c)):
            add("punctuation", cp)
        if category == "Mn":
            add("mark", cp)
    classes = {name: _ranges_class(r) for name, r in ranges.items()}
    classes["cjk"] = _ranges_class(sorted(CJK_RANGES))
    return classes


class GraphWordPieceTokenizer:
    """`WordPieceTokenizer.encode` as TensorFlow ops (module docstring), for tf.data
    pipelines and SavedModels that take raw strings.

    Call: string tensor [batch] → int32 RaggedTensor [batch, (pieces)], equal to
    `WordPieceTokenizer.encode` on each string (tested on real corpora). The vocabulary
    is held in the graph (tensorflow-text's FastWordpiece model, a tracked resource).
    """

    def __init__(self, vocab: list[str], do_lower_case: bool, unk_id: int):
        import tensorflow as tf
        import tensorflow_text as tf_text

        self.do_lower_case = do_lower_case
        self.unk_id = unk_id
        self.classes = character_classes()
        # Words are pre-split here; max_bytes_per_word only has to let every word of up
        # to MAX_WORD_CHARS characters through (≤ 4 bytes each): longer words become [UNK]
        # by their character count below, as officially.
        self.wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=vocab,
            suffix_indicator=CONTINUATION,
            max_bytes_per_word=4 * MAX_WORD_CHARS,
            token_out_type=tf.int64,
            unknown_token="[UNK]",
            no_pretokenization=True,
        )
        self._encode = traced_once(self._encode_ops)

    def normalize(self, text):
        """string [B] → string [B]: steps 1-3, words separated by single spaces."""
        import tensorflow as tf
        import tensorflow_text as tf_text

        c = self.classes
        text = tf.strings.regex_replace(text, c["deleted"], "")
        text = tf.strings.regex_replace(text, f"({c['cjk']})", r" \1 ")
        text = tf.strings.regex_replace(text, c["space"] + "+", " ")
        if self.do_lower_case:
            text = tf.strings.lower(text, encoding="utf-8")
            text = tf_text.normalize_utf8(text, "NFD")
            text = tf.strings.regex_replace(text, c["mark"], "")
        return text

    def words(self, text):
        """string [B] → string RaggedTensor [B, (W)]: steps 1-4."""
        import tensorflow_text as tf_text

        punctuation = self.classes["punctuation"]
        return tf_text.regex_split(
            self.normalize(text), f" +|{punctuation}", keep_delim_regex_pattern=punctuation
        )

    def __call__(self, text):
        return self._encode(text)

    def _encode_ops(self, text):
        import tensorflow as tf

        words = self.words(text)
        flat = words.flat_values  # [N]
        too_long = tf.strings.length(flat, unit="UTF8_CHAR") > MAX_WORD_CHARS
        # "[UNK]" is in the vocabulary, so as a word it is exactly one piece: [UNK].
        flat = tf.where(too_long, "[UNK]", flat)
        pieces = self.wordpiece.tokenize(flat)  # [N, (K)]
        return tf.cast(words.with_flat_values(pieces).merge_dims(1, 2), tf.int32)
