"""WordPiece tokens with the characters of the original text they cover, for span QA
(CMRC 2018 and any SQuAD-format file read with a `vocab.txt`): in Python for the runner,
in TensorFlow ops for the SQuAD SavedModel, with the same offsets.

A token covers original characters [start, end): the characters whose normalized form
(BERT's basic tokenizer, `data_pipeline.tokenization.wordpiece`: control characters deleted, CJK
characters spaced, lowercase, NFD, accents dropped) holds the token's first and last
normalized characters. So offsets point into the text as given, however normalization
changed its length: "Café" → "ca" [0, 2) "##fe" [2, 4) ("fé"); "a\\x00b" → "ab" [0, 3);
"İstanbul" (lowercased to two characters) → "ist" [0, 3). A character deleted by
normalization between two tokens belongs to neither (a decomposed accent after the last
letter of a token: "e\\u0301" → "e" [0, 1)); `[UNK]` covers its whole word.

How this differs from the official squad_utils: for a WordPiece vocabulary the official
code splits the context at whitespace into "doc tokens" and maps answers to those; Chinese
text has no spaces, so a whole sentence would be one doc token and an answer inside it
could not be located. Here answers are mapped through the basic tokenizer at the
character level (each CJK character its own word), as for SentencePiece
(`data_pipeline.squad.offsets.OffsetTokenizer`): the ids are `WordPieceTokenizer.encode`'s,
and the answer text is the original context's characters between the chosen tokens'
offsets.

`WordPieceOffsetTokenizer.encode` (Python) takes the offsets Hugging Face `tokenizers`
reports: its normalizers keep an alignment of every normalized character with the
original one, so `Encoding.offsets` are character offsets into the original string
(tested with accents, case changes that change lengths, deleted characters, CJK).
`GraphWordPieceOffsets` computes the same offsets in the graph, in UTF-8 bytes (what
`tf.strings.substr` takes): tensorflow-text's offsets are byte offsets into the string it
tokenized, here the normalized word, so each normalized byte is mapped back to the
original character it came from (`GraphWordPieceOffsets`).
"""

from __future__ import annotations


