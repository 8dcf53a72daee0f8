"""S02 / F05: every text-in SavedModel refuses a request over the one byte cap
(`request_windows.capped_signatures`: max_request_bytes of its max_windows and
max_seq_length) before tokenizing, with the error naming the limit and the request's size,
and answers a request within it as before. Before, the plain classifier tokenized a 10 MB
text whole to read its first 32 tokens and fill-mask did the same before refusing; the
SQuAD, NER and long-document exports already refused in the graph."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.serving.request_windows import DEFAULT_MAX_WINDOWS, max_request_bytes
from tests.serving.test_export import _finetuned, spm  # noqa: F401  (spm: a fixture)
from tests.support.tiny import tiny_config

TEXT = "the people of this nation have chosen a new government"


def _over(limit: int) -> str:
    words = (TEXT + " ") * (limit // (len(TEXT) + 1) + 2)
    return words[: limit + 1]


def _refused(fn, limit: int, model: str, **inputs):
    with pytest.raises(tf.errors.InvalidArgumentError) as excinfo:
        fn(**inputs)
    size = sum(len(v.encode()) for vs in inputs.values() for v in vs.numpy().astype(str))
    message = excinfo.value.message
    assert f"the request holds {size} bytes" in message, message
    assert f"this {model} reads at most {limit:,} per request" in message, message


def test_plain_classifier_refuses_an_oversized_request(tmp_path, spm):  # noqa: F811
    from albert_tf.serving.export import export

    _, directory = _finetuned(tmp_path, spm)  # max_seq_length 48, no doc_stride
    loaded = tf.saved_model.load(export("classifier", directory, str(tmp_path / "export")))
    limit = max_request_bytes(DEFAULT_MAX_WINDOWS, 48)
    assert limit == 1_572_864
    serve = loaded.signatures["serving_default"]
    small = serve(text_a=tf.constant([TEXT, "a"]))["probabilities"].numpy()
    assert small.shape == (2, 2) and np.allclose(small.sum(-1), 1)
    big = tf.constant([_over(limit)])
    _refused(serve, limit, "classifier", text_a=big)
    # Two texts together over the cap, each under it: the request's bytes count.
    half = tf.constant([_over(limit // 2), _over(limit // 2)])
    _refused(serve, limit, "classifier", text_a=half)
    _refused(
        loaded.signatures["tokenize"], limit, "classifier", text_a=big, text_b=tf.constant([""])
    )


def test_fill_mask_refuses_an_oversized_request(tmp_path, spm):  # noqa: F811
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.models import AlbertPretrainer
    from albert_tf.serving.export import export
    from data_pipeline.tokenization.spec import TokenizerSpec

    keras.utils.set_random_seed(2)
    config = tiny_config(vocab_size=30000, max_position_embeddings=64)
    model = AlbertPretrainer(config)
    model.build()
    save_checkpoint(model, str(tmp_path / "pre"))
    version = export(
        "fill_mask",
        str(tmp_path / "pre"),
        str(tmp_path / "export"),
        tokenizer=TokenizerSpec.from_files(spm),
        max_seq_length=32,
    )
    fill = tf.saved_model.load(version).signatures["serving_default"]
    answer = fill(text=tf.constant([TEXT + " [MASK] ."]))
    assert answer["mask_count"].numpy().tolist() == [1]
    limit = max_request_bytes(DEFAULT_MAX_WINDOWS, 32)
    _refused(fill, limit, "fill-mask model", text=tf.constant([_over(limit) + " [MASK]"]))
