"""WordPiece (data_pipeline.tokenization.wordpiece): the Python path (Hugging Face `tokenizers`),
the in-graph path (tensorflow-text) and BERT's tokenizer as an oracle give the same ids.

The oracle is Hugging Face's pure-Python `BertTokenizerLegacy` (transformers 5 renamed the
slow `BertTokenizer`; `BertTokenizer` is now the Rust one, which would not be independent),
used test-only. The vocabulary is built by `tests/support/wordpiece_reference.py:build_vocab`
from the zh and en corpora once per session: 21,128 entries, every CJK character of the
corpora and its `##` form plus learned pieces. The Python and in-graph paths are compared on
every line of zh_news, en_speeches, ChnSentiCorp, AFQMC and CMRC 2018; the oracle, slow, on every
8th line of each (`python -m bench.wordpiece --oracle` compares every line).
"""

import pytest

from tests.support import wordpiece_reference
from tests.support.harness import SHARED_DATA

ORACLE_STRIDE = 8


@pytest.fixture(scope="session")
def corpora():
    """{name: every line / text} of the zh and en corpora and the Chinese task data."""
    if not (SHARED_DATA / "corpus").is_dir() or not (SHARED_DATA / "chinese").is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    texts = {name: wordpiece_reference.read_lines(f) for name, f in _corpus_files().items()}
    texts.update(wordpiece_reference.task_texts(str(SHARED_DATA)))
    return texts


def _corpus_files():
    return wordpiece_reference.corpus_files(str(SHARED_DATA))


@pytest.fixture(scope="session")
def vocab_file(tmp_path_factory, corpora):
    path = tmp_path_factory.mktemp("wordpiece") / "vocab.txt"
    files = [f for fs in _corpus_files().values() for f in fs]
    wordpiece_reference.build_vocab(files, str(path))
    return str(path)


@pytest.fixture(scope="session")
def wp(vocab_file):
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(vocab_file, do_lower_case=True)


@pytest.fixture(scope="session")
def oracle(vocab_file):
    transformers_bert = pytest.importorskip("transformers.models.bert.tokenization_bert_legacy")
    return transformers_bert.BertTokenizerLegacy(vocab_file, do_lower_case=True)


def oracle_ids(oracle, text):
    return oracle.convert_tokens_to_ids(oracle.tokenize(text))


def test_vocabulary_like_the_official_chinese(wp, corpora):
    assert wp.vocab_size == 21128
    assert (wp.pad_id, wp.unk_id, wp.cls_id, wp.sep_id, wp.mask_id) == (0, 100, 101, 102, 103)
    cjk = {c for t in corpora["zh_news"] for c in t if wordpiece_reference._is_cjk(ord(c))}
    assert len(cjk) > 3000
    assert all(c in wp.token_to_id and "##" + c in wp.token_to_id for c in cjk)


def test_python_and_graph_ids_equal_on_every_line(wp, corpora):
    """Every line of the five corpora (68,648 texts), in batches through one tf.function."""
    import tensorflow as tf

    graph = wp.graph_tokenizer()
    encode = tf.function(graph, input_signature=[tf.TensorSpec([None], tf.string)])
    for name, lines in corpora.items():
        ours = wp.encode_batch(lines)
        got = []
        for i in range(0, len(lines), 4096):
            got += encode(tf.constant(lines[i : i + 4096])).to_list()
        different = [i for i in range(len(lines)) if got[i] != ours[i]]
        assert not different, (name, len(different), lines[different[0]][:80])


def test_ids_equal_bert_oracle(wp, oracle, corpora):
    """Every 8th line of each corpus (deterministic): encode_batch, encode and the oracle."""
    for name, lines in corpora.items():
        sample = lines[::ORACLE_STRIDE]
        expected = [oracle_ids(oracle, t) for t in sample]
        assert wp.encode_batch(sample) == expected, name
        assert [wp.encode(t) for t in sample[:200]] == expected[:200], name
    assert sum(len(x) for x in wp.encode_batch(corpora["AFQMC"][:2000])) > 0


