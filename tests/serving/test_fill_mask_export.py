"""`export --task fill_mask`: the SavedModel, loaded as a client loads it
(tests/support/serving_client.py), answers as the Python `MaskFiller` (same ids and pieces, scores
within 1e-5, same filled texts) on real sentences with one or several masks, a mask
inside a word and at a word's start; its in-graph "[MASK]" rule gives the Python rule's
ids; bad input is one line. SentencePiece and WordPiece; the WordPiece export also
against Hugging Face's pipeline on the same (converted) weights, and its LiteRT file
against the SavedModel. (The Python fill_mask itself is checked against Hugging Face's
pipeline in tests/training/test_fill_mask.py; the SentencePiece LiteRT file in a fresh
process in tests/serving/test_fill_mask_litert.py.)"""

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, tiny_config
from tests.support.serving_client import served
from tests.support.tf_serving_ops import SENTENCEPIECE_OPS, WORDPIECE_OPS, assert_stock_server_links

SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
STSB = SHARED_DATA / "glue" / "STS-B" / "dev.tsv"
LENGTH = 64
TOP_K = 4


def _texts():
    """Real STS-B dev sentences with masks put in: a whole word, two words, a word's
    end ("Pa[MASK]s" style), a word's start, at the text's start and before a period."""
    if not SPM.exists() or not STSB.exists():
        pytest.skip(f"{SPM} or {STSB} is absent (../shared/data)")
    rows = [line.split("\t") for line in STSB.read_text(encoding="utf-8").splitlines()[1:40]]
    sentences = [r[7] for r in rows]
    texts = []
    for i, s in enumerate(sentences[:18]):
        words = s.split(" ")
        w = 1 + i % max(1, len(words) - 2)
        kind = i % 6
        if kind == 0:
            words[w] = "[MASK]"
        elif kind == 1:
            words[w], words[-1] = "[MASK]", "[MASK]."
        elif kind == 2:
            words[w] = words[w][:2] + "[MASK]"
        elif kind == 3:
            words[w] = "[MASK]" + words[w][2:]
        elif kind == 4:
            words[0] = "[MASK]"
        else:
            words[w] = words[w][:1] + "[MASK]" + words[w][3:] + ","
        texts.append(" ".join(words))
    return texts + ["[MASK][MASK] 12,5 Tage", "ÄRGER über [MASK]tür!"]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.models import AlbertPretrainer
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    _texts()
    # Weights of a trained model's spread (not the 0.02 init): peaked probabilities, so the
    # top-k order is no near-tie that rounding could flip, and 1e-5 on scores means something.
    keras.utils.set_random_seed(0)
    config = tiny_config(vocab_size=30000, max_position_embeddings=LENGTH, initializer_range=0.3)
    model = AlbertPretrainer(config)
    model.build()
    path = str(tmp_path_factory.mktemp("pre") / "pre")
    save_checkpoint(model, path)
    return model, path, AlbertTokenizer(str(SPM))


@pytest.fixture(scope="module")
def module(pretrained):
    from albert_tf.serving.export import build_module
    from data_pipeline.tokenization.spec import TokenizerSpec

    return build_module(
        "fill_mask",
        pretrained[1],
        tokenizer=TokenizerSpec.from_files(str(SPM)),
        max_seq_length=LENGTH,
        top_k=TOP_K,
    )


def test_in_graph_mask_rule_gives_the_python_ids(module, pretrained):
    import tensorflow as tf

    from data_pipeline.tokenization.masked_text import encode_masked

    texts = _texts()
    got = module.encode_masked(tf.constant(texts))
    for i, text in enumerate(texts):
        want = encode_masked(pretrained[2], text, LENGTH)
        n, m = len(want.input_ids), len(want.mask_positions)
        assert got["input_ids"][i, :n].numpy().tolist() == want.input_ids, text
        assert int(got["input_mask"][i].numpy().sum()) == n
        assert got["mask_positions"][i, :m].numpy().tolist() == want.mask_positions
        assert int(got["mask_count"][i]) == m


