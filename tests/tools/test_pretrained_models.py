"""The experiments' CPU-pretrained models: `pretrained_flags` gives the vocabulary flag of the
file the model directory holds (the English model's spm8k.model, the Chinese model's
vocab.txt), and experiments/pretrained_zh.py's corpus keeps THUCNews' article text only,
split into sentences, with the last articles held out."""

import pytest

from experiments import pretrained_zh
from experiments.pretrained import pretrained_flags


def _model_dir(tmp_path, *vocab_files):
    (tmp_path / "run_sop" / "checkpoints").mkdir(parents=True)
    (tmp_path / "run_sop" / "checkpoints" / "checkpoint").write_text("")
    for name in vocab_files:
        (tmp_path / name).write_text("x\n")
    return str(tmp_path)


@pytest.mark.parametrize(
    "vocab_file, flag", [("vocab.txt", "--vocab_file"), ("spm8k.model", "--spm_model_file")]
)
def test_pretrained_flags_name_the_vocabulary_the_directory_holds(tmp_path, vocab_file, flag):
    d = _model_dir(tmp_path, vocab_file)
    assert pretrained_flags(d) == [
        f"--albert_config_file={tmp_path / 'albert_config.json'}",
        f"{flag}={tmp_path / vocab_file}",
        f"--init_checkpoint={tmp_path / 'run_sop' / 'checkpoints'}",
    ]


def test_pretrained_flags_refuse_an_ambiguous_or_unfinished_directory(tmp_path):
    with pytest.raises(SystemExit, match="both vocab.txt and spm8k.model"):
        pretrained_flags(_model_dir(tmp_path / "both", "vocab.txt", "spm8k.model"))
    with pytest.raises(SystemExit, match="--pretrained_dir .*no run_sop/checkpoints"):
        pretrained_flags(str(tmp_path / "empty"))


def test_chinese_corpus_is_the_articles_split_into_sentences(tmp_path, monkeypatch):
    zh = tmp_path / "zh_news"
    zh.mkdir()
    (zh / "thucnews_1000.txt").write_text(
        "体育\t湖人赢了。他很开心！\n\n财经\t股市涨了。\n科技\t新手机发布。好看吗？是的\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(pretrained_zh, "ZH", str(zh))
    train, heldout = pretrained_zh.write_corpus(str(tmp_path / "out"), heldout_articles=1)
    assert train[1] == str(zh / "news_zh_1.txt")
    with open(train[0], encoding="utf-8") as f:
        assert f.read() == "湖人赢了。\n他很开心！\n\n股市涨了。\n"
    with open(heldout[0], encoding="utf-8") as f:
        assert f.read() == "新手机发布。\n好看吗？\n是的\n"
    first_two, _ = pretrained_zh.write_corpus(str(tmp_path / "o2"), 1, max_articles=2)
    with open(first_two[0], encoding="utf-8") as f:
        assert f.read() == "湖人赢了。\n他很开心！\n"
    (zh / "thucnews_1000.txt").write_text("体育\t好。\n没有标签\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"thucnews_1000.txt:2: expected `label<TAB>article`"):
        pretrained_zh.write_corpus(str(tmp_path / "o3"), 0)
