"""create_pretraining_data with a WordPiece vocab.txt (`--vocab_file`) on Chinese news:
instances hold the vocabulary's pieces of the text, whole-word masks never take a `##`
continuation without its word start, meta_data.json and the fingerprint record the
tokenizer, and the Beam writer writes the local writer's bytes."""

import dataclasses
import os

import numpy as np
import pytest

from data_pipeline.pretraining.data_config import DataConfig
from data_pipeline.pretraining.local_writer import create_pretraining_data
from data_pipeline.records import read_records
from tests.data_pipeline.pretraining.test_create_pretraining_data import with_flags
from tests.support.harness import SHARED_DATA, tiny_config
from tests.support.in_process import run_command


@pytest.fixture(scope="module")
def job(tmp_path_factory, wordpiece_vocab):
    """A slice of zh_news (its first 120 lines) written with the fixture vocabulary."""
    from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

    news = SHARED_DATA / "corpus" / "zh_news" / "news_zh_1.txt"
    tmp = tmp_path_factory.mktemp("wp-pretrain")
    lines = news.read_text(encoding="utf-8").splitlines(keepends=True)[:120]
    corpus = tmp / "news.txt"
    corpus.write_text("".join(lines), encoding="utf-8")
    cfg = DataConfig.from_flags(
        input_file=str(corpus),
        output_dir=str(tmp / "local"),
        vocab_file=wordpiece_vocab,
        max_seq_length=64,
        max_predictions_per_seq=10,
        dupe_factor=3,
        num_output_shards=2,
        block_size=4096,
    )
    meta = create_pretraining_data(cfg, progress_every=1e9)
    tok = WordPieceTokenizer(wordpiece_vocab)
    return dict(cfg=cfg, meta=meta, tok=tok, lines=lines, tmp=tmp)


def _examples(directory):
    import tensorflow as tf

    out = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".tfrecord"):
            for r in read_records(os.path.join(directory, name)):
                out.append(tf.train.Example.FromString(r).features.feature)
    return out


def test_meta_data_records_the_wordpiece_vocabulary(job):
    meta, tok = job["meta"], job["tok"]
    assert meta["tokenizer"] == {"kind": "wordpiece", "file": "vocab.txt", "sha256": tok.checksum}
    assert meta["vocab_size"] == tok.vocab_size == 21128
    assert "spm_sha256" not in meta and meta["settings"]["vocab_file"] == job["cfg"].tokenizer.path
    assert meta["instances"] > 50


def test_instances_are_the_texts_pieces_and_masks_cover_whole_words(job):
    tok = job["tok"]
    text = "".join("".join(tok.normalize(line).split()) for line in job["lines"])
    masked, continuations = 0, 0
    for f in _examples(job["cfg"].output_dir):
        ids = np.array(f["input_ids"].int64_list.value)
        n = int(sum(f["input_mask"].int64_list.value))
        weights = np.array(f["masked_lm_weights"].float_list.value)
        positions = np.array(f["masked_lm_positions"].int64_list.value)[weights > 0]
        labels = np.array(f["masked_lm_ids"].int64_list.value)[weights > 0]
        original = ids.copy()
        original[positions] = labels
        assert original[0] == tok.cls_id and list(original[:n]).count(tok.sep_id) == 2
        pieces = [tok.id_to_piece(int(i)) for i in original[:n]]
        # Each segment decodes to a stretch of the (normalized, space-free) corpus.
        sep = pieces.index("[SEP]")
        for segment in (pieces[1:sep], pieces[sep + 1 : n - 1]):
            if "[UNK]" not in segment:
                decoded = "".join(p.removeprefix("##") for p in segment)
                assert decoded in text, decoded
        # Whole words: a masked continuation's word start is masked too.
        at = set(positions.tolist())
        for p in positions:
            masked += 1
            if pieces[p].startswith("##"):
                continuations += 1
                assert p - 1 in at, (pieces[p - 1], pieces[p])
        # ... and a masked word start has all its continuations masked.
        for p in positions:
            q = p + 1
            while q < n and pieces[q].startswith("##"):
                assert q in at, (pieces[p], pieces[q])
                q += 1
    assert masked > 300 and continuations > 0  # Latin words and numbers hold ## pieces


def test_another_tokenizer_is_refused_in_the_same_directory(job, tok):
    """The fingerprint holds the tokenizer: a SentencePiece job on the WordPiece shards is
    refused (one line), as is another vocab.txt."""
    other = with_flags(job["cfg"], vocab_file=None, spm_model_file=tok.model_file)
    with pytest.raises(ValueError, match="made from other inputs or settings"):
        create_pretraining_data(other, progress_every=1e9)
    changed = job["tmp"] / "vocab.txt"
    changed.write_bytes(open(job["cfg"].tokenizer.path, "rb").read() + b"[unused-extra-token]\n")
    with pytest.raises(ValueError, match="made from other inputs or settings"):
        create_pretraining_data(with_flags(job["cfg"], vocab_file=str(changed)), progress_every=1e9)


