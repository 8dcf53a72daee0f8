"""Text with literal "[MASK]" → ids: the mask id for each, the fragments tokenized as the
tokenizer does, glued fragments as a word's inside; no mask or too long is one line."""

import pytest

from data_pipeline.tokenization.masked_text import encode_masked


def pieces(tok, ids):
    return [tok.id_to_piece(i) for i in ids]


def corpus_lines(shared_data, n=40):
    path = shared_data / "corpus" / "en_speeches" / "inaugural" / "2021-Biden.txt"
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [line[:300] for line in lines if len(line.split()) > 8][:n]


def test_a_masked_word_is_one_mask_between_the_words_ids(tok, shared_data):
    """Any space-separated word replaced by [MASK]: the ids are the text's own with that
    word's pieces replaced by one mask id (SentencePiece encodes word by word)."""
    for line in corpus_lines(shared_data):
        words = line.split()
        for k in (0, len(words) // 2, len(words) - 1):
            masked = " ".join(words[:k] + ["[MASK]"] + words[k + 1 :])
            got = encode_masked(tok, masked)
            want = (
                [tok.cls_id]
                + tok.encode(" ".join(words[:k]))
                + [tok.mask_id]
                + tok.encode(" ".join(words[k + 1 :]))
                + [tok.sep_id]
            )
            assert got.input_ids == want, masked
            assert got.mask_positions == [1 + len(tok.encode(" ".join(words[:k])))]
            start = masked.index("[MASK]")
            assert got.mask_spans == [(start, start + 6)]


def test_sentencepiece_cases(tok):
    got = encode_masked(tok, "Die Hauptstadt von Frankreich ist [MASK].")
    assert pieces(tok, got.input_ids[-4:]) == ["▁ist", "[MASK]", ".", "[SEP]"]
    # Inside a word: the glued fragment has no word-start "▁".
    got = encode_masked(tok, "Pa[MASK]s ist [MASK] schön")
    assert pieces(tok, got.input_ids) == [
        "[CLS]",
        "▁",
        "pa",
        "[MASK]",
        "s",
        "▁ist",
        "[MASK]",
        "▁schon",
        "[SEP]",
    ]
    assert got.mask_positions == [3, 6]
    # Adjacent masks; the official "<digit>," split also in a glued fragment.
    got = encode_masked(tok, "[MASK][MASK] kam 1995,[MASK]12,5, an")
    assert pieces(tok, got.input_ids) == [
        "[CLS]",
        "[MASK]",
        "[MASK]",
        "▁kam",
        "▁1995",
        ",",
        "[MASK]",
        "1",
        "2,5",
        ",",
        "▁an",
        "[SEP]",
    ]
    assert got.mask_positions == [1, 2, 6]
    # Lower-case "[mask]" is text, not a mask.
    got = encode_masked(tok, "[mask] und [MASK]")
    assert got.input_ids[1:-2] == tok.encode("[mask] und") and got.mask_positions == [6]


def test_wordpiece_cases(wordpiece_vocab):
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    wp = WordPieceTokenizer(wordpiece_vocab)
    got = encode_masked(wp, "北京是中国的[MASK]都。")
    assert pieces(wp, got.input_ids) == [
        "[CLS]",
        "北",
        "京",
        "是",
        "中",
        "国",
        "的",
        "[MASK]",
        "都",
        "。",
        "[SEP]",
    ]
    got = encode_masked(wp, "The [MASK] of the people.")
    assert got.input_ids == [wp.cls_id] + wp.encode("The") + [wp.mask_id] + wp.encode(
        "of the people."
    ) + [wp.sep_id]
    # Inside a word: "##" pieces; punctuation after a mask is a word of its own.
    got = encode_masked(wp, "democ[MASK]cy[MASK].")
    tokens = pieces(wp, got.input_ids)
    assert tokens[-3:] == ["[MASK]", ".", "[SEP]"]
    inside = tokens[tokens.index("[MASK]") + 1 : -3]
    assert inside and all(t.startswith("##") for t in inside)
    assert "".join(t[2:] for t in inside) == "cy"


@pytest.mark.parametrize("text", ["no mask here", "", "[mask] lower case"])
def test_no_mask_is_one_line(tok, text):
    with pytest.raises(ValueError, match=r"^no \[MASK\] in the text to fill: ") as e:
        encode_masked(tok, text)
    assert "\n" not in str(e.value)


def test_too_long_is_one_line(tok):
    with pytest.raises(ValueError, match=r"^the text takes 13 tokens .* max_seq_length=8: "):
        encode_masked(tok, "ein zwei drei vier [MASK] fünf sechs sieben acht", max_seq_length=8)
    with pytest.raises(TypeError, match="AlbertTokenizer or a WordPieceTokenizer"):
        encode_masked(object(), "[MASK]")
