"""create_pretraining_data --zh_whole_word_mask: every masked span covers whole jieba words
of the Chinese text (WordPiece and SentencePiece), token_boundary records those units for
dynamic masking, output is byte-identical with one or two worker processes and on Beam,
off means the bytes of before, and the option is recorded and refused where it differs.
Runs on zh_news from ../shared/data (skipped without it)."""

import dataclasses
import functools
import hashlib
import os
import re

import jieba
import numpy as np
import pytest

from data_pipeline.pretraining import chinese_words
from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.pretraining.local_writer import create_pretraining_data
from tests.data_pipeline.pretraining.test_create_pretraining_data import (
    TOOL,
    _one_line_error,
    cli_args,
    digests,
    load,
    meta_of,
)
from tests.support.harness import CLI_ENV, SHARED_DATA, Cli
from tests.support.in_process import run_command

SEQ, PRED = 128, 20


def _need_data():
    if not (SHARED_DATA / "corpus" / "zh_news").is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """zh_news (221 lines, 10 documents) with a "。" after each line that ends inside one of
    jieba's blocks (a CJK character, letter or digit), so that jieba cuts the joined lines of
    a segment exactly as it cuts each line (the check below segments decoded segments)."""
    lines = (_need_data() / "corpus" / "zh_news" / "news_zh_1.txt").read_text("utf-8")
    fixed = [
        line + "。" if line and jieba.re_han_default.fullmatch(line[-1]) else line
        for line in lines.splitlines()
    ]
    path = tmp_path_factory.mktemp("zh-corpus") / "news.txt"
    path.write_text("\n".join(fixed) + "\n", encoding="utf-8")
    return path


def _config(corpus, output_dir, **kw):
    args = dict(
        input_file=str(corpus),
        output_dir=str(output_dir),
        max_seq_length=SEQ,
        max_predictions_per_seq=PRED,
        dupe_factor=2,
        num_output_shards=2,
        block_size=8192,
    )
    return DataConfig.from_flags(**{**args, **kw})


def _make(cfg):
    return create_pretraining_data(cfg, progress_every=1e9)


@pytest.fixture(scope="module")
def spm_zh(tmp_path_factory):
    """A 2,000-piece SentencePiece model of zh_news (multi-character Chinese pieces)."""
    from data_pipeline.tokenization.sentencepiece_trainer import train_sentencepiece

    news = _need_data() / "corpus" / "zh_news" / "news_zh_1.txt"
    prefix = tmp_path_factory.mktemp("zh-spm") / "zh"
    return train_sentencepiece([str(news)], str(prefix), vocab_size=2000, num_threads=1)[
        "model_file"
    ]


@pytest.fixture(scope="module")
def jobs(corpus, wordpiece_vocab, spm_zh, tmp_path_factory):
    """The same job with and without the option, for each tokenizer kind."""
    base = tmp_path_factory.mktemp("zh-jobs")
    out = {}
    for kind, tokenizer in (
        ("wordpiece", {"vocab_file": wordpiece_vocab}),
        ("sentencepiece", {"spm_model_file": spm_zh}),
    ):
        for zh in (True, False):
            cfg = _config(corpus, base / f"{kind}-{zh}", zh_whole_word_mask=zh, **tokenizer)
            out[kind, zh] = dict(cfg=cfg, meta=_make(cfg))
    return out


# --- the check: masked spans against jieba's words of the decoded text -----------------------


@functools.cache
def _jieba():
    """jieba on its default dictionary (read here from the package's dict.txt)."""
    segmenter = jieba.Tokenizer()
    dictionary = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
    segmenter.FREQ, segmenter.total = segmenter.gen_pfdict(open(dictionary, "rb"))
    segmenter.initialized = True
    return segmenter


