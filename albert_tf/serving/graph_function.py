"""`graph_function`: how every serving graph is traced (SavedModel signatures, the LiteRT
and ONNX conversions' functions, the in-graph tokenizer).

AutoGraph is off. The serving code's control flow on tensors is explicit (`tf.while_loop`,
`tf.cond`, `tf.where`), so AutoGraph would only rewrite each Python function it meets
before tracing it: export time, no change to the graph or to run time.
A Python `if` or `for` on a tensor in serving code is an error at trace time ("using a
`tf.Tensor` as a Python `bool` is not allowed"), never a silently different graph.
"""

from __future__ import annotations

import functools

import tensorflow as tf


def graph_function(fn=None, *, input_signature):
    """tf.function(fn, input_signature, autograph=False); usable as a decorator."""
    if fn is None:
        return functools.partial(graph_function, input_signature=input_signature)
    return tf.function(fn, input_signature=input_signature, autograph=False)
