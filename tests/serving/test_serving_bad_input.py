"""Bad requests to the SavedModels: an empty batch gives empty outputs of the
right dtypes and shapes; inputs of one request with different numbers of rows fail with a
message naming both sizes; NUL bytes and other control characters are tokenized in the
graph exactly as by the Python tokenizer (SentencePiece's own rules, as the official code).

One classifier SavedModel is exported for the module and loaded in-process; the other
kinds are checked through their signature functions, traced as the export traces them
(tiny models, the ../shared/data vocabulary).
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.serving.test_export import _finetuned, _in_memory

# NUL at the start, middle and end, runs of NULs, NUL as a word of its own, with other
# control characters (deleted or read as spaces by SentencePiece) and upper case around.
NUL_TEXTS = [
    "hello\x00world",
    "\x00Hello",
    "hello\x00",
    "\x00",
    "\x00\x00",
    "a\x00\x00b \x00\x00\x00",
    "x\x00 \x00Y and \x00 alone",
    "HELLO\x00WORLD Ärger\x00Über",
    "a\x01b \x7f c\u200bd e\x00\x01f",
    "\x0e\x1b\x1c\x1f\x80\x85\x9f\ufeff\u00ad end",
    "1,\x00 2,\x003 page 22,\x00",
]


@pytest.fixture(scope="module")
def spm(tok):
    return tok.model_file


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory, spm):
    """{kind: (in-memory model, fine-tuned model directory)}, all made before any serving
    module: `_finetuned` seeds Keras, and `tf.random.set_seed` clears TensorFlow's eager
    kernel cache, which frees the SentencePiece resource of a module built earlier."""
    tmp = tmp_path_factory.mktemp("finetuned")
    return {
        "classifier": _finetuned(tmp / "classifier", spm, text_pair=True),
        "multiple_choice": _finetuned(
            tmp / "mc", spm, kind="multiple_choice", labels=None, num_choices=3, text_pair=True
        ),
        "squad": _finetuned(
            tmp / "squad",
            spm,
            kind="squad",
            version_2_with_negative=True,
            doc_stride=16,
            max_query_length=16,
        ),
    }


@pytest.fixture(scope="module")
def classifier(finetuned, tmp_path_factory):
    """(in-memory pair classifier, its SavedModel loaded in-process): the module's one
    export."""
    from albert_tf.serving.export import export

    model, directory = finetuned["classifier"]
    version = export("classifier", directory, str(tmp_path_factory.mktemp("serving")))
    return model, tf.saved_model.load(version)


def _signatures(task, directory):
    """(module, signature functions) of a serving module, traced as for export."""
    from albert_tf.modeling.trace_options import trace_options
    from albert_tf.serving.export import build_module

    module = build_module(task, directory)
    with trace_options(portable_kernels=True):
        return module, module.signatures()


@pytest.fixture(scope="module")
def multiple_choice(finetuned):
    return _signatures("multiple_choice", finetuned["multiple_choice"][1])[1]["serving_default"]


@pytest.fixture(scope="module")
def encoder(finetuned):
    """embed / encode of the classifier's encoder (max_seq_length 48, hidden size 32)."""
    return _signatures("encoder", finetuned["classifier"][1])[1]


@pytest.fixture(scope="module")
def squad_module(finetuned):
    """(SquadServing, its serving_default) of a v2.0 model."""
    module, signatures = _signatures("squad", finetuned["squad"][1])
    return module, signatures["serving_default"]


@pytest.fixture(scope="module")
def squad(squad_module):
    return squad_module[1]


def _shapes(out):
    return {k: (tuple(v.shape), v.dtype) for k, v in out.items()}


# --- NUL and control characters ------------------------------------------------------------