class Decoder:
    """Token texts as the pieces spell them ("##" dropped, "▁" a space), and jieba."""

    def __init__(self, tokenizer):
        from data_pipeline.tokenization.spec import tokenizer_kind

        wordpiece = tokenizer_kind(tokenizer) == "wordpiece"
        self.tokenizer = tokenizer
        self.texts = [
            p.removeprefix("##") if wordpiece else p.replace("\u2581", " ")
            for p in map(tokenizer.id_to_piece, range(tokenizer.vocab_size))
        ]
        self.jieba = _jieba()

    def segments(self, ids, n):
        """[(positions, text, token char spans)] of the row's segments (between specials)."""
        special = {self.tokenizer.cls_id, self.tokenizer.sep_id}
        out, current = [], []
        for p in range(n):
            if int(ids[p]) in special:
                if current:
                    out.append(current)
                current = []
            else:
                current.append(p)
        segments = []
        for positions in out:
            texts = [self.texts[int(ids[p])] for p in positions]
            ends = np.cumsum([len(t) for t in texts])
            spans = list(zip(ends - [len(t) for t in texts], ends))
            segments.append((positions, "".join(texts), spans))
        return segments

    def chinese_words(self, text):
        """(start, end) of every jieba word of ≥ 2 characters, all Chinese, that lies in an
        inner block of `text` (jieba cuts blocks independently; a segment's first and last
        blocks may be cut by truncation or a split, so their words are not the text's)."""
        blocks = [m.span() for m in jieba.re_han_default.finditer(text)][1:-1]
        words, start = [], 0
        for w in self.jieba.cut(text, HMM=True):
            end = start + len(w)
            if (
                len(w) > 1
                and all(map(chinese_words.is_chinese, w))
                and any(a <= start and end <= b for a, b in blocks)
            ):
                words.append((start, end))
            start = end
        return words


def _covering(positions, spans, a, b):
    """The positions of the tokens that hold characters of text[a:b]."""
    return [p for p, (s, e) in zip(positions, spans) if s < b and e > a and e > s]


def whole_word_check(decoder, ids, masked, n):
    """(words split by the masks, words masked whole) over one row's inner Chinese words."""
    split = whole = 0
    for positions, text, spans in decoder.segments(ids, n):
        for a, b in decoder.chinese_words(text):
            inside = _covering(positions, spans, a, b)
            states = {bool(masked[p]) for p in inside}
            split += len(states) == 2
            whole += states == {True}
    return split, whole


def _rows(out_dir, dynamic=False):
    """(original ids, masked [B, S] bool, lengths, records) of a job's records."""
    r = load(out_dir, SEQ, PRED, dynamic)
    ids = r["input_ids"].copy()
    masked = np.zeros(ids.shape, bool)
    if not dynamic:
        rows, cols = np.nonzero(r["masked_lm_weights"])
        ids[rows, r["masked_lm_positions"][rows, cols]] = r["masked_lm_ids"][rows, cols]
        masked[rows, r["masked_lm_positions"][rows, cols]] = True
    return ids, masked, r["input_mask"].sum(axis=1), r


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_masks_cover_whole_jieba_words(jobs, kind):
    """With the option, no masked span cuts a Chinese word of the decoded text, and many
    words are masked whole; without it (masks of single characters or pieces) many are cut:
    the check can fail."""
    results = {}
    for zh in (True, False):
        cfg = jobs[kind, zh]["cfg"]
        tok = cfg.tokenizer.build()
        decoder = Decoder(tok)
        ids, masked, lengths, r = _rows(cfg.output_dir)
        assert r["input_ids"].max() < tok.vocab_size  # no mark is left on an id
        assert r["masked_lm_ids"].max() < tok.vocab_size
        split = whole = 0
        for row in range(len(ids)):
            s, w = whole_word_check(decoder, ids[row], masked[row], int(lengths[row]))
            split, whole = split + s, whole + w
        results[zh] = split, whole
    assert results[True][0] == 0 and results[True][1] > 300, results
    assert results[False][0] > 100, results


def test_wordpiece_units_are_words_and_latin_pieces_keep_theirs(jobs):
    """Masked `##` continuations still come with their word start (Latin words, numbers),
    and the n-gram units are fewer and longer than without the option."""
    cfg = jobs["wordpiece", True]["cfg"]
    tok = cfg.tokenizer.build()
    ids, masked, lengths, _ = _rows(cfg.output_dir)
    continuations = 0
    for row in range(len(ids)):
        for p in np.flatnonzero(masked[row]):
            if tok.id_to_piece(int(ids[row, p])).startswith("##"):
                continuations += 1
                assert masked[row, p - 1]
    assert continuations > 0
    on, off = (jobs["wordpiece", zh]["meta"]["masking"] for zh in (True, False))
    assert sum(on["ngram_units"].values()) < 0.8 * sum(off["ngram_units"].values())
    assert abs(on["masked_fraction"] - off["masked_fraction"]) < 0.01  # budgets still filled


