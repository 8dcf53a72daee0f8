"""AlbertTokenizer: ALBERT's normalization, the official digit-comma split, and an
in-graph (tensorflow-text) path that gives identical ids on real text."""

import numpy as np
import pytest
import tensorflow as tf

from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer, normalize_text

TRICKY = [
    "Das kostet 1,50 Euro, 2018, und Größe ÄÖÜ café.",
    "  ``Hello''\u00a0 world\t\u3000X \u2028 end ",
    "İstanbul ΟΔΟΣ ὈΔΥΣΣΕΎΣ naïve façade",
    "ไทย ภาษา हिन्दी",
    "",
    "   ",
    "12, 3,4,5, a1, x9,y",
    "最后的南京老城该往何处去 城市化时代呼唤文化自觉，1981年出生于南京。",
    "emoji 🙂 and \x1c control\x85 chars",
]


@pytest.fixture(scope="module")
def de_model():
    from tests.support.harness import SHARED_DATA

    path = SHARED_DATA / "spm" / "de-30k-clean.model"
    if not path.is_file():
        pytest.skip(f"real SentencePiece model not available: {path}")
    return str(path)


def test_normalize_text():
    assert normalize_text("  a\t\n b\u00a0c\u3000 ") == "a b c"
    assert normalize_text("``Quote''") == '"quote"'
    assert normalize_text("Café Naïve ÅNGSTRÖM") == "cafe naive angstrom"
    assert normalize_text("Café", do_lower_case=False) == "Cafe"
    assert normalize_text("Café", keep_accents=True) == "café"


def test_special_ids_and_checksum(de_model):
    tok = AlbertTokenizer(de_model)
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.vocab_size == 30000
    assert len(tok.checksum) == 64


def test_bad_models(tmp_path, shared_data):
    with pytest.raises(FileNotFoundError, match="SentencePiece model not found: .*nope.model"):
        AlbertTokenizer(str(tmp_path / "nope.model"))
    with pytest.raises(
        ValueError,
        match=r"test_sentencepiece_1k.model: not an ALBERT "
        r"SentencePiece model, it lacks the pieces \['<pad>', '\[CLS\]'",
    ):
        AlbertTokenizer(str(shared_data / "spm" / "test_sentencepiece_1k.model"))


@pytest.fixture(scope="module")
def comma_model(tmp_path_factory):
    """A tiny ALBERT-recipe model whose vocabulary has "<digit>," pieces (user symbols
    "1," and "22,"), so that the official digit-comma split is exercised."""
    import sentencepiece as spm

    directory = tmp_path_factory.mktemp("spm")
    corpus = directory / "corpus.txt"
    words = ["alpha", "beta", "gamma", "delta", "one", "two", "page", "item", "total"]
    rng = np.random.default_rng(0)
    corpus.write_text(
        "\n".join(" ".join(rng.choice(words, 8)) + " 1, 22, 3.5" for _ in range(300)) + "\n"
    )
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(directory / "m"),
        vocab_size=28,
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["1,", "22,"],
        minloglevel=2,
    )
    return str(directory / "m.model")


def test_digit_comma_split(comma_model):
    tok = AlbertTokenizer(comma_model)
    texts = ["item 1, page 22,total", "x1,y", "221, 1,1,"]
    for text in texts:
        raw = tok.sp.encode_as_pieces(tok.normalize(text))
        assert any(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in raw)  # applies
        pieces = tok.tokenize(text)
        assert not any(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces)
        assert "".join(pieces).replace("\u2581", "") == tok.normalize(text).replace(" ", "")
    # Raw pieces ['▁', 'x', '1,', 'y']: "1" re-encodes as ['▁', '1']; the piece had no
    # leading ▁, so the lone '▁' is dropped and the comma stands alone (official algorithm).
    assert tok.sp.encode_as_pieces("x1,y") == ["\u2581", "x", "1,", "y"]
    assert tok.tokenize("x1,y") == ["\u2581", "x", "1", ",", "y"]
    assert tok.tokenize("page 22,total")[-7:] == ["\u2581", "22", ",", "t", "o", "ta", "l"]
    graph = tok.graph_tokenizer()
    assert graph(tf.constant(texts)).to_list() == [tok.encode(t) for t in texts]


@pytest.mark.parametrize("lower,accents", [(True, False), (False, False), (True, True)])
def test_graph_tokenizer_equals_python_on_real_text(de_model, shared_data, lower, accents):
    lines = TRICKY[:]
    lines += (
        (shared_data / "corpus" / "wikitext-2" / "valid.txt")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    lines += (
        (shared_data / "corpus" / "zh_news" / "news_zh_1.txt")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    for path in sorted((shared_data / "corpus" / "en_speeches" / "inaugural").glob("*.txt"))[:10]:
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    if accents:
        lines = lines[:800]
    tok = AlbertTokenizer(de_model, do_lower_case=lower, keep_accents=accents)
    graph = tok.graph_tokenizer()
    encode = tf.function(graph)
    mismatches = []
    for start in range(0, len(lines), 512):
        batch = lines[start : start + 512]
        got = encode(tf.constant(batch)).to_list()
        for text, ids in zip(batch, got):
            if ids != tok.encode(text):
                mismatches.append(text)
    assert len(lines) > 4000 or accents
    assert mismatches == [], f"{len(mismatches)} of {len(lines)} lines differ: {mismatches[:3]}"


def test_graph_tokenizer_in_tf_data(de_model):
    tok = AlbertTokenizer(de_model)
    dataset = tf.data.Dataset.from_tensor_slices(TRICKY).batch(4).map(tok.graph_tokenizer())
    got = [row for batch in dataset for row in batch.to_list()]
    assert got == [tok.encode(t) for t in TRICKY]
    assert all(isinstance(i, int) for row in got for i in row)
