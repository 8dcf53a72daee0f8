"""A graph tokenizer's call, traced once: `GraphTokenizer` and `GraphWordPieceTokenizer`
encode through it.

Their ops (normalization regexes, the tokenizer op, the ragged reshaping and the official
digit-comma rule) are hundreds of graph nodes; built inline, every graph that tokenizes —
each signature of a SavedModel, each tf.data map — built them again (five times in one
classifier export). As one tf.function, each graph calls the function traced once per
input shape, and a SavedModel holds it once (what it saves: docs/design/testing.md, "What
the suite costs").
"""

from __future__ import annotations


def traced_once(encode):
    """`encode` (string tensor → int32 RaggedTensor ops) as a tf.function, without
    AutoGraph (the ops have no Python control flow to convert)."""
    import tensorflow as tf

    return tf.function(encode, autograph=False)