def test_marks_follow_jieba(wordpiece_vocab, spm_zh):
    """The units of one sentence, for both tokenizer kinds: jieba cuts 我/爱/北京/天安门."""
    from data_pipeline.tokenization.spec import TokenizerSpec

    specs = (TokenizerSpec.from_files(vocab_file=wordpiece_vocab), TokenizerSpec.from_files(spm_zh))
    for tok in (spec.build() for spec in specs):
        words = chinese_words.ChineseWords(tok)
        ids = tok.encode("我爱北京天安门 2024年")
        marked = words.mark(ids)
        assert [i & chinese_words.TOKEN_ID_BITS for i in marked] == ids
        units = []
        for i, m in zip(ids, marked):
            text = words.texts[i].strip()
            if m & chinese_words.INSIDE_WORD:
                units[-1] += text
            elif text:  # (a SentencePiece "▁" alone spells nothing)
                units.append(text)
        assert units[:4] == ["我", "爱", "北京", "天安门"], units
    assert words.mark(tok.encode("no chinese here")) == tok.encode("no chinese here")


def test_token_boundary_holds_the_units_for_dynamic_masking(jobs, tmp_path):
    """Written with --dynamic_masking, token_boundary is 1 at the first character of each
    inner Chinese word and 0 at its others; the masker of run_pretraining's dynamic masking
    (`NgramMasker.mask_records`) then masks whole words from the records alone."""
    from data_pipeline.pretraining.masking import NgramMasker

    cfg = dataclasses.replace(
        jobs["wordpiece", True]["cfg"], output_dir=str(tmp_path / "dyn"), dynamic_masking=True
    )
    _make(cfg)
    tok = cfg.tokenizer.build()
    decoder = Decoder(tok)
    ids, _, lengths, r = _rows(cfg.output_dir, dynamic=True)
    boundary = r["token_boundary"]
    checked = 0
    for row in range(len(ids)):
        for positions, text, spans in decoder.segments(ids[row], int(lengths[row])):
            for a, b in decoder.chinese_words(text):
                inside = _covering(positions, spans, a, b)
                assert boundary[row, inside[0]] == 1 and not boundary[row, inside[1:]].any()
                checked += 1
    assert checked > 1000
    masker = NgramMasker.from_tokenizer(tok, max_predictions_per_seq=PRED)
    res = masker.mask_records(
        ids, boundary, r["input_mask"], (tok.cls_id, tok.sep_id), np.random.default_rng(7)
    )
    masked = np.zeros(ids.shape, bool)
    rows, cols = np.nonzero(res.weights)
    masked[rows, res.positions[rows, cols]] = True
    split = whole = 0
    for row in range(len(ids)):
        s, w = whole_word_check(decoder, ids[row], masked[row], int(lengths[row]))
        split, whole = split + s, whole + w
    assert split == 0 and whole > 300, (split, whole)


# --- bytes ------------------------------------------------------------------------------------


def test_same_bytes_with_two_workers_and_no_jieba_cache(jobs, tmp_path):
    """Two worker processes write the one-process bytes; no jieba cache file is written
    (jieba's own loading would put jieba.cache into the run's temporary directory)."""
    ref = jobs["wordpiece", True]["cfg"]
    cfg = dataclasses.replace(ref, output_dir=str(tmp_path / "w2"))
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    out = Cli(*TOOL, *cli_args(cfg, num_workers=2), env=dict(CLI_ENV, TMPDIR=str(tmpdir)))
    out.wait()
    assert out.returncode == 0, out.report()
    assert digests(cfg.output_dir) == digests(ref.output_dir)
    assert not [name for name in os.listdir(tmpdir) if "jieba" in name]


def test_beam_writes_the_same_bytes(jobs, tmp_path):
    from tests.data_pipeline.pretraining.test_beam_writer import _report, beam_tool

    ref = jobs["wordpiece", True]["cfg"]
    cfg = dataclasses.replace(ref, output_dir=str(tmp_path / "beam"))
    out = beam_tool(cli_args(cfg, runner="beam", beam_runner="DirectRunner"))
    assert out.returncode == 0, _report(out)
    assert digests(cfg.output_dir) == digests(ref.output_dir)


def test_non_chinese_text_is_untouched(wordpiece_vocab, tmp_path):
    """On English text the option changes no shard byte (only meta_data.json's record)."""
    text = (_need_data() / "corpus" / "wikitext-2" / "valid.txt").read_text("utf-8")
    paras = [p.strip() for p in text.splitlines() if len(p.strip()) > 40][:120]
    (tmp_path / "en.txt").write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    runs = {}
    for zh in (True, False):
        cfg = _config(
            tmp_path / "en.txt",
            tmp_path / f"en-{zh}",
            vocab_file=wordpiece_vocab,
            split_sentences=True,
            zh_whole_word_mask=zh,
        )
        _make(cfg)
        runs[zh] = {k: v for k, v in digests(cfg.output_dir).items() if k.endswith(".tfrecord")}
    assert len(runs[True]) == 2 and runs[True] == runs[False]