def test_savedmodel_in_a_fresh_process_answers_as_python(tmp_path, pretrained):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (its ops, for loading the SavedModel here too)

    from albert_tf.serving.export import export
    from albert_tf.training.fill_mask import MaskFiller
    from data_pipeline.tokenization.masked_text import encode_masked
    from data_pipeline.tokenization.spec import TokenizerSpec

    texts = _texts()
    version = export(
        "fill_mask",
        pretrained[1],
        str(tmp_path / "serving"),
        tokenizer=TokenizerSpec.from_files(str(SPM)),
        max_seq_length=LENGTH,
        top_k=TOP_K,
    )
    assert SENTENCEPIECE_OPS <= assert_stock_server_links(version)  # (TF Serving's ops)
    got = served(version, {"text": texts}, signature="fill_mask")
    want = MaskFiller(pretrained[0], pretrained[2], max_seq_length=LENGTH)(texts, top_k=TOP_K)
    # The loaded graph's ids: its two SentencePiece models (the model's and the prefix-less
    # one of glued fragments) stay two once loaded.
    loaded = tf.saved_model.load(version).signatures["encode_masked"](text=tf.constant(texts))
    for i, text in enumerate(texts):
        ids = encode_masked(pretrained[2], text, LENGTH).input_ids
        assert loaded["input_ids"][i, : len(ids)].numpy().tolist() == ids, text
    several = 0
    for i, per_mask in enumerate(want):
        assert got["mask_count"][i] == len(per_mask)
        several += len(per_mask) > 1
        for m, fills in enumerate(per_mask):
            assert got["token_ids"][i, m].tolist() == [f.token_id for f in fills], texts[i]
            np.testing.assert_allclose(got["scores"][i, m], [f.score for f in fills], atol=1e-5)
            assert [t.decode() for t in got["tokens"][i, m]] == [f.token for f in fills]
            assert [t.decode() for t in got["sequences"][i, m]] == [f.sequence for f in fills]
        for m in range(len(per_mask), got["token_ids"].shape[1]):  # beyond its masks
            assert (got["token_ids"][i, m] == -1).all() and not got["scores"][i, m].any()
    assert several >= 3
    assert got["scores"][:, :, 0].max() > 10 / 30000  # (peaked: not a uniform tie)


