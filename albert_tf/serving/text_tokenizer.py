"""The exported models' in-graph tokenizer, SentencePiece or WordPiece: one tf.Module.

    tokenizer = TextTokenizer(vocab_file="vocab.txt")       # or spm_model_file=...
    ids = tokenizer.ids(tf.constant(["中文 text"]))          # int32 RaggedTensor [B, (P)]

Holds the graph tokenizer (`data_pipeline.tokenization.sentencepiece_tokenizer.GraphTokenizer` or
`data_pipeline.tokenization.wordpiece.GraphWordPieceTokenizer`, ids equal to the Python
tokenizer's) as
tracked state, so a SavedModel holding this module tokenizes as training did; the
vocabulary file itself is stored under `assets/` (`vocabulary`), with its sha256 in
`vocabulary_sha256` and its kind ("sentencepiece" / "wordpiece") in `tokenizer_kind`, for
clients that tokenize outside the graph or audit what the model was trained with.
"""

from __future__ import annotations

import tensorflow as tf

from data_pipeline.tokenization.spec import TokenizerSpec, tokenizer_kind


class TextTokenizer(tf.Module):
    """Text → ids in the graph, for either tokenizer choice (exactly one file).

    Attributes: `python_tokenizer` (not saved), `cls_id`, `sep_id`, `pad_id`, and the
    saved `vocabulary` (Asset), `vocabulary_sha256`, `tokenizer_kind` (string variables).
    """

    def __init__(self, spm_model_file=None, vocab_file=None, do_lower_case=True):
        super().__init__()
        python_tokenizer = TokenizerSpec.from_files(
            spm_model_file, vocab_file, do_lower_case
        ).build()
        self.python_tokenizer = python_tokenizer
        self.graph_tokenizer = python_tokenizer.graph_tokenizer()
        kind = tokenizer_kind(python_tokenizer)
        # tracked: the op resources / model buffers the graph tokenizer runs on
        self.graph_state = (
            self.graph_tokenizer.wordpiece if kind == "wordpiece" else self.graph_tokenizer.sp
        )
        self.vocabulary = tf.saved_model.Asset(spm_model_file or vocab_file)
        # (variables, not constants: constants are not saved as attributes)
        self.vocabulary_sha256 = tf.Variable(python_tokenizer.checksum, trainable=False)
        self.tokenizer_kind = tf.Variable(kind, trainable=False)
        self.cls_id, self.sep_id = python_tokenizer.cls_id, python_tokenizer.sep_id
        self.pad_id = python_tokenizer.pad_id

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def ids(self, text):
        """string [B] → int32 RaggedTensor [B, (pieces)]; invalid UTF-8 bytes become
        U+FFFD first, as Python's decode(errors="replace")."""
        text = tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        return self.graph_tokenizer(text)
