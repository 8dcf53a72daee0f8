"""ALBERT (Lan et al. 2019) on TensorFlow 2 / Keras 3.

Public API:
  AlbertConfig       hyper-parameters; `.preset("base")`, `.from_json_file(path)`.
  AlbertEncoder      the backbone: dict of int32 [batch, seq] inputs → sequence/pooled output.
  AlbertPretrainer   encoder + masked-LM head + sentence-order head.
  load_checkpoint    restores an encoder or a model from a trained or converted checkpoint.
  save_checkpoint    writes a model checkpoint that `load_checkpoint` and runners accept.
"""

from albert_tf.modeling.config import AlbertConfig, ConfigError
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import AlbertPretrainer
from albert_tf.checkpoints import load_checkpoint, save_checkpoint

__all__ = [
    "AlbertConfig",
    "ConfigError",
    "AlbertEncoder",
    "AlbertPretrainer",
    "load_checkpoint",
    "save_checkpoint",
]