EDGE_CASES = [
    "hello\x00world",  # NUL and controls are deleted, not spaces: one word
    "a\x07b\u200bc\ufeffd",  # BEL (Cc), zero-width space and BOM (Cf) deleted
    "x\ufffdy",  # U+FFFD deleted (invalid UTF-8 read with errors="replace")
    "\u2028x\u2029y\x85z\u3000w\xa0v",  # line/paragraph separators, NEL, ideographic space
    "１２３，ＡＢＣ。ﬁ",  # full-width forms and ligatures are not NFKC-folded
    "Crème Brûlée, Ünïcödé e\u0301",  # accents stripped under do_lower_case
    "İstanbul ΟΔΟΣ ὈΔΥΣΣΕΎΣ",  # lowercasing that adds marks; Greek final sigma
    "\u0f40\u0f73\u0f74 \U0001d15f\U0001d165\U0001d16e a\u0f71\u0301",  # marks NFD reorders
    "[CLS] text [SEP] [MASK] [UNK] [PAD]",  # special tokens spelled in text are text
    "a" * 100 + " " + "b" * 101,  # over 100 characters: [UNK]
    "中" * 150 + "abc中文def",  # CJK characters are words of their own, long runs too
    "𠀀𪜀\U0002b740\U0002b820\U0002f800\uf900\u3400",  # CJK extensions, compatibility
    'don\'t "quote" (paren) $5.00 #hash ##x @user ¿qué? «guillemets» — dash…',
    "tab\tnew\nline\r\n  spaces   ",
    "",
    "   ",
    "\U0001f600 emoji \U0001f1fa\U0001f1f8 flags",
    "\ue000private\U000f0000use",  # private use (Co) is deleted
]


@pytest.fixture(scope="session")
def edge_vocab(tmp_path_factory):
    """A vocabulary holding the edge cases' words, so ids tell differences apart."""
    import collections

    head = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = collections.Counter()
    for text in EDGE_CASES:
        cased, lower = (wordpiece_reference._basic_words(text, x) for x in (False, True))
        for word in cased + lower:
            if len(word) <= 100:
                words[word] += 1
                words.update(word)  # every character, and its ## form
                words.update("##" + c for c in word)
    path = tmp_path_factory.mktemp("edge") / "vocab.txt"
    tokens = head + sorted(set(words) - set(head))
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path), {t: i for i, t in enumerate(tokens)}


@pytest.mark.parametrize("lower", [True, False])
def test_edge_cases(edge_vocab, lower):
    """Ours (Python and in-graph) vs the plain-Python reference written from the official
    algorithm (tests/support/wordpiece_reference.py) on control, whitespace, CJK, accent, case,
    punctuation and length edge cases; and vs the oracle except where it departs from the official
    code (it matches special tokens spelled in text)."""
    import tensorflow as tf

    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    path, vocab = edge_vocab
    wp = WordPieceTokenizer(path, do_lower_case=lower)
    expected = [wordpiece_reference.reference_encode(t, vocab, lower) for t in EDGE_CASES]
    assert [wp.encode(t) for t in EDGE_CASES] == expected
    assert wp.encode_batch(EDGE_CASES) == expected
    assert wp.graph_tokenizer()(tf.constant(EDGE_CASES)).to_list() == expected
    if lower:
        oracle_module = pytest.importorskip("transformers.models.bert.tokenization_bert_legacy")
        oracle = oracle_module.BertTokenizerLegacy(path, do_lower_case=True)
        for text, ids in zip(EDGE_CASES, expected):
            if "[CLS]" not in text:
                assert oracle_ids(oracle, text) == ids, text
        assert oracle.tokenize("[CLS] x") == ["[CLS]", "x"]  # the oracle's departure
    assert wp.tokenize("[CLS] x") == ["[", "cls" if lower else "CLS", "]", "x"]