class WordPieceOffsetTokenizer:
    """`WordPieceTokenizer` ids plus, for each token, the original characters it covers.

    The interface of `data_pipeline.squad.offsets.OffsetTokenizer`: `encode(text)` →
    (ids, token start chars, token end chars), three lists of one entry per token,
    offsets into `text` (Python string indices).
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text: str) -> tuple[list[int], list[int], list[int]]:
        encoding = self.tokenizer.backend.encode(text, add_special_tokens=False)
        starts = [s for s, _ in encoding.offsets]
        ends = [e for _, e in encoding.offsets]
        return list(encoding.ids), starts, ends


class GraphWordPieceOffsets:
    """`WordPieceOffsetTokenizer.encode` as TensorFlow ops, in UTF-8 byte offsets.

    Call: string [B] (valid UTF-8) → (ids, start bytes, end bytes): int32 RaggedTensors
    [B, (T)]; ids equal `GraphWordPieceTokenizer`'s (and so the Python tokenizer's),
    token t covers bytes [start, end) of its string.

    The steps of the basic tokenizer, each keeping offsets:
      1. words of the original text: split at whitespace (dropped) and around each CJK
         character (kept);
      2. each word normalized whole (deleted characters, case, accents: `normalize`), and
         each of its characters alone, giving how many normalized bytes every original
         character became (a deleted character or a dropped accent: 0);
      3. the normalized word split at punctuation, each part cut into pieces by
         tensorflow-text's FastWordpieceTokenizer with byte offsets into the part (a part
         over 100 characters is one `[UNK]`);
      4. a piece's first and last normalized bytes are mapped to the original characters
         that produced them (a table of one entry per normalized byte).
    Where the word normalized whole differs in length from its characters normalized one
    by one (normalization depending on neighbours: NFD reordering marks), every piece of
    the word covers the whole word.

    Args:
      graph_tokenizer: a `data_pipeline.tokenization.wordpiece.GraphWordPieceTokenizer`; its
        FastWordpiece resource is the one used here (nothing new to save).
    """

    def __init__(self, graph_tokenizer):
        from data_pipeline.tokenization.wordpiece import MAX_WORD_CHARS

        self.tokenizer = graph_tokenizer
        self.classes = graph_tokenizer.classes
        self.max_word_chars = MAX_WORD_CHARS

    def _normalize_words(self, words):
        """string [N] (no whitespace) → normalized, without the spaces the tokenizer puts
        around CJK characters (a CJK character is a word of its own here)."""
        import tensorflow as tf

        return tf.strings.regex_replace(self.tokenizer.normalize(words), " ", "")

    def __call__(self, text):
        import tensorflow as tf
        import tensorflow_text as tf_text

        from data_pipeline.squad.graph_words import word_substrings

        c = self.classes
        # 1. Words: regex_split_with_offsets stops at a NUL byte, so a copy whose NULs are
        # \x01 (one byte; both are deleted characters, neither a delimiter) is split, and
        # the words are cut out of the text itself.
        _, w_begin, w_end = tf_text.regex_split_with_offsets(
            tf.strings.regex_replace(text, "\\x00", "\x01"),
            f"{c['space']}+|{c['cjk']}",
            keep_delim_regex_pattern=c["cjk"],
        )  # [B, (W)] int64
        w_begin = tf.cast(w_begin, tf.int32)
        w_end = tf.cast(w_end, tf.int32)
        rows = w_begin.value_rowids()
        words = word_substrings(text, rows, w_begin.flat_values, w_end.flat_values)  # [N]
        # 2. The word normalized whole (its pieces' ids) and character by character (the
        # normalized bytes of each original character).
        normalized = self._normalize_words(words)  # [N]
        chars, char_begin = tf.strings.unicode_split_with_offsets(words, "UTF-8")  # [N, (C)]
        char_begin = tf.cast(char_begin, tf.int32)
        word_bytes = tf.strings.length(words)  # [N]
        char_end = tf.concat(
            [char_begin[:, 1:], tf.RaggedTensor.from_tensor(word_bytes[:, None])], axis=1
        )
        char_norm = tf.strings.length(self._normalize_words(chars.flat_values))  # [Cn]
        per_word = tf.math.unsorted_segment_sum(char_norm, chars.value_rowids(), tf.size(words))
        exact = tf.equal(per_word, tf.strings.length(normalized))  # [N]
        # Normalized byte → the original character's byte span in its word: one table
        # entry per normalized byte, words one after the other (`base`: a word's first).
        owner_begin = tf.repeat(char_begin.flat_values, char_norm)
        owner_end = tf.repeat(char_end.flat_values, char_norm)
        base = tf.cumsum(per_word, exclusive=True)  # [N]
        # 3. Punctuation split of the normalized word, then WordPiece with byte offsets.
        punctuation = c["punctuation"]
        parts, p_begin, _ = tf_text.regex_split_with_offsets(
            normalized, punctuation, keep_delim_regex_pattern=punctuation
        )  # [N, (S)]
        flat_parts = parts.flat_values
        part_bytes = tf.strings.length(flat_parts)
        too_long = tf.strings.length(flat_parts, unit="UTF8_CHAR") > self.max_word_chars
        # ("[UNK]" is in the vocabulary: as a word it is exactly one piece, [UNK].)
        pieces, s, e = self.tokenizer.wordpiece.tokenize_with_offsets(
            tf.where(too_long, "[UNK]", flat_parts)
        )  # [M, (P)]
        part_of_piece = pieces.value_rowids()
        long_piece = tf.gather(too_long, part_of_piece)
        s = tf.where(long_piece, 0, tf.cast(s.flat_values, tf.int32))
        e = tf.cast(e.flat_values, tf.int32)
        e = tf.where(long_piece, tf.gather(part_bytes, part_of_piece), e)
        # 4. Normalized bytes of the word → original bytes of the text.
        word_of_part = parts.value_rowids()
        word_of_piece = tf.gather(word_of_part, part_of_piece)
        at = tf.gather(tf.cast(p_begin.flat_values, tf.int32), part_of_piece)
        first = tf.gather(base, word_of_piece) + at + s
        last = tf.gather(base, word_of_piece) + at + e - 1
        exact_piece = tf.gather(exact, word_of_piece)
        table_size = tf.maximum(tf.size(owner_begin), 1)
        safe = lambda i: tf.clip_by_value(i, 0, table_size - 1)  # noqa: E731
        owner_begin = tf.pad(owner_begin, [[0, 1]])
        owner_end = tf.pad(owner_end, [[0, 1]])
        start = tf.where(exact_piece, tf.gather(owner_begin, safe(first)), 0)
        end = tf.where(
            exact_piece, tf.gather(owner_end, safe(last)), tf.gather(word_bytes, word_of_piece)
        )
        offset = tf.gather(w_begin.flat_values, word_of_piece)
        # [M, (P)] → [N, (S), (P)] → [B, (W), (S), (P)] → [B, (T)]
        nested = lambda x: w_begin.with_flat_values(  # noqa: E731
            parts.with_flat_values(pieces.with_flat_values(x))
        ).merge_dims(1, 3)
        ids = tf.cast(pieces.flat_values, tf.int32)
        return nested(ids), nested(start + offset), nested(end + offset)
