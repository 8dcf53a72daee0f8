"""tokenizer.json of a SentencePiece model (data_pipeline.tokenization.tokenizer_json), run by
the `tokenizers` library alone: AlbertTokenizer's ids under every casing / accents option,
on real text and on the characters ALBERT's normalization treats specially; a model that is
not Unigram is refused in one line."""

import pytest

from tests.support.harness import SHARED_DATA

EDGE = [
    "Über die Brücke, sagt sie. Ärger naïve café",
    "Ein  ``Test'' mit 3,5 Tagen; 1,2,3 and 2014, 12,5 Tage; Seite 12, 7,",
    "ex-wife -- slow film . ( see ) £ 5 € – HELLO World",
    "a\x01b \x7f c\u200bd e\u00a0f\tg\n h",
    "   ",
    "",
]


def _texts():
    lines = (SHARED_DATA / "corpus" / "wikitext-2" / "valid.txt").read_text(encoding="utf-8")
    wiki = [t for t in lines.splitlines() if t.strip() and "<unk>" not in t][:300]
    sst = (SHARED_DATA / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8")
    return wiki + [line.split("\t")[0] for line in sst.splitlines()[1:201]] + EDGE


@pytest.mark.parametrize("lower, accents", [(True, False), (False, False), (True, True)])
def test_the_file_gives_albert_tokenizers_ids(shared_data, lower, accents):
    from tokenizers import Tokenizer

    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer
    from data_pipeline.tokenization.tokenizer_json import tokenizer_json

    model = shared_data / "spm" / "de-30k-clean.model"
    ours = AlbertTokenizer(str(model), do_lower_case=lower, keep_accents=accents)
    fast = Tokenizer.from_str(tokenizer_json(model.read_bytes(), lower, accents))
    texts = _texts()
    assert len(texts) == 300 + 200 + len(EDGE)
    for text in texts:
        assert fast.encode(text, add_special_tokens=False).ids == ours.encode(text), text
    pair = fast.encode("film .", "ex-wife")
    a, b = ours.encode("film ."), ours.encode("ex-wife")
    assert pair.ids == [ours.cls_id, *a, ours.sep_id, *b, ours.sep_id]
    assert pair.type_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1)


def test_a_model_that_is_not_unigram_is_refused(tmp_path, shared_data):
    import sentencepiece

    from data_pipeline.tokenization.tokenizer_json import is_unigram, tokenizer_json

    text = (shared_data / "corpus" / "wikitext-2" / "valid.txt").read_text(encoding="utf-8")
    (tmp_path / "corpus.txt").write_text("\n".join(text.splitlines()[:2000]), encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(tmp_path / "corpus.txt"),
        model_prefix=str(tmp_path / "bpe"),
        vocab_size=500,
        model_type="bpe",
        minloglevel=2,
    )
    model = (tmp_path / "bpe.model").read_bytes()
    assert not is_unigram(model)
    assert is_unigram((shared_data / "spm" / "de-30k-clean.model").read_bytes())
    with pytest.raises(ValueError, match="Unigram SentencePiece models; this one is of model"):
        tokenizer_json(model)