def test_cjk_spacing_commutes_with_case_and_accents():
    """WordPieceTokenizer spaces CJK characters after lowercasing and stripping accents
    (the official code before): the same when lowercasing + NFD maps no CJK character to
    anything but CJK characters and marks, and no other character to a CJK one."""
    import sys
    import unicodedata

    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        cjk = wordpiece_reference._is_cjk(cp)
        for c in unicodedata.normalize("NFD", chr(cp).lower()):
            if wordpiece_reference._is_cjk(ord(c)) != cjk:
                assert cjk and unicodedata.category(c) == "Mn", hex(cp)


def test_savedmodel_text_to_ids(wp, vocab_file, corpora, tmp_path):
    """The serving tier's TextTokenizer: saved, reloaded, same ids; vocab.txt in assets."""
    import tensorflow as tf

    from albert_tf.serving.text_tokenizer import TextTokenizer
    from data_pipeline.tokenization.spec import TokenizerSpec

    module = TextTokenizer(TokenizerSpec.from_files(vocab_file=vocab_file, do_lower_case=True))
    tf.saved_model.save(module, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    lines = corpora["zh_news"][:300] + corpora["en_speeches"][:300] + [b"bad \xff utf-8"]
    got = loaded.ids(tf.constant(lines)).to_list()
    text = [t if isinstance(t, str) else t.decode("utf-8", "replace") for t in lines]
    assert got == wp.encode_batch(text)
    assert (tmp_path / "m" / "assets" / "vocab.txt").read_bytes() == open(vocab_file, "rb").read()
    assert loaded.tokenizer_kind.numpy() == b"wordpiece"
    assert loaded.vocabulary_sha256.numpy().decode() == wp.checksum


def test_bad_vocab_files(tmp_path):
    from data_pipeline.tokenization.spec import TokenizerSpec
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    missing = tmp_path / "absent.txt"
    with pytest.raises(FileNotFoundError, match=f"WordPiece vocabulary not found: {missing}$"):
        WordPieceTokenizer(str(missing))
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    with pytest.raises(ValueError, match=rf"^{no_mask}: .*lacks the tokens \['\[MASK\]'\]"):
        WordPieceTokenizer(str(no_mask))
    twice = tmp_path / "twice.txt"
    twice.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nhello\n")
    with pytest.raises(ValueError, match=rf"^{twice}: token 'hello' appears twice"):
        WordPieceTokenizer(str(twice))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe[PAD]\n")
    with pytest.raises(ValueError, match=rf"^{binary}: not a WordPiece vocab.txt"):
        WordPieceTokenizer(str(binary))
    with pytest.raises(ValueError, match="give a tokenizer.*neither given"):
        TokenizerSpec.from_files(None, None).build()
    # Both: the SentencePiece model is the tokenizer and the vocab file is not read (the
    # official precedence), so the missing model is what fails.
    with pytest.raises(FileNotFoundError, match="a.model"):
        TokenizerSpec.from_files("a.model", str(no_mask)).build()
    with pytest.raises(ValueError) as error:
        TokenizerSpec.from_files(spm_model_file="", vocab_file="").build()
    assert "\n" not in str(error.value)


def test_interface_like_albert_tokenizer(wp):
    """What the data tools use: tables for masking, pieces, checksum."""
    word_start, special, ordinary = wp.vocab_tables()
    assert word_start.shape == special.shape == (wp.vocab_size,)
    assert not word_start[wp.token_to_id["##的"]] and word_start[wp.token_to_id["的"]]
    assert special.sum() == 5 and special[[wp.cls_id, wp.sep_id, wp.mask_id]].all()
    assert len(ordinary) == wp.vocab_size - 5 - 99  # not special, not [unusedN]
    assert wp.id_to_piece(wp.mask_id) == "[MASK]"
    assert len(wp.checksum) == 64
    assert wp.tokenize("中文BERT") == ["中", "文"] + wp.tokenize("BERT")
