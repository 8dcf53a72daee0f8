"""The shared layer applied as a loop in the graph, for LiteRT files.

ALBERT applies one layer's weights L times (cross-layer sharing). Traced as a Python loop,
a graph holds L copies of the layer's ops, all reading the same weights; a runtime that
prepares weights per op then prepares them L times. LiteRT's XNNPack delegate does: it
packs the weights of every FULLY_CONNECTED node for that node, so an ALBERT-base file
unrolled holds twelve packed copies of its 27 MB layer and every call reads all twelve
from memory. Under `trace_options(looped_layers=True)` (`albert_tf.modeling.trace_options`)
the encoder traces its repeated block as one `tf.while_loop` whose body is the block
(`AlbertEncoder`'s `_BlockRunner.run_segments`): the file has one WHILE op and one body
subgraph, whose weights any LiteRT interpreter packs once, with no option to set
(figures: docs/performance-history.md, "one layer, one loop").

Exact: the body is the same ops on the same weights, applied in the same order. Used
only where the graph is converted for LiteRT (`albert_tf.serving.litert.convert`):
TensorFlow's own runtime keeps no per-op copy of the weights to save, so SavedModels and
training keep the unrolled graph (and with it the per-layer recomputation and the packed
encoder, which a loop body would have to carry)."""

from __future__ import annotations

from albert_tf.modeling.trace_options import trace_options


def looped_layers(enabled: bool = True):
    """`trace_options(looped_layers=enabled)`: within the block an encoder whose blocks
    are one shared block traces them as one while loop. The name `albert_tf.serving`
    enters."""
    return trace_options(looped_layers=enabled)
