"""Predicted tags → entities, in TensorFlow ops: data_pipeline.tagging.metrics.entities
(seqeval's readings) for a batch whose words lie flat, each row a sentence.

The labels are known when the model is exported, so each label id becomes two integers
here, its prefix's role and its type, and every rule is a comparison of a word with its
neighbour in the row (the first word's left neighbour and the last word's right one are
"O"):

  default (lenient, scheme None): a chunk ends after word e when (e, e+1) is a chunk end
    of metrics._chunk_ends; it begins at the last word ≤ e where (w-1, w) is a chunk start
    (metrics._chunk_starts), which is where the reference's running `begin` stands. (A tag
    with no prefix letter the rules know and no type, such as "X", starts nothing; where
    the reference's `begin` then still points into an earlier sentence, here it is the
    row's first word: an entity never spans two texts.)
  strict (IOB2, IOE2, IOBES, BMES, BILOU): a chunk begins at each word where the scheme's
    start rule holds, runs while the next word continues it, and counts when the word
    after it closes it (metrics._strict_entities' scan: its starts and continuations never
    overlap, so each start begins exactly one run).

Both give (first word, last word, type) for every entity in reading order, found with one
`searchsorted` over the flat words: linear in the request, no loop over words.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from data_pipeline.tagging import metrics

# Lenient prefix letters (anything else: OTHER).
_O, _B, _I, _E, _S, _DOT, _OTHER = range(7)
_LETTERS = {"O": _O, "B": _B, "I": _I, "E": _E, "S": _S, ".": _DOT}


@dataclasses.dataclass(frozen=True)
class LabelCodes:
    """Each label id's prefix role and type index (into `names`, the sorted types, "_"
    among them: the type of "O" and of a tag with none; `blank` is its index)."""

    roles: tuple[int, ...]
    kinds: tuple[int, ...]
    names: tuple[str, ...]
    blank: int


def label_codes(labels, scheme: str | None) -> LabelCodes:
    """The `LabelCodes` of `labels` for the reading of `scheme`; ValueError (one line) for
    a label the strict scheme has no prefix for."""
    roles, kinds = [], []
    for tag in labels:
        if scheme is None:
            letter, kind = tag[:1], tag[1:].split("-", 1)[-1] or "_"
            roles.append(_LETTERS.get(letter, _OTHER))
        else:
            role = metrics._ROLES[scheme].get(tag[:1]) if tag else None
            if role is None:
                raise ValueError(
                    f"label {tag!r} is not a {scheme} tag (prefixes "
                    f"{'/'.join(metrics._ROLES[scheme])}): the task's 'scheme' does not fit"
                )
            roles.append(_LETTERS[role])
            kind = tag[1:].strip("-") or "_"
        kinds.append(kind)
    names = sorted(set(kinds) | {"_"})
    return LabelCodes(
        tuple(roles), tuple(names.index(k) for k in kinds), tuple(names), names.index("_")
    )


def _in(x, *codes):
    return tf.reshape(tf.reduce_any(tf.stack([tf.equal(x, c) for c in codes]), axis=0), [-1])


def _neighbours(values, row_starts, row_ends, fill):
    """(left, right) neighbour of each flat word inside its row, `fill` off the row."""
    n = tf.shape(values)[0]
    index = tf.range(n)
    pad = tf.concat([[fill], values, [fill]], 0)
    left = tf.where(index > row_starts, tf.gather(pad, index), fill)
    right = tf.where(index + 1 < row_ends, tf.gather(pad, index + 2), fill)
    return left, right


def entity_spans(label_ids, word_row, row_lengths, codes: LabelCodes, scheme: str | None):
    """(first, last, type) int32 [E]: the entities of the words' predicted `label_ids`
    (int32 [N], flat, row by row; word_row int32 [N] their rows, row_lengths int32 [B]),
    `first` and `last` flat word indices (inclusive), `type` an index into `codes.names`;
    in reading order."""
    label_ids = tf.reshape(label_ids, [-1])  # (a known rank for the masks below)
    role = tf.gather(tf.constant(codes.roles, tf.int32), label_ids)
    kind = tf.gather(tf.constant(codes.kinds, tf.int32), label_ids)
    ends_of_rows = tf.cumsum(row_lengths)
    row_start = tf.gather(ends_of_rows - row_lengths, word_row)
    row_end = tf.gather(ends_of_rows, word_row)
    p_role, n_role = _neighbours(role, row_start, row_end, _O)
    p_kind, n_kind = _neighbours(kind, row_start, row_end, codes.blank)
    index = tf.range(tf.shape(role)[0])
    if scheme is None:
        return _lenient(role, kind, p_role, p_kind, n_role, n_kind, index, row_start)
    return _strict(role, kind, p_role, p_kind, n_role, n_kind, index, scheme)


def _lenient(role, kind, p_role, p_kind, n_role, n_kind, index, row_start):
    def ends(prev, prev_kind, cur, cur_kind):
        return (
            _in(prev, _E, _S)
            | (_in(prev, _B, _I) & _in(cur, _B, _S, _O))
            | (~_in(prev, _O, _DOT) & (prev_kind != cur_kind))
        )

    def starts(prev, prev_kind, cur, cur_kind):
        return (
            _in(cur, _B, _S)
            | (_in(cur, _I, _E) & _in(prev, _E, _S, _O))
            | (~_in(cur, _O, _DOT) & (prev_kind != cur_kind))
        )

    end_at = tf.boolean_mask(index, ends(role, kind, n_role, n_kind))  # [E]
    start_at = tf.boolean_mask(index, starts(p_role, p_kind, role, kind))
    last_start = tf.searchsorted(start_at, end_at, side="right") - 1
    begin = tf.gather(tf.concat([[-1], start_at], 0), last_start + 1)
    begin = tf.maximum(begin, tf.gather(row_start, end_at))
    return begin, end_at, tf.gather(kind, end_at)


def _strict(role, kind, p_role, p_kind, n_role, n_kind, index, scheme):
    if scheme == "IOE2":
        starts = _in(role, _I, _E) & (_in(p_role, _O, _E) | ((p_role == _I) & (p_kind != kind)))
    else:
        starts = _in(role, _B, _S)

    def continues(prev, prev_kind, cur, cur_kind):  # cur extends the chunk ending at prev
        same = prev_kind == cur_kind
        if scheme == "IOB2":
            return _in(prev, _B, _I) & (cur == _I) & same
        if scheme == "IOE2":
            return (prev == _I) & _in(cur, _I, _E) & same
        return _in(prev, _B, _I) & _in(cur, _I, _E) & same

    # A run stops after word j when the next word does not continue it (off the row: "O").
    stops = ~continues(role, kind, n_role, n_kind)
    stop_at = tf.boolean_mask(index, stops)
    begin = tf.boolean_mask(index, starts)
    last = tf.gather(stop_at, tf.searchsorted(stop_at, begin, side="left"))
    last_role = tf.gather(role, last)
    closed = _in(last_role, _B, _I) if scheme == "IOB2" else _in(last_role, _E, _S)
    return (
        tf.boolean_mask(begin, closed),
        tf.boolean_mask(last, closed),
        tf.boolean_mask(tf.gather(kind, begin), closed),
    )