def test_bad_input_is_one_line(tmp_path, module, pretrained):
    import tensorflow as tf

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"no \[MASK\] in the text"):
        module.fill_mask(tf.constant(["Ein Satz ohne Maske.", "mit [MASK]"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_seq_length=64"):
        module.fill_mask(tf.constant(["[MASK] " + "wort " * 80]))


def test_a_checkpoint_without_the_mlm_head_is_refused(tmp_path, pretrained):
    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.serving.export import build_module
    from data_pipeline.tokenization.spec import TokenizerSpec

    save_checkpoint(pretrained[0].encoder, str(tmp_path / "enc"))
    with pytest.raises(ValueError, match="has no masked-LM head") as e:
        build_module(
            "fill_mask", str(tmp_path / "enc"), tokenizer=TokenizerSpec.from_files(str(SPM))
        )
    assert "\n" not in str(e.value)


def _wordpiece_texts():
    """Real Chinese news and English speech lines with masks put in: between characters,
    two in a text, glued to a CJK character, inside an English word ("##" pieces),
    before punctuation and a word too long to split (one [UNK])."""
    zh = (SHARED_DATA / "corpus" / "zh_news" / "news_zh_1.txt").read_text(encoding="utf-8")
    en = SHARED_DATA / "corpus" / "en_speeches" / "inaugural" / "2021-Biden.txt"
    zh_lines = [line[:40] for line in zh.splitlines() if len(line) > 24][:4]
    en_lines = [" ".join(line.split()[:14]) for line in en.read_text().splitlines()[1:40]]
    en_lines = [line for line in en_lines if len(line.split()) > 8][:4]
    texts = [t[:5] + "[MASK]" + t[6:20] + "[MASK]" + t[21:] for t in zh_lines[:2]]
    texts += [t[:7] + "[MASK]" + t[7:] for t in zh_lines[2:]]
    for i, line in enumerate(en_lines):
        words = line.split(" ")
        w = 2 + i
        if i % 2:
            words[w] = "[MASK]" + words[w][2:]
        else:
            words[w] = words[w][:3] + "[MASK]" + words[w][4:]
        words[-1] = "[MASK]."
        texts.append(" ".join(words))
    return texts + ["democ[MASK]cy[MASK]. 中[MASK]国", "a[MASK]" + "b" * 120 + " c[MASK]!"]


@pytest.fixture(scope="module")
def wordpiece(tmp_path_factory, wordpiece_vocab):
    """A random Hugging Face AlbertForMaskedLM and our AlbertPretrainer with its weights
    (the converter's path), saved as our checkpoint, with the WordPiece tokenizers."""
    from transformers import BertTokenizer

    from albert_tf.checkpoints import save_checkpoint
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer
    from tests.training.test_fill_mask import hf_and_ours

    wp = WordPieceTokenizer(wordpiece_vocab)
    tmp = tmp_path_factory.mktemp("wp-fill")
    hf, model = hf_and_ours(tmp / "hf", wp.vocab_size)
    save_checkpoint(model, str(tmp / "ckpt"))
    return hf, model, str(tmp / "ckpt"), wp, BertTokenizer(vocab=wordpiece_vocab)


def test_wordpiece_export_answers_as_python_hugging_face_and_its_litert_file(
    tmp_path, wordpiece, wordpiece_vocab
):
    import tensorflow as tf

    from albert_tf.serving.export import export_formats
    from albert_tf.serving.tflite_predict import LiteModel
    from albert_tf.training.fill_mask import MaskFiller
    from data_pipeline.tokenization.masked_text import encode_masked
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.training.test_fill_mask import hf_pipeline, per_mask

    hf, model, checkpoint, wp, hf_tok = wordpiece
    texts = _wordpiece_texts()
    version, lite = export_formats(
        "fill_mask",
        checkpoint,
        str(tmp_path / "serving"),
        ("savedmodel", "tflite"),
        tokenizer=TokenizerSpec.from_files(vocab_file=wordpiece_vocab),
        max_seq_length=LENGTH,
        top_k=TOP_K,
    )
    assert (tmp_path / "serving" / "1" / "assets" / "vocab.txt").read_bytes() == open(
        wordpiece_vocab, "rb"
    ).read()
    assert WORDPIECE_OPS <= assert_stock_server_links(version)  # (TF Serving's ops)
    got = served(version, {"text": texts}, signature="fill_mask")
    loaded = tf.saved_model.load(version)
    ids = {
        k: v.numpy() for k, v in loaded.signatures["encode_masked"](text=tf.constant(texts)).items()
    }
    want = MaskFiller(model, wp, max_seq_length=LENGTH)(texts, top_k=TOP_K)
    on_device = LiteModel(lite, num_threads=1).fill(texts)
    pipe = hf_pipeline(hf, hf_tok)
    compared, inside = 0, 0
    for i, (text, per_mask_want) in enumerate(zip(texts, want)):
        encoded = encode_masked(wp, text, LENGTH)
        n = len(encoded.input_ids)
        assert ids["input_ids"][i, :n].tolist() == encoded.input_ids, text  # the in-graph rule
        assert ids["mask_positions"][i, : len(encoded.mask_positions)].tolist() == (
            encoded.mask_positions
        )
        pieces = [wp.id_to_piece(t) for t in encoded.input_ids]
        inside += any(p.startswith("##") for p in pieces)
        assert got["mask_count"][i] == len(per_mask_want) == len(on_device[i])
        for m, fills in enumerate(per_mask_want):
            assert got["token_ids"][i, m].tolist() == [f.token_id for f in fills], text
            assert [c["token_id"] for c in on_device[i][m]] == [f.token_id for f in fills]
            np.testing.assert_allclose(got["scores"][i, m], [f.score for f in fills], atol=1e-5)
            np.testing.assert_allclose(
                [c["score"] for c in on_device[i][m]], got["scores"][i, m], atol=1e-5
            )
            sequences = [f.sequence for f in fills]
            assert [t.decode() for t in got["sequences"][i, m]] == sequences
            assert [c["sequence"] for c in on_device[i][m]] == sequences
            assert [c["token"] for c in on_device[i][m]] == [f.token for f in fills]
        if encoded.input_ids == hf_tok(text)["input_ids"]:  # masks between words
            compared += 1
            for m, hf_fills in enumerate(per_mask(pipe(text))):  # (its top 5)
                hf_fills = hf_fills[:TOP_K]
                assert got["token_ids"][i, m].tolist() == [c["token"] for c in hf_fills]
                np.testing.assert_allclose(
                    got["scores"][i, m], [c["score"] for c in hf_fills], atol=1e-5
                )
    assert compared >= 4 and inside >= 3
    assert got["scores"][:, :, 0].max() > 5 / wp.vocab_size  # (peaked: not a uniform tie)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"no \[MASK\] in the text"):
        loaded.signatures["fill_mask"](text=tf.constant(["没有"]))