@pytest.mark.parametrize("lower", [True, False])
def test_graph_tokenizer_equals_python_on_nul_and_control_characters(tok, lower):
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    python = AlbertTokenizer(tok.model_file, do_lower_case=lower)
    got = tf.function(python.graph_tokenizer())(tf.constant(NUL_TEXTS)).to_list()
    assert got == [python.encode(t) for t in NUL_TEXTS]
    # The official semantics (SentencePiece's): NUL is an unknown character, a run of NULs
    # one <unk>; \x01 and \x7f are deleted, \u200b separates words.
    assert python.tokenize("hello\x00world") == ["\u2581hell", "o", "\x00", "world"]
    assert python.encode("a\x00\x00b") == python.encode("a\x00b")
    assert python.unk_id in python.encode("\x00")
    assert python.encode("a\x01b") == python.encode("a\x7fb") == python.encode("ab")
    assert python.encode("a\u200bb") == python.encode("a b")


def test_exported_classifier_reads_nul_as_the_python_tokenizer(classifier, spm):
    model, loaded = classifier
    texts_a = NUL_TEXTS
    texts_b = list(reversed(NUL_TEXTS))
    a, b = tf.constant(texts_a), tf.constant(texts_b)
    want_logits, want = _in_memory(model, spm, texts_a, texts_b)
    ids = loaded.signatures["tokenize"](text_a=a, text_b=b)
    for key in want:
        np.testing.assert_array_equal(ids[key].numpy(), want[key])
    out = loaded.signatures["serving_default"](text_a=a, text_b=b)
    np.testing.assert_allclose(out["logits"].numpy(), want_logits, atol=1e-5)


def test_squad_context_with_nul(squad_module, tok):
    from data_pipeline.squad.offsets import OffsetTokenizer

    module, serving = squad_module
    contexts = ["Ada\x00 wrote \x00it.", "hello\x00world \x00\x00 x\x00y", "\x00"]
    # (in a tf.function: an eager SentencePiece op would free the resource the traced
    # signature shares with it)
    ids, starts, ends = tf.function(module._context_tokens)(tf.constant(contexts))
    # The runner's tokens (ids and character spans; all ASCII here, so bytes = characters).
    python = [OffsetTokenizer(tok).encode(c) for c in contexts]
    assert ids.to_list() == [p[0] for p in python]
    assert starts.to_list() == [p[1] for p in python]
    assert ends.to_list() == [p[2] for p in python]
    out = serving(question=tf.constant(["who?"] * 3), context=tf.constant(contexts))
    for context, answer, s, e in zip(
        contexts, *(out[k].numpy() for k in ("answer", "start", "end"))
    ):
        assert answer.decode() == (context[s:e] if s >= 0 else "")


# --- empty batches ---------------------------------------------------------------------------


def test_empty_batch_classifier(classifier):
    _, loaded = classifier
    empty = tf.constant([], tf.string)
    out = loaded.signatures["serving_default"](text_a=empty, text_b=empty)
    assert _shapes(out) == {
        "probabilities": ((0, 2), tf.float32),
        "logits": ((0, 2), tf.float32),
        "label": ((0,), tf.string),
    }
    ids = loaded.signatures["tokenize"](text_a=empty, text_b=empty)
    assert _shapes(ids) == {k: ((0, 48), tf.int32) for k in ids}


def test_empty_batch_multiple_choice(multiple_choice):
    empty = tf.constant([], tf.string)
    for choices in (3, 0):
        out = multiple_choice(
            passage=empty, question=empty, options=tf.zeros([0, choices], tf.string)
        )
        assert _shapes(out) == {
            "probabilities": ((0, choices), tf.float32),
            "logits": ((0, choices), tf.float32),
            "choice": ((0,), tf.int32),
        }
    # A request without options: [B, 0] probabilities, choice 0 (as for all-"" options).
    out = multiple_choice(
        passage=tf.constant(["p"]), question=tf.constant(["q"]), options=tf.zeros([1, 0], tf.string)
    )
    assert out["probabilities"].shape == (1, 0) and out["choice"].numpy().tolist() == [0]


