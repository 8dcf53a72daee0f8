"""TF Serving's op set: every op type of every exported SavedModel (its graph def and every
function of its library, hence of every signature) is core TensorFlow or one of the
tensorflow-text ops the stock `tensorflow_model_server` links (tests/support/tf_serving_ops.py,
sourced from tensorflow/serving's build files).

Each kind's SavedModel is checked where a test already writes it (`assert_stock_server_links`
on the version directory), over the real SentencePiece model and over a WordPiece vocab.txt:
`CHECKED` below is that map, and the test here keeps it covering every kind of the serving
registry. What this file checks itself is the list and the check."""

from tests.support.harness import ROOT
from tests.support.tf_serving_ops import TF_SERVING_TEXT_OPS, custom_op_types, unservable

# kind → the test files that call assert_stock_server_links on that kind's SavedModel.
CHECKED = {
    "classifier": (
        "tests/serving/test_export.py",  # single text, SentencePiece
        "tests/serving/test_litert.py",  # text pair
        "tests/serving/test_export_dtype.py",  # float32 and bfloat16
        "tests/serving/test_export_wordpiece.py",  # WordPiece
    ),
    "multiple_choice": ("tests/serving/test_litert.py", "tests/serving/test_export_wordpiece.py"),
    "squad": ("tests/serving/test_litert.py", "tests/workflows/test_run_squad.py"),
    "token_classifier": (
        "tests/serving/test_token_classifier_serving.py",
        "tests/workflows/test_ner_workflow.py",
    ),
    "encoder": ("tests/serving/test_litert.py", "tests/serving/test_export_wordpiece.py"),
    "fill_mask": ("tests/serving/test_fill_mask_export.py",),
    "zero_shot": ("tests/serving/test_zero_shot.py",),
}


def test_every_kind_is_checked_where_its_savedmodel_is_written():
    from albert_tf.serving.registry import SERVING

    assert set(CHECKED) == set(SERVING)
    for kind, files in CHECKED.items():
        for name in files:
            assert "assert_stock_server_links(" in (ROOT / name).read_text(), (kind, name)


def test_the_list_names_real_custom_ops_and_the_check_catches_others(monkeypatch):
    from tests.support import tf_serving_ops

    custom = custom_op_types()
    assert TF_SERVING_TEXT_OPS <= set(custom)  # (every listed name is a tensorflow-text op)
    # The retired tf_sentencepiece op of the known failure: registered nowhere.
    assert unservable({"MatMul", "SentencepieceOp", "SentencepieceEncodeSparse"}) == [
        "SentencepieceEncodeSparse"
    ]
    # A custom op the server would not link is caught though registered here.
    monkeypatch.setattr(tf_serving_ops, "TF_SERVING_TEXT_OPS", TF_SERVING_TEXT_OPS - {"RougeL"})
    assert tf_serving_ops.unservable({"RougeL", "StringSplitV2"}) == ["RougeL"]