def test_one_tokenizer_the_sentencepiece_model_first(job):
    with pytest.raises(ValueError, match="give a tokenizer.*neither given"):
        with_flags(job["cfg"], spm_model_file=None, vocab_file=None)
    # Both (official command lines pass the model's .vocab too): the model is the tokenizer.
    both = with_flags(job["cfg"], spm_model_file="a.model")
    assert both.tokenizer.kind == "sentencepiece" and both.tokenizer.path == "a.model"
    assert "vocab_file" not in both.settings() and both.settings()["spm_model_file"] == "a.model"
    with pytest.raises(ValueError, match="--keep_accents is for SentencePiece"):
        with_flags(job["cfg"], keep_accents=True)


def test_beam_writer_writes_the_same_bytes(job):
    from tests.data_pipeline.pretraining.test_beam_writer import _report, beam_tool
    from tests.data_pipeline.pretraining.test_create_pretraining_data import cli_args, digests

    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["tmp"] / "beam"))
    out = beam_tool(cli_args(cfg, runner="beam", beam_runner="DirectRunner"))
    if out.returncode and "No module named 'tokenizers'" in out.stderr:
        pytest.skip("the Beam venv lacks `tokenizers` (requirements-beam.txt; make install-beam)")
    assert out.returncode == 0, _report(out)
    assert digests(cfg.output_dir) == digests(job["cfg"].output_dir)


# --- run_pretraining on WordPiece records ------------------------------------------------------


def test_records_name_their_tokenizer_to_run_pretraining(job, tok):
    """run_pretraining's checks: the records' tokenizer (meta_data.json) against the one
    given, and their vocab_size against the config's (a smaller one: see the run below)."""
    from albert_tf.training import run_setup as shared_flags
    from data_pipeline.pretraining.meta_data import pretraining_data

    out = job["cfg"].output_dir
    files = [os.path.join(out, job["cfg"].shard_name(s)) for s in range(2)]
    data = pretraining_data(files)
    assert data.tokenizer["kind"] == "wordpiece" and data.spm_sha256 is None
    assert data.summary["tokenizer"]["sha256"] == job["tok"].checksum
    data.check_vocabulary(job["tok"], "--vocab_file=v")
    with pytest.raises(ValueError, match="written with a WordPiece vocab.txt, but --spm_model"):
        data.check_vocabulary(tok, "--spm_model_file=m")
    shared_flags.check_records_vocabulary(tiny_config(vocab_size=21128), files, "c.json")
    with pytest.raises(ValueError, match="vocab_size=21,000 in c.json"):
        shared_flags.check_records_vocabulary(tiny_config(vocab_size=21000), files, "c.json")


def test_run_pretraining_dynamic_masking_with_vocab_file(job, tmp_path):
    """A few steps of a tiny model on WordPiece records with dynamic masking (the masker
    takes its word starts from --vocab_file)."""
    import json

    from tests.support.tiny import WORKFLOW as TINY

    cfg = dataclasses.replace(
        job["cfg"], output_dir=str(tmp_path / "dynamic"), dynamic_masking=True
    )
    create_pretraining_data(cfg, progress_every=1e9)
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps(dict(TINY, vocab_size=21128)))
    args = [
        f"--input_file={cfg.output_dir}/*.tfrecord",
        f"--albert_config_file={config}",
        f"--vocab_file={cfg.tokenizer.path}",
        f"--output_dir={tmp_path / 'run'}",
        "--train_batch_size=8",
        "--num_train_steps=4",
        "--num_warmup_steps=1",
        "--steps_per_loop=2",
        "--save_checkpoints_steps=4",
    ]
    r = run_command("run_pretraining.py", *args, timeout=240)
    assert r.returncode == 0, r.report()
    metrics = json.loads((tmp_path / "run" / "final_metrics.json").read_text())
    assert metrics, metrics
    # A config with fewer embeddings than the records' vocabulary: one line naming the file.
    config.write_text(json.dumps(dict(TINY, vocab_size=20000)))
    args = [a for a in args if not a.startswith("--output_dir")] + [
        f"--output_dir={tmp_path / 'run-small'}"
    ]
    r = run_command("run_pretraining.py", *args, timeout=240)
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert r.returncode == 1 and len(errors) == 1, r.report()
    assert f"{cfg.output_dir}/meta_data.json: the records' vocabulary has 21,128" in errors[0]
