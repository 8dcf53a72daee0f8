"""The in-graph text side of a zero-shot request (`albert_tf.serving.tasks.zero_shot.modules`): its
bounds, the hypotheses made from the template, and the (text, hypothesis) pairs packed as
the NLI classifier reads them.

    check_request    ≥ 1 candidate label, a template with one "{}", at most max_pairs
                     pairs and max_request_bytes bytes; InvalidArgumentError otherwise,
                     before anything is tokenized
    hypotheses       template with each label in its "{}" → string [N]
    pair_inputs      premise ids [B, (p)] × hypothesis ids [N, (h)] → the model's inputs
                     [B·N, L], row b·N + n; only the premise is truncated

A pair costs what a window of a windowed export costs (one model row of at most
max_seq_length tokens), so a request is bounded as those are: `max_pairs` rows
(request_windows.DEFAULT_MAX_WINDOWS unless the export sets another), and the bytes to
tokenize (texts once, labels and the template once per label) at
request_windows.max_request_bytes of that many rows.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.checkpoints.task_kinds.zero_shot import SLOT
from albert_tf.serving.request_windows import max_request_bytes
from albert_tf.serving.tasks.zero_shot.lite_runner import bytes_message, pairs_message
from albert_tf.serving.text_ops import pack

# A template the graph accepts: one "{}" and no other brace (task_kinds.zero_shot's rule).
TEMPLATE_PATTERN = r"[^{}]*\{\}[^{}]*"


def check_request(text, labels, template, max_pairs: int, max_seq_length: int):
    """(text [B], labels [N], template scalar) unchanged once the request is checked:
    N ≥ 1, the template holds one "{}" and no other brace, B·N ≤ max_pairs, and the bytes
    tokenized (the texts, then each label in the template) within max_request_bytes."""
    rows = tf.cast(tf.size(text), tf.int64)
    count = tf.cast(tf.size(labels), tf.int64)
    pairs = rows * count
    size = (
        tf.reduce_sum(tf.cast(tf.strings.length(text), tf.int64))
        + tf.reduce_sum(tf.cast(tf.strings.length(labels), tf.int64))
        + count * tf.cast(tf.strings.length(template), tf.int64)
    )
    checks = [
        tf.debugging.Assert(
            count > 0, ["candidate_labels is empty: give at least one candidate label"]
        ),
        tf.debugging.Assert(
            tf.strings.regex_full_match(template, TEMPLATE_PATTERN),
            [
                tf.strings.join(  # (join: format would read the braces as its own)
                    [
                        "hypothesis_template '",
                        template,
                        f"' must hold '{SLOT}' (where the label goes) exactly once and no "
                        "other brace",
                    ]
                )
            ],
        ),
        tf.debugging.Assert(
            pairs <= max_pairs,
            [tf.strings.format(pairs_message("{}", "{}", "{}", max_pairs), (rows, count, pairs))],
        ),
        tf.debugging.Assert(
            size <= max_request_bytes(max_pairs, max_seq_length),
            [tf.strings.format(bytes_message("{}", max_pairs, max_seq_length), (size,))],
        ),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(text), tf.identity(labels), tf.identity(template)


def hypotheses(labels, template):
    """string [N]: `template` (scalar, one "{}": `check_request`) with each label in its
    slot, as Python's template.format(label)."""
    parts = tf.strings.split(template, SLOT)  # [2]: before and after the slot
    return parts[0] + labels + parts[-1]


def _first(ids, lengths):
    """Row i of ragged `ids` cut to its first lengths[i] values."""
    keep = tf.ragged.range(ids.row_lengths()) < tf.cast(lengths, tf.int64)[:, None]
    return tf.ragged.boolean_mask(ids, keep)


def pair_inputs(premise_ids, hypothesis_ids, max_seq_length: int, cls_id: int, sep_id: int):
    """`[CLS] text [SEP] hypothesis [SEP]` for every (text, hypothesis): ragged int32
    premise ids [B, (p)] and hypothesis ids [N, (h)] → (input_ids, input_mask,
    segment_ids) int32 [B·N, L], row b·N + n, L the longest pair's bucket (text_ops.pack,
    length_aware). Only the premise is truncated, so the hypothesis stays whole (Hugging
    Face's pipeline truncates "only_first"); a hypothesis longer than max_seq_length - 3
    alone is cut as text_ops.pack cuts pairs."""
    texts = premise_ids.nrows(out_type=tf.int32)
    labels = hypothesis_ids.nrows(out_type=tf.int32)
    a = tf.gather(premise_ids, tf.repeat(tf.range(texts), labels))
    b = tf.gather(hypothesis_ids, tf.tile(tf.range(labels), [texts]))
    la = tf.cast(a.row_lengths(), tf.int32)
    lb = tf.cast(b.row_lengths(), tf.int32)
    a = _first(a, tf.clip_by_value(max_seq_length - 3 - lb, 0, la))
    return pack(a, b, max_seq_length, cls_id, sep_id, length_aware=True)
