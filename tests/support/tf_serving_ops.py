"""The custom ops the stock TF Serving model server links, as our own list, and the op walk
of a SavedModel that checks an export against it (`assert_stock_server_links`, called by
the tests that write each kind's SavedModel: see tests/serving/test_tf_serving_ops.py).

Source (read for the facts, tensorflow/serving at its July 2026 head): the server binary's
deps end in `SUPPORTED_TENSORFLOW_OPS` (tensorflow_serving/model_servers/BUILD), which holds
`@org_tensorflow_text//tensorflow_text:ops_lib` and TensorFlow Decision Forests' inference
ops (nothing of ours); tensorflow_serving/workspace.bzl pins tensorflow/text v2.20.0. That
version's tensorflow_text/BUILD `ops_lib` depends on 23 op libraries
(`<name>_cc` of each `py_tf_text_library`), whose ops are registered in
tensorflow_text/core/ops/*.cc (REGISTER_OP, or REGISTER_TF_OP_SHIM with the kernel's
kOpName). They are `TF_SERVING_TEXT_OPS`, by library. The tensorflow-text 2.21 installed
here registers exactly these 40 ops in the same 23 libraries.

History, from the same files: TF Serving 2.0 and 2.1 linked five tensorflow_text libraries
(no SentencePiece); 2.2.0 (text 2.2.0) links all of `ops_lib`, SentencePiece, NormalizeUTF8
and RegexSplitWithOffsets included; FastWordpieceTokenizeWithOffsets is in `ops_lib` from
text 2.7, linked from TF Serving 2.10.0 (text 2.7.3). "Op type not registered
'SentencepieceEncodeSparse'" is the op of the retired tf_sentencepiece package, which no
server links and no export of ours uses.
"""

from __future__ import annotations

# tensorflow_text 2.20.0 ops_lib, library → the op types it registers.
TF_SERVING_TEXT_LIBRARIES = {
    "boise_offset_converter": ("TFText>OffsetsToBoiseTags", "TFText>BoiseTagsToOffsets"),
    "byte_splitter": ("TFText>ByteSplitWithOffsets", "TFText>ByteSplitByOffsets"),
    "constrained_sequence_op": ("ConstrainedSequence",),
    "fast_bert_normalizer": ("FastBertNormalize",),
    "fast_sentencepiece_tokenizer": (
        "TFText>FastSentencepieceTokenize",
        "TFText>FastSentencepieceDetokenize",
    ),
    "fast_wordpiece_tokenizer": (
        "FastWordpieceTokenizeWithOffsets",
        "TFText>FastWordpieceDetokenize",
    ),
    "mst_ops": ("MaxSpanningTree",),
    "ngrams_op": ("TFText>NgramsStringJoin",),
    "normalize_ops": (
        "CaseFoldUTF8",
        "NormalizeUTF8",
        "NormalizeUTF8WithOffsetsMap",
        "FindSourceOffsets",
    ),
    "phrase_tokenizer": ("PhraseTokenize", "TFText>PhraseDetokenize"),
    "regex_split_ops": ("RegexSplitWithOffsets",),
    "sentence_breaking_ops": ("SentenceFragments",),
    "sentencepiece_tokenizer": (
        "SentencepieceOp",
        "SentencepieceTokenizeOp",
        "SentencepieceTokenizeWithOffsetsOp",
        "SentencepieceDetokenizeOp",
        "SentencepieceVocabSizeOp",
        "SentencepieceIdToStringOp",
        "SentencepieceStringToIdOp",
    ),
    "split_merge_from_logits_tokenizer": ("TokenizerFromLogits",),
    "split_merge_tokenizer": ("SplitMergeTokenizeWithOffsets",),
    "state_based_sentence_breaker_op": ("SentenceFragmentsV2",),
    "text_similarity_metric_ops": ("RougeL",),
    "trimmer_ops": ("TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim"),
    "unicode_script_tokenizer": ("UnicodeScriptTokenizeWithOffsets",),
    "utf8_binarize_op": ("TFText>Utf8Binarize",),
    "whitespace_tokenizer": ("WhitespaceTokenizeWithOffsets",),
    "whitespace_tokenizer_v2": ("TFText>WhitespaceTokenizeWithOffsetsV2",),
    "wordpiece_tokenizer": ("WordpieceTokenizeWithOffsets",),
}
TF_SERVING_TEXT_OPS = frozenset(op for ops in TF_SERVING_TEXT_LIBRARIES.values() for op in ops)


def saved_model_op_types(version_dir) -> set[str]:
    """Every op type of a SavedModel: the nodes of its graph def and of every function in its
    library (each signature's function and all it calls), read from saved_model.pb."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(f"{version_dir}/saved_model.pb", "rb") as f:
        proto.ParseFromString(f.read())
    found = set()
    for meta_graph in proto.meta_graphs:
        graph = meta_graph.graph_def
        found.update(node.op for node in graph.node)
        for function in graph.library.function:
            found.update(node.op for node in function.node_def)
    return found


def custom_op_types() -> dict[str, str]:
    """{op type: library file} of every op a loaded custom op library registered (the
    tensorflow-text libraries once tensorflow_text is imported): TensorFlow keeps each
    library's op list, so asking again loads nothing new."""
    import glob
    import os

    import tensorflow_text
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session

    root = os.path.dirname(tensorflow_text.__file__)
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "**", "_*.so"), recursive=True)):
        handle = pywrap_tf_session.TF_LoadLibrary(path)
        ops = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetOpList(handle))
        found.update({op.name: os.path.basename(path) for op in ops.op})
    return found


def unservable(op_types) -> list[str]:
    """The op types of `op_types` the stock model server cannot run: not registered at all,
    or registered by a custom library (`custom_op_types`) but not in TF_SERVING_TEXT_OPS.
    Every other registered op is core TensorFlow's (registered without any custom library)."""
    from tensorflow.python.framework import op_def_registry

    custom = custom_op_types()
    return sorted(
        op
        for op in op_types
        if op_def_registry.get(op) is None or (op in custom and op not in TF_SERVING_TEXT_OPS)
    )


def assert_stock_server_links(version_dir) -> set[str]:
    """Asserts that every op type of the SavedModel at `version_dir` is one the stock model
    server links (`unservable` finds none); returns the tensorflow-text op types it uses,
    for the caller to check its text front end's ops are among them."""
    ops = saved_model_op_types(version_dir)
    assert "Const" in ops and len(ops) > 40, (version_dir, sorted(ops))  # (the walk found it)
    assert not unservable(ops), f"{version_dir}: {unservable(ops)}"
    return ops & TF_SERVING_TEXT_OPS


SENTENCEPIECE_OPS = {"SentencepieceOp", "SentencepieceTokenizeOp", "NormalizeUTF8"}
WORDPIECE_OPS = {"FastWordpieceTokenizeWithOffsets"}
