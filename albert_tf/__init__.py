"""ALBERT (Lan et al. 2019) on TensorFlow 2 / Keras 3.

Public API:
  AlbertConfig       hyper-parameters; `.preset("base")`, `.from_json_file(path)`.
  AlbertEncoder      the backbone: dict of int32 [batch, seq] inputs → sequence/pooled output.
  AlbertPretrainer   encoder + masked-LM head + sentence-order head.
  load_checkpoint    restores an encoder or a model from a trained or converted checkpoint.
  save_checkpoint    writes a model checkpoint that `load_checkpoint` and runners accept.

The names are imported on first use, so that light tools inside the package (the
on-device runner `albert_tf.serving.tflite_predict`) run without TensorFlow or Keras.
"""

import importlib

import data_pipeline  # noqa: F401  (a quiet TensorFlow start: data_pipeline.quiet)

_EXPORTS = {
    "AlbertConfig": "albert_tf.modeling.config",
    "ConfigError": "albert_tf.modeling.config",
    "AlbertEncoder": "albert_tf.modeling.encoder",
    "AlbertPretrainer": "albert_tf.modeling.models",
    "load_checkpoint": "albert_tf.checkpoints",
    "save_checkpoint": "albert_tf.checkpoints",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
