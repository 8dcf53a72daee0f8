"""fill_mask against Hugging Face's `pipeline("fill-mask")` on `AlbertForMaskedLM` with the
same random weights: the same top-k ids and probabilities (1e-5) on real sentences, one
and several masks, SentencePiece and WordPiece.

Where both tokenizers give the same ids (masks between words: checked) the pipelines are
compared end to end. A mask inside a word is tokenized differently by design: Hugging Face
starts a new word after its [MASK] token ("Pa[MASK]s" → "▁", "s"), ours continues the
masked piece's word ("s"); there the comparison is at the id level, Hugging Face's model
run on our ids.
"""

import numpy as np
import pytest

from albert_tf.training.fill_mask import MaskFiller, fill_mask

TOL = 1e-5
TOP_K = 5


def hf_and_ours(directory, vocab_size):
    """A random Hugging Face AlbertForMaskedLM and our AlbertPretrainer with its weights
    (read_transformers + assign_official: the converter's path)."""
    from albert_tf.checkpoints import assign_official, read_transformers
    from albert_tf.modeling.models import AlbertPretrainer
    from tests.support.references import hf_model

    hf = hf_model(directory, "AlbertForMaskedLM", vocab_size=vocab_size, max_position_embeddings=96)
    config, weights, unknown = read_transformers(str(directory))
    assert not unknown
    model = AlbertPretrainer(config)
    model.build()
    result = assign_official(model, weights, str(directory))
    # (AlbertForMaskedLM has no pooler and no SOP head; fill-mask uses neither)
    assert not result.unused
    assert all(m.startswith(("bert/pooler/", "cls/seq_relationship/")) for m in result.missing)
    return hf, model


@pytest.fixture(scope="module")
def spm_models(tmp_path_factory):
    from tests.support.harness import SHARED_DATA

    spm = SHARED_DATA / "spm" / "de-30k-clean.model"
    if not spm.exists():
        pytest.skip(f"real data not available: {spm} is absent")
    directory = tmp_path_factory.mktemp("hf_mlm_spm")
    hf, ours = hf_and_ours(directory, 30000)
    (directory / "spiece.model").write_bytes(spm.read_bytes())
    return hf, ours, directory


def hf_pipeline(hf, tokenizer):
    from transformers import pipeline

    return pipeline("fill-mask", model=hf, tokenizer=tokenizer, top_k=TOP_K, device="cpu")


def per_mask(result):
    """Hugging Face's output for one text → a list per mask (one mask: a bare list)."""
    return result if isinstance(result[0], list) else [result]


def assert_same(ours, theirs):
    """ours: [mask][k] Fill; theirs: [mask][k] pipeline dicts."""
    assert len(ours) == len(theirs)
    for mine, hf in zip(ours, theirs):
        assert [f.token_id for f in mine] == [c["token"] for c in hf]
        np.testing.assert_allclose([f.score for f in mine], [c["score"] for c in hf], atol=TOL)


def hf_on_our_ids(hf, encoded):
    """Hugging Face's model on our ids: softmax over the vocabulary at our mask positions,
    top-k as (ids, probabilities) [P, k]."""
    import torch

    with torch.no_grad():
        logits = hf(input_ids=torch.tensor([encoded.input_ids])).logits[0]
        probs = torch.softmax(logits[encoded.mask_positions], dim=-1)
        top = torch.topk(probs, TOP_K, dim=-1)
    return top.indices.numpy(), top.values.numpy()


def real_sentences(n=6):
    from tests.support.harness import SHARED_DATA

    path = SHARED_DATA / "corpus" / "en_speeches" / "inaugural" / "2021-Biden.txt"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for line in lines[1 : n + 1]:
        words = line.split()[:24]
        k = len(words) // 2
        out.append(" ".join(words[:k] + ["[MASK]"] + words[k + 1 :]))
    return out


