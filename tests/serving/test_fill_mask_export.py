"""`export --task fill_mask`: the SavedModel, run in a fresh process (tensorflow +
tensorflow_text only), answers as the Python `MaskFiller` (same ids and pieces, scores
within 1e-5, same filled texts) on real sentences with one or several masks, a mask
inside a word and at a word's start; its in-graph "[MASK]" rule gives the Python rule's
ids; bad input is one line. (The Python fill_mask itself is checked against Hugging
Face's pipeline in tests/training/test_fill_mask.py.)"""

import numpy as np
import pytest

from tests.serving.test_export import client
from tests.support.harness import SHARED_DATA, run_cli, tiny_config

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
    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.modeling.models import AlbertPretrainer
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    _texts()
    model = AlbertPretrainer(tiny_config(vocab_size=30000, max_position_embeddings=LENGTH))
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
    from albert_tf.serving.export import export
    from albert_tf.training.fill_mask import MaskFiller
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
    got = client(tmp_path, version, {"text": texts}, signature="fill_mask")
    want = MaskFiller(pretrained[0], pretrained[2], max_seq_length=LENGTH)(texts, top_k=TOP_K)
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


def test_bad_input_is_one_line(tmp_path, module, pretrained):
    import tensorflow as tf

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"no \[MASK\] in the text"):
        module.fill_mask(tf.constant(["Ein Satz ohne Maske.", "mit [MASK]"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_seq_length=64"):
        module.fill_mask(tf.constant(["[MASK] " + "wort " * 80]))
    out = tmp_path / "out"
    base = ["-m", "albert_tf.serving.export", "--task=fill_mask", f"--spm_model_file={SPM}"]
    run = run_cli(*base, f"--init_checkpoint={pretrained[1]}", f"--export_dir={out}",
                  "--export_format=tflite")  # fmt: skip
    assert run.returncode == 1
    assert (
        run.stderr.strip()
        .splitlines()[-1]
        .endswith("no on-device fill-mask file is written yet; export the savedmodel format")
    )
    assert not out.exists()


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
