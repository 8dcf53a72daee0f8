"""The exported models' in-graph tokenizer, SentencePiece or WordPiece: one tf.Module.

    tokenizer = TextTokenizer(TokenizerSpec.from_files(vocab_file="vocab.txt"))
    ids = tokenizer.ids(tf.constant(["中文 text"]))          # int32 RaggedTensor [B, (P)]

Holds the graph tokenizer (`data_pipeline.tokenization.sentencepiece_tokenizer.GraphTokenizer` or
`data_pipeline.tokenization.wordpiece.GraphWordPieceTokenizer`, ids equal to the Python
tokenizer's) as tracked state, so a SavedModel holding this module tokenizes as training
did; the vocabulary file itself is stored under `assets/` (`vocabulary`), with its sha256 in
`vocabulary_sha256` and its kind ("sentencepiece" / "wordpiece") in `tokenizer_kind`, for
clients that tokenize outside the graph or audit what the model was trained with.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.serving.graph_function import graph_function
from albert_tf.serving.text_ops import valid_utf8
from data_pipeline.tokenization.spec import TokenizerSpec


class TextTokenizer(tf.Module):
    """Text → ids in the graph, for the tokenizer `spec` names.

    `python_tokenizer`: the spec's Python tokenizer when the caller built it already (it
    is built once per export and shared with the on-device files), else built here.
    Attributes: `python_tokenizer` (not saved), `graph_tokenizer`, `cls_id`, `sep_id`,
    `pad_id`, and the saved `vocabulary` (Asset), `vocabulary_sha256`, `tokenizer_kind`
    (string variables).
    """

    def __init__(self, spec: TokenizerSpec, python_tokenizer=None):
        super().__init__()
        python_tokenizer = python_tokenizer if python_tokenizer is not None else spec.build()
        self.spec = spec
        self.python_tokenizer = python_tokenizer
        self.graph_tokenizer = python_tokenizer.graph_tokenizer()
        # tracked: the op resources / model buffers the graph tokenizer runs on
        self.graph_state = (
            self.graph_tokenizer.wordpiece if spec.is_wordpiece else self.graph_tokenizer.sp
        )
        self.vocabulary = tf.saved_model.Asset(spec.path)
        # (variables, not constants: constants are not saved as attributes)
        self.vocabulary_sha256 = tf.Variable(python_tokenizer.checksum, trainable=False)
        self.tokenizer_kind = tf.Variable(spec.kind, trainable=False)
        self.cls_id, self.sep_id = python_tokenizer.cls_id, python_tokenizer.sep_id
        self.pad_id = python_tokenizer.pad_id

    @graph_function(input_signature=[tf.TensorSpec([None], tf.string)])
    def ids(self, text):
        """string [B] → int32 RaggedTensor [B, (pieces)]; invalid UTF-8 bytes become
        U+FFFD first, as Python's decode(errors="replace")."""
        return self.graph_tokenizer(valid_utf8(text))