def test_empty_batch_encoder(encoder):
    out = encoder["embed"](text=tf.constant([], tf.string))
    assert _shapes(out) == {
        "pooled_output": ((0, 32), tf.float32),
        "sequence_output": ((0, 48, 32), tf.float32),
        "input_mask": ((0, 48), tf.int32),
        "embeddings": ((0, 32), tf.float32),
    }
    out = encoder["vectors"](text=tf.constant([], tf.string))
    assert _shapes(out) == {"embeddings": ((0, 32), tf.float32)}
    out = encoder["similarity"](
        text_a=tf.constant([], tf.string), text_b=tf.constant([], tf.string)
    )
    assert _shapes(out) == {"similarity": ((0,), tf.float32)}
    zeros = tf.zeros([0, 48], tf.int32)
    out = encoder["encode"](input_ids=zeros, input_mask=zeros, segment_ids=zeros)
    assert _shapes(out) == {
        "pooled_output": ((0, 32), tf.float32),
        "sequence_output": ((0, 48, 32), tf.float32),
    }


def test_empty_batch_squad(squad):
    empty = tf.constant([], tf.string)
    out = squad(question=empty, context=empty)
    assert _shapes(out) == {
        "answer": ((0,), tf.string),
        "score": ((0,), tf.float32),
        "start": ((0,), tf.int32),
        "end": ((0,), tf.int32),
        "no_answer_probability": ((0,), tf.float32),
        "null_odds": ((0,), tf.float32),
    }
    out = squad(question=tf.constant(["who?"]), context=tf.constant(["Ada wrote it."]))
    assert _shapes(out)["answer"] == ((1,), tf.string)


# --- inputs of different sizes -------------------------------------------------------------


def test_squad_question_and_context_of_different_sizes(squad):
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="question has 3 rows but context has 2"
    ):
        squad(question=tf.constant(["a", "b", "c"]), context=tf.constant(["x", "y"]))


def test_multiple_choice_inputs_of_different_sizes(multiple_choice):
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="passage has 2 rows but options has 3"
    ):
        multiple_choice(
            passage=tf.constant(["p", "p"]),
            question=tf.constant(["q", "q"]),
            options=tf.constant([["a"], ["b"], ["c"]]),
        )
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="passage has 1 rows but question has 2"
    ):
        multiple_choice(
            passage=tf.constant(["p"]), question=tf.constant(["q", "q"]), options=[["a"]]
        )


def test_encoder_inputs_of_different_sizes(encoder):
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="input_ids has 2 rows but input_mask has 1"
    ):
        encoder["encode"](
            input_ids=tf.zeros([2, 48], tf.int32),
            input_mask=tf.zeros([1, 48], tf.int32),
            segment_ids=tf.zeros([2, 48], tf.int32),
        )


@pytest.mark.parametrize("sizes", [(3, 2), (1, 2), (2, 1), (0, 2)])
def test_classifier_pair_of_different_sizes_is_a_clear_error(classifier, sizes):
    """Also one row against several (which would otherwise broadcast silently)."""
    _, loaded = classifier
    a, b = (tf.constant(["some text"] * n, tf.string) for n in sizes)
    message = f"text_a has {sizes[0]} rows but text_b has {sizes[1]}"
    for signature in ("serving_default", "tokenize"):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            loaded.signatures[signature](text_a=a, text_b=b)


# --- writing the export ---------------------------------------------------------------------


def test_export_refuses_a_locked_directory_and_a_failed_write_leaves_nothing(
    finetuned, tmp_path, monkeypatch
):
    """Two exporters would both pick version N: the second fails at once naming the first.
    A save that fails (a full disk) is one OSError line and leaves no version, no temporary
    directory and no lock."""
    from albert_tf.serving import export as export_module
    from data_pipeline.io.locks import OutputLocked
    from tests.data_pipeline.io.test_output_lock import _hold

    _, directory = finetuned["classifier"]
    out = tmp_path / "serving"
    holder = _hold(out)
    try:
        with pytest.raises(OutputLocked, match=f"pid {holder.proc.pid}"):
            export_module.export("classifier", directory, str(out))
    finally:
        holder.kill()
    assert sorted(p.name for p in out.iterdir()) == [".lock"]  # the dead holder's record

    def full_disk(module, path, signatures=None):
        import os

        os.makedirs(os.path.join(path, "variables"))
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    monkeypatch.setattr(tf.saved_model, "save", full_disk)
    with pytest.raises(OSError, match=r"cannot write the SavedModel .*/1: No space left") as e:
        export_module.export("classifier", directory, str(out))
    assert "\n" not in str(e.value)
    assert sorted(p.name for p in out.iterdir()) == []
