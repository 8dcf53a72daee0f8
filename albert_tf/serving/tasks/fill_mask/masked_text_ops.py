"""Fill-mask's text side in the graph: `data_pipeline.tokenization.masked_text`'s rule as
TensorFlow ops (SentencePiece and WordPiece), and the filled-in texts.

The text is cut at each literal "[MASK]" (`tf.strings.split`, as Python's str.split); each
fragment is tokenized and the mask id goes between them. A fragment glued to the mask
before it (no whitespace first) continues the masked piece's word; what that means is the
tokenizer's (`SentencePieceGlued`, `WordPieceGlued`):
  SentencePiece: the normalized first word is encoded by the SentencePiece model with
    `add_dummy_prefix` off (no "▁"), the rest as usual. (The "<digit>," split of such a
    glued first word re-encodes with the same prefix-less model; the Python rule uses the
    tokenizer's table: they can differ only for a piece ending in "<digit>," glued to a
    mask.)
  WordPiece: the normalized first word (up to a space or punctuation) is split greedily
    over the "##" continuation pieces only ("[UNK]" when none fits), by a second
    FastWordpiece model whose word-start pieces are the continuations without "##"; a
    fragment starting with punctuation or a CJK character (spaced by normalization) is
    encoded as usual. "[MASK]" is a real WordPiece token, but BERT's tokenizer splits the
    text "[MASK]" into "[", "mask", "]", so the cut comes first here too.
"""

from __future__ import annotations

import functools

import tensorflow as tf

from data_pipeline.tokenization.masked_text import MASK_TOKEN
from data_pipeline.tokenization.sentencepiece_tokenizer import SPIECE_UNDERLINE, _char_class
from data_pipeline.tokenization.wordpiece import CONTINUATION, MAX_WORD_CHARS, character_classes

# What Python's str.isspace() calls whitespace (the rule's "glued" test), for RE2.
_SPACE = r"[\t-\r\x1c-\x20\x{85}\p{Z}]"


class GraphMaskedText:
    """text [B] (valid UTF-8) with "[MASK]"s → model inputs and the mask positions.

    tokenizer: the model's graph tokenizer (`GraphTokenizer` or `GraphWordPieceTokenizer`);
    glued: string [N] → int32 RaggedTensor [N, (.)], the ids of fragments that continue the
    masked piece's word (`SentencePieceGlued`, `WordPieceGlued`); ids: cls_id, sep_id,
    mask_id.
    """

    def __init__(self, tokenizer, glued, cls_id, sep_id, mask_id, max_seq_length):
        self.tokenizer, self.glued = tokenizer, glued
        self.cls_id, self.sep_id, self.mask_id = cls_id, sep_id, mask_id
        self.max_seq_length = max_seq_length

    def fragments(self, text):
        """string [B] → string RaggedTensor [B, (masks + 1)]; InvalidArgumentError when a
        text has no "[MASK]"."""
        fragments = tf.strings.split(text, sep=MASK_TOKEN)
        masks = fragments.row_lengths() - 1
        check = tf.debugging.Assert(
            tf.reduce_all(masks > 0),
            [f"no {MASK_TOKEN} in the text to fill:", tf.boolean_mask(text, masks <= 0)[:1]],
        )
        with tf.control_dependencies([check]):
            return tf.identity(fragments)

    def encode(self, fragments):
        """Fragments [B, (F)] → input_ids, input_mask int32 [B, L] (`[CLS] ... [SEP]`, the
        mask id between fragments; L the longest row), mask_positions int32 [B, M] (0
        beyond a row's masks), mask_count int32 [B]. InvalidArgumentError when a text
        takes more than max_seq_length tokens (no truncation: a cut could drop a mask)."""
        flat = fragments.flat_values  # [N]
        index = tf.ragged.range(fragments.row_lengths()).flat_values  # j within its text
        last = tf.equal(index, tf.gather(fragments.row_lengths() - 1, fragments.value_rowids()))
        glued = (index > 0) & (flat != "") & ~tf.strings.regex_full_match(flat, f"(?s){_SPACE}.*")
        normal = self.tokenizer(flat)  # [N, (.)]
        inside = self.glued(flat)
        n = tf.shape(flat)[0]
        chosen = tf.gather(
            tf.concat([normal, inside], axis=0), tf.where(glued, tf.range(n) + n, tf.range(n))
        )
        mask = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(~last, tf.int32))], self.mask_id),
            tf.cast(~last, tf.int64),
        )
        pieces = tf.concat([chosen, mask], axis=1)  # each fragment, then its mask
        ids = tf.RaggedTensor.from_row_lengths(pieces, fragments.row_lengths()).merge_dims(1, 2)
        rows = ids.nrows()
        ones = tf.ones([rows], tf.int64)
        ids = tf.concat(
            [
                tf.RaggedTensor.from_row_lengths(tf.fill([rows], self.cls_id), ones),
                ids,
                tf.RaggedTensor.from_row_lengths(tf.fill([rows], self.sep_id), ones),
            ],
            axis=1,
        )
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        check = tf.debugging.Assert(
            tf.reduce_all(lengths <= self.max_seq_length),
            [
                f"a text takes more tokens with [CLS] and [SEP] than max_seq_length="
                f"{self.max_seq_length}:",
                tf.reduce_max(lengths),
            ],
        )
        with tf.control_dependencies([check]):
            input_ids = ids.to_tensor(0)
        positions_all = tf.range(tf.shape(input_ids)[1])[None, :]
        input_mask = tf.cast(positions_all < lengths[:, None], tf.int32)
        where = tf.where(tf.equal(input_ids, self.mask_id))  # [K, 2], row-major
        positions = tf.RaggedTensor.from_value_rowids(
            tf.cast(where[:, 1], tf.int32), where[:, 0], nrows=tf.cast(rows, tf.int64)
        )
        mask_count = tf.cast(positions.row_lengths(), tf.int32)
        return input_ids, input_mask, positions.to_tensor(0), mask_count


