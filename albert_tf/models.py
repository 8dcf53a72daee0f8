"""Task models: an `AlbertEncoder` plus heads.

Every model keeps its encoder in the attribute `encoder` and its heads in named
attributes, so checkpoints are laid out as `model/encoder/...`, `model/mlm_head/...`;
`checkpoints.load_checkpoint` relies on that to restore an encoder from any model's
checkpoint.
"""

from __future__ import annotations

import keras

from albert_tf.config import AlbertConfig
from albert_tf.encoder import AlbertEncoder
from albert_tf.heads import MaskedLMHead, SentenceOrderHead


class AlbertPretrainer(keras.Model):
    """Encoder + masked-LM head + sentence-order head (paper Section 3.1).

    Args:
      config: an `AlbertConfig`.
      encoder: optionally an existing `AlbertEncoder` to wrap (shared, not copied).

    Call args:
      inputs: dict with the encoder inputs (`input_ids`, `input_mask`, `segment_ids`,
        int32 [batch, seq]) and `masked_lm_positions` int32 [batch, P].
      training: enables dropout.

    Returns a dict:
      sequence_output [batch, seq, H], pooled_output [batch, H] (as the encoder),
      mlm_logits float32 [batch, P, V] (only when `masked_lm_positions` is given),
      sop_logits float32 [batch, 2].
    """

    def __init__(self, config: AlbertConfig, encoder: AlbertEncoder | None = None, **kwargs):
        kwargs.setdefault("name", "albert_pretrainer")
        super().__init__(**kwargs)
        self.config = config
        self.encoder = encoder if encoder is not None else AlbertEncoder(config)
        self.mlm_head = MaskedLMHead(config, name="mlm_head")
        self.sop_head = SentenceOrderHead(config, name="sop_head")

    def build(self, input_shape=None):
        if not self.encoder.built:
            self.encoder.build()
        self.mlm_head.build()
        self.sop_head.build()

    def call(self, inputs, training=False, output_hidden_states=False):
        outputs = dict(self.encoder(inputs, training=training,
                                    output_hidden_states=output_hidden_states))
        if isinstance(inputs, dict) and "masked_lm_positions" in inputs:
            # The MLM output matrix is the word-embedding table itself (tied weights).
            outputs["mlm_logits"] = self.mlm_head(
                outputs["sequence_output"], inputs["masked_lm_positions"],
                self.encoder.embeddings.word_embeddings)
        outputs["sop_logits"] = self.sop_head(outputs["pooled_output"])
        return outputs
