"""Task models: an `AlbertEncoder` plus heads.

Every model keeps its encoder in the attribute `encoder` and its heads in named
attributes, so checkpoints are laid out as `model/encoder/...`, `model/mlm_head/...`;
`checkpoints.load_checkpoint` relies on that to restore an encoder from any model's
checkpoint.
"""

from __future__ import annotations

import keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.heads import (
    ClassificationHead,
    MaskedLMHead,
    SentenceOrderHead,
    SquadV2Head,
    answerable_positions,
)


def pooled_output_only(encoder: AlbertEncoder, inputs, training):
    """The encoder's `pooled_output` [batch, H], its last block computed at [CLS] only
    (`output_positions` of shape [batch, 0]): the same values, ~7% fewer encoder FLOPs
    for ALBERT-base at 128 tokens (keys and values of the last block are still computed
    for every token; its queries, FFN and LayerNorms only for [CLS])."""
    import tensorflow as tf

    ids = inputs["input_ids"] if isinstance(inputs, dict) else inputs
    none = tf.zeros_like(tf.cast(ids, tf.int32)[:, :0])
    return encoder(inputs, training=training, output_positions=none)["pooled_output"]


class AlbertPretrainer(keras.Model):
    """Encoder + masked-LM head + sentence-order head (paper Section 3.1).

    Args:
      config: an `AlbertConfig`.
      encoder: optionally an existing `AlbertEncoder` to wrap (shared, not copied).

    Call args:
      inputs: dict with the encoder inputs (`input_ids`, `input_mask`, `segment_ids`,
        int32 [batch, seq]) and `masked_lm_positions` int32 [batch, P].
      training: enables dropout.
      output_hidden_states: also return the encoder's hidden states (see `AlbertEncoder`).
      last_block_at_masked_only: compute the last block only where the losses read it,
        at [CLS] (SOP) and the `masked_lm_positions` (MLM), via the encoder's
        `output_positions`: the same logits and gradients with fewer FLOPs; the trainer
        uses it. Needs `masked_lm_positions`, excludes `output_hidden_states`, and the
        output then has no `sequence_output`.

    Returns a dict:
      sequence_output [batch, seq, H] (not with `last_block_at_masked_only`),
      pooled_output [batch, H] (as the encoder),
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

    def call(
        self, inputs, training=False, output_hidden_states=False, last_block_at_masked_only=False
    ):
        positions = inputs.get("masked_lm_positions") if isinstance(inputs, dict) else None
        # The MLM output matrix is the word-embedding table itself (tied weights).
        table = self.encoder.embeddings.word_embeddings
        if last_block_at_masked_only:
            if positions is None or output_hidden_states:
                raise ValueError(
                    "last_block_at_masked_only needs masked_lm_positions and no "
                    "output_hidden_states"
                )
            encoded = self.encoder(inputs, training=training, output_positions=positions)
            return {
                "pooled_output": encoded["pooled_output"],
                "mlm_logits": self.mlm_head(encoded["positions_output"], None, table),
                "sop_logits": self.sop_head(encoded["pooled_output"]),
            }
        outputs = dict(
            self.encoder(inputs, training=training, output_hidden_states=output_hidden_states)
        )
        if positions is not None:
            outputs["mlm_logits"] = self.mlm_head(outputs["sequence_output"], positions, table)
        outputs["sop_logits"] = self.sop_head(outputs["pooled_output"])
        return outputs


class AlbertClassifier(keras.Model):
    """Encoder + classification head: sentence (pair) classification and regression.

    Args:
      config: an `AlbertConfig`.
      num_labels: classes, or 1 for regression (STS-B).
      dropout: on the pooled output (official: 0.1).

    Call: the encoder inputs (int32 [batch, seq]) → {"logits": float32 [batch, num_labels],
    "pooled_output": [batch, H]}.
    """

    def __init__(
        self,
        config: AlbertConfig,
        num_labels: int,
        dropout: float = 0.1,
        encoder: AlbertEncoder | None = None,
        **kwargs,
    ):
        kwargs.setdefault("name", "albert_classifier")
        super().__init__(**kwargs)
        self.config = config
        self.num_labels = num_labels
        self.encoder = encoder if encoder is not None else AlbertEncoder(config)
        self.classifier_head = ClassificationHead(
            config, num_labels, dropout, name="classifier_head"
        )

    def build(self, input_shape=None):
        if not self.encoder.built:
            self.encoder.build()
        self.classifier_head.build()

    def call(self, inputs, training=False):
        pooled = pooled_output_only(self.encoder, inputs, training)
        return {"logits": self.classifier_head(pooled, training=training), "pooled_output": pooled}


class AlbertMultipleChoice(keras.Model):
    """Encoder + one score per choice (RACE): every choice is encoded as its own sequence
    `[CLS] passage [SEP] question + option [SEP]`, scored by a dense layer on its pooled
    output, and the scores of a question's choices are compared with a softmax.

    Call: int32 [batch, choices, seq] inputs → {"logits": float32 [batch, choices]}.
    A padding choice (a question with fewer options: 21 of RACE dev's have 3) has an
    all-zero input_mask and gets logit -1e9, so the softmax ignores it.
    """

    def __init__(
        self,
        config: AlbertConfig,
        dropout: float = 0.1,
        encoder: AlbertEncoder | None = None,
        **kwargs,
    ):
        kwargs.setdefault("name", "albert_multiple_choice")
        super().__init__(**kwargs)
        self.config = config
        self.encoder = encoder if encoder is not None else AlbertEncoder(config)
        self.choice_head = ClassificationHead(config, 1, dropout, name="choice_head")

    def build(self, input_shape=None):
        if not self.encoder.built:
            self.encoder.build()
        self.choice_head.build()

    def call(self, inputs, training=False):
        import tensorflow as tf

        ids = inputs["input_ids"]
        shape = tf.shape(ids)  # [B, C, S]
        flat = {
            k: tf.reshape(inputs[k], [-1, shape[2]])
            for k in ("input_ids", "input_mask", "segment_ids")
        }
        pooled = pooled_output_only(self.encoder, flat, training)  # [B*C, H]
        scores = tf.reshape(self.choice_head(pooled, training=training), shape[:2])
        present = tf.reduce_any(tf.cast(inputs["input_mask"], tf.bool), axis=-1)  # [B, C]
        return {"logits": tf.where(present, scores, tf.fill(tf.shape(scores), -1e9))}


class AlbertQuestionAnswering(keras.Model):
    """Encoder + span head (SQuAD v1.1 and v2.0): one dense layer H → 2 on every token
    gives start and end logits (the official v1.1 head; Hugging Face's `qa_outputs`).

    For v2.0 the same head scores "no answer" BERT-style: the [CLS] position's start + end
    logit is the null score, compared with the best span's score (see
    data_pipeline.squad.postprocess). Padding positions get -1e4 so no loss or prediction
    lands there.

    Call: the encoder inputs (int32 [batch, seq]) → {"start_logits", "end_logits":
    float32 [batch, seq]}.
    """

    def __init__(self, config: AlbertConfig, encoder: AlbertEncoder | None = None, **kwargs):
        kwargs.setdefault("name", "albert_question_answering")
        super().__init__(**kwargs)
        self.config = config
        self.encoder = encoder if encoder is not None else AlbertEncoder(config)
        self.span_head = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=config.initializer_range),
            dtype="float32",
            name="span_head",
        )

    def build(self, input_shape=None):
        if not self.encoder.built:
            self.encoder.build()
        self.span_head.build((None, None, self.config.hidden_size))

    def call(self, inputs, training=False):
        import tensorflow as tf

        sequence = self.encoder(inputs, training=training)["sequence_output"]
        logits = self.span_head(tf.cast(sequence, tf.float32))  # [B, S, 2]
        pad = (1.0 - tf.cast(inputs["input_mask"], tf.float32)) * -1e4
        return {"start_logits": logits[..., 0] + pad, "end_logits": logits[..., 1] + pad}


class AlbertQuestionAnsweringV2(keras.Model):
    """Encoder + the official ALBERT SQuAD v2.0 head (`heads.SquadV2Head`: start
    log-probabilities, ends conditioned on a start, a beam of `start_n_top` × `end_n_top`
    spans, and an answer-class logit that decides "no answer"). `--squad_head albert`.

    Call: the encoder inputs (int32 [batch, seq]); in training also `start_positions`
    [batch] (the end is conditioned on the gold start, as the official code) → the
    head's outputs (see SquadV2Head). The answerable positions (`p_mask`) follow from the
    packing, so the model needs no other input.
    """

    def __init__(
        self,
        config: AlbertConfig,
        start_n_top: int = 5,
        end_n_top: int = 5,
        dropout: float = 0.1,
        encoder: AlbertEncoder | None = None,
        **kwargs,
    ):
        kwargs.setdefault("name", "albert_question_answering_v2")
        super().__init__(**kwargs)
        self.config = config
        self.encoder = encoder if encoder is not None else AlbertEncoder(config)
        self.squad_v2_head = SquadV2Head(
            config, start_n_top, end_n_top, dropout, name="squad_v2_head"
        )

    def build(self, input_shape=None):
        if not self.encoder.built:
            self.encoder.build()
        self.squad_v2_head.build()

    def call(self, inputs, training=False):
        sequence = self.encoder(inputs, training=training)["sequence_output"]
        p_mask = answerable_positions(inputs["input_mask"], inputs["segment_ids"])
        start = inputs.get("start_positions") if training else None
        return self.squad_v2_head(sequence, p_mask, start, training=training)