class SentencePieceGlued(tf.Module):
    """Glued fragments, SentencePiece: string [N] → int32 RaggedTensor [N, (.)], the
    normalized first word (up to the first space) by `inside` (the model's GraphTokenizer
    with `add_dummy_prefix` off: `masked_text.no_prefix_model_proto`), the rest by
    `tokenizer`."""

    def __init__(self, tokenizer, inside):
        super().__init__()
        self.tokenizer, self.inside = tokenizer, inside
        self.inside_model = inside.sp  # tracked: its model buffer is saved

    def __call__(self, flat):
        normalized = self.tokenizer.normalize(flat)
        head = tf.strings.regex_replace(normalized, "(?s) .*", "")
        rest = tf.strings.regex_replace(normalized, "^[^ ]* ?", "", replace_global=False)
        return tf.concat([self.inside(head), self.tokenizer(rest)], axis=1)


class WordPieceGlued(tf.Module):
    """Glued fragments, WordPiece: string [N] → int32 RaggedTensor [N, (.)], as
    `masked_text._glued_fragment`: the normalized text's first word (before the first
    space or punctuation) split greedily over the "##" pieces only, then the rest as
    usual; a fragment whose normalized text starts with a space (a CJK character) or
    punctuation, or is empty, as usual.

    tokenizer: the model's `GraphWordPieceTokenizer`; python: its `WordPieceTokenizer`
    (the vocabulary). The inside model: every continuation "##x" both as a word start "x"
    and as itself, each mapped back to the id of "##x" (`inside_ids`), so FastWordpiece's
    greedy longest match over it is the match over continuations alone."""

    def __init__(self, tokenizer, python):
        import tensorflow_text as tf_text

        super().__init__()
        self.tokenizer = tokenizer
        starts, continuations, start_ids, continuation_ids = [], [], [], []
        for i, token in enumerate(python.vocab):
            body = token[len(CONTINUATION) :]
            if not token.startswith(CONTINUATION) or not body or body[0] in "#[":
                continue  # (bodies starting "#" or "[" hold punctuation: never inside a word)
            starts.append(body)
            start_ids.append(i)
            continuations.append(token)
            continuation_ids.append(i)
        vocab = ["[UNK]"] + starts + continuations
        self.inside_ids = tf.constant([python.unk_id] + start_ids + continuation_ids, tf.int32)
        self.inside = tf_text.FastWordpieceTokenizer(
            vocab=vocab,
            suffix_indicator=CONTINUATION,
            max_bytes_per_word=4 * MAX_WORD_CHARS,
            token_out_type=tf.int64,
            unknown_token="[UNK]",
            no_pretokenization=True,
        )
        punctuation = character_classes()["punctuation"][1:-1]
        self.word_end = f"(?s)[ {punctuation}].*"

    def __call__(self, flat):
        normalized = self.tokenizer.normalize(flat)
        head = tf.strings.regex_replace(normalized, self.word_end, "", replace_global=False)
        head_bytes = tf.strings.length(head)
        rest = tf.strings.substr(normalized, head_bytes, tf.strings.length(normalized) - head_bytes)
        too_long = tf.strings.length(head, unit="UTF8_CHAR") > MAX_WORD_CHARS
        pieces = self.inside.tokenize(tf.where(too_long, "[UNK]", head))  # [N, (K)]
        inside = tf.concat(
            [
                pieces.with_flat_values(tf.gather(self.inside_ids, pieces.flat_values)),
                self.tokenizer(rest),
            ],
            axis=1,
        )
        n = tf.shape(flat)[0]
        chosen = tf.where(head != "", tf.range(n) + n, tf.range(n))
        return tf.gather(tf.concat([self.tokenizer(flat), inside], axis=0), chosen)


