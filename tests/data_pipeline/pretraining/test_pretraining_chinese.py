"""Chinese text end to end: a tokenizer trained on Chinese news, SOP instances and masks
over Chinese pieces, from the official text format and from JSONL (sentences split at 。！？)."""

import json
import os

import numpy as np
import pytest

from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.pretraining.local_writer import create_pretraining_data
from data_pipeline.records import read_records
from tests.support.harness import SHARED_DATA


@pytest.fixture(scope="module")
def zh(tmp_path_factory):
    root = str(SHARED_DATA / "corpus" / "zh_news")
    if not os.path.isdir(root):
        pytest.skip(f"real data not available: {root} is absent")
    from data_pipeline.tokenization.sentencepiece_trainer import train_sentencepiece

    tmp = tmp_path_factory.mktemp("zh")
    # JSONL made from THUCNews articles (label<TAB>article): 150 documents.
    jsonl = tmp / "thucnews.jsonl"
    with (
        open(os.path.join(root, "thucnews_1000.txt"), encoding="utf-8") as f,
        open(jsonl, "w", encoding="utf-8") as out,
    ):
        for _, line in zip(range(150), f):
            label, article = line.rstrip("\n").split("\t", 1)
            out.write(json.dumps({"text": article, "label": label}, ensure_ascii=False) + "\n")
    news = os.path.join(root, "news_zh_1.txt")
    model = train_sentencepiece(
        [news, str(jsonl)], str(tmp / "zh_spm"), vocab_size=3000, num_threads=1
    )["model_file"]
    return {"news": news, "jsonl": str(jsonl), "model": model, "tmp": tmp}


def _examples(directory):
    import tensorflow as tf

    out = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".tfrecord"):
            out += [
                tf.train.Example.FromString(r) for r in read_records(os.path.join(directory, name))
            ]
    return out


@pytest.mark.parametrize("source", ["news", "jsonl"])
def test_chinese_instances_mask_chinese_words(zh, source):
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tok = AlbertTokenizer(zh["model"])
    out = str(zh["tmp"] / f"out-{source}")
    meta = create_pretraining_data(
        DataConfig.from_flags(
            input_file=zh[source],
            output_dir=out,
            spm_model_file=zh["model"],
            max_seq_length=128,
            max_predictions_per_seq=20,
            dupe_factor=2,
            num_output_shards=2,
        ),
        progress_every=1e9,
    )
    assert meta["instances"] > 100
    assert meta["documents"]["sentences"] > 2 * meta["documents"]["documents"]
    masked_pieces, cjk = 0, 0
    for e in _examples(out):
        f = e.features.feature
        ids = np.array(f["input_ids"].int64_list.value)
        n = int(sum(f["input_mask"].int64_list.value))
        assert ids[0] == tok.cls_id and list(ids[:n]).count(tok.sep_id) == 2
        weights = np.array(f["masked_lm_weights"].float_list.value)
        labels = np.array(f["masked_lm_ids"].int64_list.value)[weights > 0]
        for label in labels:
            piece = tok.id_to_piece(int(label)).lstrip("\u2581")
            masked_pieces += 1
            cjk += any("\u4e00" <= c <= "\u9fff" for c in piece)
        boundary = np.array(f["token_boundary"].int64_list.value)[:n]
        replaced = set(np.array(f["masked_lm_positions"].int64_list.value)[weights > 0])
        # Every piece holding a CJK character starts a word of its own (official rule);
        # masked positions may hold a random replacement, so they are not looked at.
        for i, t in enumerate(ids[:n]):
            piece = tok.id_to_piece(int(t))
            if any("\u4e00" <= c <= "\u9fff" for c in piece) and i not in replaced:
                assert boundary[i] == 1, piece
    assert masked_pieces > 1000
    assert cjk / masked_pieces > 0.6  # masks fall on Chinese words, not on padding
    swapped = meta["sentence_order_labels"]["fraction_1"]
    assert abs(swapped - 0.5) < 4 * 0.5 / np.sqrt(meta["instances"])  # 4 binomial sd