# The default output, pinned: the shards of a fixed job (zh_news and WikiText with the
# ALBERT-recipe SentencePiece model of ../shared/data) as written before the option existed.
DEFAULT_SHARDS_SHA256 = "71990a8b3f09b66d54dbc23d3af878bdafc74bf3b293076aedeaa3abbe0fdd2f"


def test_off_writes_the_bytes_of_before(tmp_path):
    data = _need_data()
    zh = (data / "corpus" / "zh_news" / "news_zh_1.txt").read_text("utf-8").splitlines()
    en = (data / "corpus" / "wikitext-2" / "valid.txt").read_text("utf-8").splitlines()[:400]
    en = [line.strip() for line in en if len(line.strip()) > 40]
    corpus = tmp_path / "mixed.txt"
    corpus.write_text("\n".join(zh) + "\n\n" + "\n\n".join(en) + "\n", encoding="utf-8")
    cfg = DataConfig.from_flags(
        input_file=str(corpus),
        output_dir=str(tmp_path / "o"),
        spm_model_file=str(data / "spm" / "de-30k-clean.model"),
        max_seq_length=64,
        max_predictions_per_seq=10,
        dupe_factor=2,
        num_output_shards=2,
        block_size=8192,
        split_sentences=True,
    )
    meta = _make(cfg)
    h = hashlib.sha256()
    for s in range(2):
        h.update((tmp_path / "o" / cfg.shard_name(s)).read_bytes())
    assert meta["instances"] == 1400 and h.hexdigest() == DEFAULT_SHARDS_SHA256
    assert "zh_whole_word_mask" not in meta and "zh_whole_word_mask" not in meta["settings"]


# --- recorded and refused ---------------------------------------------------------------------


def test_meta_data_records_the_segmenter(jobs):
    from data_pipeline.pretraining.meta_data import pretraining_data

    cfg, meta = jobs["wordpiece", True]["cfg"], jobs["wordpiece", True]["meta"]
    dictionary = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
    with open(dictionary, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    expected = {"segmenter": "jieba", "version": "0.42.1", "dictionary_sha256": sha, "hmm": True}
    assert meta["zh_whole_word_mask"] == expected == meta_of(cfg.output_dir)["zh_whole_word_mask"]
    assert meta["settings"]["zh_whole_word_mask"] is True
    files = [os.path.join(cfg.output_dir, cfg.shard_name(s)) for s in range(2)]
    assert pretraining_data(files).summary["zh_whole_word_mask"] == expected


def test_other_segmentation_settings_are_refused(jobs, monkeypatch):
    """Shards written with the option are not resumed without it, nor with another jieba;
    the same settings resume (everything complete)."""
    cfg = jobs["wordpiece", True]["cfg"]
    before = digests(cfg.output_dir)
    with pytest.raises(ValueError, match="made from other inputs or settings"):
        _make(dataclasses.replace(cfg, zh_whole_word_mask=False))
    other = dict(chinese_words.identity(), version="0.39")
    monkeypatch.setattr(chinese_words, "identity", lambda: other)
    with pytest.raises(ValueError, match="made from other inputs or settings"):
        _make(cfg)
    monkeypatch.undo()
    assert _make(cfg)["instances"] == jobs["wordpiece", True]["meta"]["instances"]
    assert digests(cfg.output_dir) == before


def test_whole_word_mask_off_is_refused(corpus, wordpiece_vocab, tmp_path):
    with pytest.raises(ValueError, match="--zh_whole_word_mask makes Chinese words"):
        _config(
            corpus,
            tmp_path,
            vocab_file=wordpiece_vocab,
            zh_whole_word_mask=True,
            do_whole_word_mask=False,
        )


def test_without_jieba_one_line_error(corpus, wordpiece_vocab, tmp_path, monkeypatch):
    """jieba missing (import blocked): DataConfig says how to install it, and the command
    line prints that one line, exit 1, before touching the output directory."""
    monkeypatch.setitem(__import__("sys").modules, "jieba", None)
    with pytest.raises(ImportError, match=re.escape("pip install jieba==0.42.1")):
        _config(corpus, tmp_path / "x", vocab_file=wordpiece_vocab, zh_whole_word_mask=True)
    monkeypatch.undo()
    cfg = _config(corpus, tmp_path / "out", vocab_file=wordpiece_vocab, zh_whole_word_mask=True)
    monkeypatch.setitem(__import__("sys").modules, "jieba", None)
    out = run_command(*TOOL, *cli_args(cfg))
    _one_line_error(out, "--zh_whole_word_mask", "jieba", "pip install -e '.[zh]'")
    assert not os.path.exists(cfg.output_dir)