def test_sentencepiece_equals_hugging_face_pipeline(spm_models, tok):
    from transformers import AlbertTokenizer as HfAlbertTokenizer

    hf, model, directory = spm_models
    hf_tok = HfAlbertTokenizer.from_pretrained(str(directory))
    texts = real_sentences() + [
        "Die Hauptstadt von Frankreich ist [MASK].",
        "Der [MASK] ist heute [MASK] und kalt, aber 1,5 [MASK] sind [MASK].",
    ]
    filler = MaskFiller(model, tok)
    ours = filler(texts, TOP_K)
    pipe = hf_pipeline(hf, hf_tok)
    for text, mine in zip(texts, ours):
        from data_pipeline.tokenization.masked_text import encode_masked

        assert encode_masked(tok, text).input_ids == hf_tok(text)["input_ids"], text
        assert_same(mine, per_mask(pipe(text)))
    assert [len(r) for r in ours[-2:]] == [1, 4]
    best = ours[-2][0][0]
    assert best.sequence == "Die Hauptstadt von Frankreich ist " + (
        tok.id_to_piece(best.token_id).replace("\u2581", " ").lstrip() + "."
    )
    # Batched (padded) and one by one: the same candidates.
    alone = filler(texts[-1:], TOP_K)[0]
    for a, b in zip(alone, ours[-1]):
        assert [f.token_id for f in a] == [f.token_id for f in b]
        np.testing.assert_allclose([f.score for f in a], [f.score for f in b], atol=TOL)


def test_mask_inside_a_word_at_the_id_level(spm_models, tok):
    from data_pipeline.tokenization.masked_text import encode_masked

    hf, model, _ = spm_models
    for text in ("Pa[MASK]s ist schön.", "Die Demokra[MASK] ist [MASK]gil."):
        encoded = encode_masked(tok, text)
        ids, probs = hf_on_our_ids(hf, encoded)
        ours = fill_mask(model, tok, [text], TOP_K)[0]
        assert [[f.token_id for f in m] for m in ours] == ids.tolist()
        np.testing.assert_allclose([[f.score for f in m] for m in ours], probs, atol=TOL)
        # The glued continuation: the piece's text goes in without a space.
        first = ours[0][0]
        surface = tok.id_to_piece(first.token_id).replace("\u2581", " ")
        assert first.sequence == text.replace("[MASK]", surface, 1)


def test_wordpiece_equals_hugging_face_pipeline(tmp_path, wordpiece_vocab):
    from transformers import BertTokenizer

    from data_pipeline.tokenization.masked_text import encode_masked
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer
    from tests.support.harness import SHARED_DATA

    wp = WordPieceTokenizer(wordpiece_vocab)
    hf, model = hf_and_ours(tmp_path, wp.vocab_size)
    hf_tok = BertTokenizer(vocab=wordpiece_vocab)
    lines = (SHARED_DATA / "corpus" / "zh_news" / "news_zh_1.txt").read_text(encoding="utf-8")
    texts = [line[:40] for line in lines.splitlines() if len(line) > 20][:4]
    texts = [t[:5] + "[MASK]" + t[6:20] + "[MASK]" + t[21:] for t in texts]
    texts += ["The [MASK] of the people has been [MASK]."]
    ours = fill_mask(model, wp, texts, TOP_K)
    pipe = hf_pipeline(hf, hf_tok)
    for text, mine in zip(texts, ours):
        assert encode_masked(wp, text).input_ids == hf_tok(text)["input_ids"], text
        assert_same(mine, per_mask(pipe(text)))
    # Inside a word ("##" continuation here, a new word for Hugging Face): id level.
    encoded = encode_masked(wp, "democ[MASK]cy is precious")
    ids, probs = hf_on_our_ids(hf, encoded)
    mine = fill_mask(model, wp, ["democ[MASK]cy is precious"], TOP_K)[0]
    assert [f.token_id for f in mine[0]] == ids[0].tolist()
    np.testing.assert_allclose([f.score for f in mine[0]], probs[0], atol=TOL)


def test_bad_input_is_one_line(spm_models, tok):
    _, model, _ = spm_models
    with pytest.raises(ValueError, match=r"^text 1: no \[MASK\] in the text to fill: 'ohne'$"):
        fill_mask(model, tok, ["ein [MASK]", "ohne"])
    with pytest.raises(ValueError, match=r"^top_k=0: expected 1\.\.30000"):
        fill_mask(model, tok, ["ein [MASK]"], top_k=0)
    with pytest.raises(ValueError, match=r"^text 0: the text takes \d+ tokens"):
        fill_mask(model, tok, ["wort " * 100 + "[MASK]"])
    with pytest.raises(TypeError, match="list of texts"):
        fill_mask(model, tok, "ein [MASK]")
