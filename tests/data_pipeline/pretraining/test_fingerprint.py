"""The job's fingerprint holds the inputs by content: a re-run skips shards only when the
input bytes are the ones they were made from. An input edited in place to the same size,
with its modification time put back, is not "already complete"; an input only touched (or
copied: new times, same bytes) still resumes. Runs on ../shared/data (skipped without it)."""

import os

from data_pipeline.pretraining.fingerprint import content_crc32c, input_identity
from tests.data_pipeline.pretraining.test_create_pretraining_data import (
    _need_data,
    _one_line_error,
    cli_args,
    config,
    digests,
    make,
    run_tool,
)


def _job(tmp_path, name):
    text = (_need_data() / "corpus" / "wikitext-2" / "valid.txt").read_text("utf-8")
    corpus = tmp_path / "corpus.txt"
    if not corpus.exists():
        corpus.write_text(text[:200_000], encoding="utf-8")
    return corpus, config(str(corpus), tmp_path / name, split_sentences=True, num_output_shards=2)


def test_input_identity_is_path_size_and_content(tmp_path):
    a = tmp_path / "a.txt"
    a.write_bytes(b"hello world\n")
    import google_crc32c

    assert content_crc32c(str(a)) == google_crc32c.Checksum(b"hello world\n").hexdigest().decode()
    assert input_identity(str(a)) == [str(a), 12, content_crc32c(str(a))]
    before = input_identity(str(a))
    a.write_bytes(b"hello World\n")  # same size
    assert input_identity(str(a))[:2] == before[:2] and input_identity(str(a)) != before


def test_an_input_edited_to_the_same_size_is_not_reported_complete(tmp_path):
    corpus, cfg = _job(tmp_path, "out")
    make(cfg)
    before = digests(cfg.output_dir)

    # Unchanged: everything complete, nothing rewritten.
    out = run_tool(cli_args(cfg, num_workers=1))
    assert out.returncode == 0, out.stderr
    assert "2 of this task's 2 already complete, 0 to write" in out.stdout

    # Touched (new times, same bytes): the same job, it resumes.
    os.utime(corpus, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    out = run_tool(cli_args(cfg, num_workers=1))
    assert out.returncode == 0 and "already complete, 0 to write" in out.stdout, out.stderr

    # Edited in place to the same size, in the middle, its times put back: another job.
    stat = os.stat(corpus)
    data = bytearray(corpus.read_bytes())
    middle = data.index(b" the ", len(data) // 2)
    data[middle + 1 : middle + 4] = b"dog"
    corpus.write_bytes(bytes(data))
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(corpus).st_size == stat.st_size
    assert os.stat(corpus).st_mtime_ns == stat.st_mtime_ns
    out = run_tool(cli_args(cfg, num_workers=1))
    assert "already complete" not in out.stdout
    _one_line_error(out, cfg.output_dir, "made from other inputs or settings")
    assert digests(cfg.output_dir) == before  # the old shards are neither reused nor mixed

    # The edit shows in the data: a fresh job on the edited input writes other shards.
    _, fresh = _job(tmp_path, "fresh")
    make(fresh)
    shards = [k for k in before if k.endswith(".tfrecord")]
    assert [digests(fresh.output_dir)[k] for k in shards] != [before[k] for k in shards]