@functools.cache
def _alnum_class() -> str:
    """What Python's str.isalnum() accepts, for RE2 (the filled text's spacing rule)."""
    return _char_class(str.isalnum)


def mask_offsets(text, fragments):
    """Byte offset of each "[MASK]" in its text: int32 RaggedTensor [B, (M)]."""
    sizes = tf.strings.length(fragments.flat_values)  # bytes
    ends = tf.math.cumsum(sizes)  # [N]
    starts = tf.gather(tf.concat([[0], ends], 0), fragments.row_starts())  # [B]
    index = tf.ragged.range(fragments.row_lengths()).flat_values
    row = fragments.value_rowids()
    within = ends - tf.gather(starts, row) + tf.cast(index, tf.int32) * len(MASK_TOKEN)
    last = tf.equal(index, tf.gather(fragments.row_lengths() - 1, row))
    return tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(within, ~last), tf.boolean_mask(row, ~last), nrows=fragments.nrows()
    )


def filled_texts(text, offsets, tokens, wordpiece: bool = False):
    """Each candidate piece written into its text at its mask, the other masks kept.

    text [B]; offsets int32 RaggedTensor [B, (M)] (`mask_offsets`); tokens string [B, M, k]
    (the pieces). → string [B, M, k] ("" beyond a row's masks), as
    `albert_tf.training.fill_mask.MaskFiller` writes it: SentencePiece, a "▁" is a space,
    none at a word start (the text before the mask empty or ending in whitespace);
    `wordpiece`, a "##" is dropped, and a word-start piece beginning with a letter or digit
    after a letter or digit gets a space before it."""
    k = tf.shape(tokens)[2]
    starts = offsets.flat_values  # [K]
    row = offsets.value_rowids()
    width = tf.shape(tokens)[1]
    slot = tf.cast(tf.ragged.range(offsets.row_lengths()).flat_values, tf.int32)
    source = tf.gather(text, row)
    before = tf.strings.substr(source, tf.zeros_like(starts), starts)
    after_start = starts + len(MASK_TOKEN)
    after = tf.strings.substr(source, after_start, tf.strings.length(source) - after_start)
    pieces = tf.gather_nd(tokens, tf.stack([tf.cast(row, tf.int32), slot], 1))  # [K, k]
    if wordpiece:
        alnum = _alnum_class()
        continuation = tf.strings.regex_full_match(pieces, f"(?s){CONTINUATION}.*")
        glued = tf.strings.regex_full_match(before, f"(?s).*{alnum}")[:, None] & (
            tf.strings.regex_full_match(pieces, f"(?s){alnum}.*")
        )
        spaced = tf.where(glued, " " + pieces, pieces)
        body = tf.strings.regex_replace(pieces, f"^{CONTINUATION}", "", replace_global=False)
        surface = tf.where(continuation, body, spaced)
    else:
        surface = tf.strings.regex_replace(pieces, SPIECE_UNDERLINE, " ")  # [K, k]
        word_start = (before == "") | tf.strings.regex_full_match(before, f"(?s).*{_SPACE}")
        stripped = tf.strings.regex_replace(surface, "^ +", "")
        surface = tf.where(word_start[:, None], stripped, surface)
    filled = before[:, None] + surface + after[:, None]  # [K, k]
    ragged = tf.RaggedTensor.from_value_rowids(filled, row, nrows=tf.shape(text, tf.int64)[0])
    return ragged.to_tensor("", shape=tf.stack([tf.shape(text)[0], width, k]))
