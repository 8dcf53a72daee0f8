"""create_pretraining_data --runner beam (data_pipeline/pretraining/beam_writer.py) on
DirectRunner: the local writer's bytes (shards, stats, meta_data.json) for the same job,
resume, and one-line errors for flags of the wrong runner.

apache-beam cannot live in the main environment (it needs protobuf<7; sentencepiece 0.2.3
needs protobuf>=7.36), so the Beam writer runs as a command in its own venv
(requirements-beam.txt; `BEAM_PYTHON`, default `.venv-beam/bin/python`; skipped when
absent) while the local writer runs here: equal bytes also show that the two venvs'
sentencepiece versions encode alike. A small corpus cut from ../shared/data (skipped
without it): two text files and a gzip jsonl, several blocks per shard, dupe_factor 2."""

import dataclasses
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.data_pipeline.pretraining.test_create_pretraining_data import (
    TOOL,
    _need_data,
    _one_line_error,
    cli_args,
    config,
    digests,
    make,
    run_tool,
)
from tests.support.harness import CLI_ENV, ROOT
from tests.support.in_process import run_command

BEAM_PYTHON = pathlib.Path(os.environ.get("BEAM_PYTHON", ROOT / ".venv-beam" / "bin" / "python"))


def beam_tool(args, timeout=300) -> subprocess.CompletedProcess:
    """create_pretraining_data `args` run by the Beam venv's Python."""
    return beam_python(*TOOL, *args, timeout=timeout)


def beam_python(*args, timeout=300) -> subprocess.CompletedProcess:
    """The Beam venv's Python with `args` (a module's command line or `-c` and a script)."""
    if not BEAM_PYTHON.exists():
        pytest.skip(f"no Beam venv at {BEAM_PYTHON} (make install-beam, or set BEAM_PYTHON)")
    return subprocess.run(
        [str(BEAM_PYTHON), *args],
        cwd=ROOT,
        env=CLI_ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _report(out) -> str:
    return f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"


@pytest.fixture(scope="session")
def job(tmp_path_factory):
    """The job's config and the local writer's output (the reference bytes)."""
    if not BEAM_PYTHON.exists():
        pytest.skip(f"no Beam venv at {BEAM_PYTHON} (make install-beam, or set BEAM_PYTHON)")
    base = tmp_path_factory.mktemp("beam")
    text = (_need_data() / "corpus" / "wikitext-2" / "valid.txt").read_text()
    paras = [p.strip() for p in text.splitlines() if len(p.strip()) > 40]
    (base / "a.txt").write_text("\n\n".join(paras[:60]) + "\n")
    (base / "b.txt").write_text("\n\n".join(paras[60:100]) + "\n")
    (base / "c.jsonl.gz").write_bytes(
        gzip.compress(
            "".join(
                json.dumps({"text": "\n".join(paras[i : i + 3])}) + "\n" for i in range(100, 160, 3)
            ).encode()
        )
    )
    cfg = config(
        f"{base}/*.txt,{base}/c.jsonl.gz",
        base / "local",
        split_sentences=True,
        block_size=8192,
        dupe_factor=2,
        num_output_shards=3,
    )
    meta = make(cfg)
    ref = digests(cfg.output_dir)
    assert len(meta["input"]["files"]) == 3 and all(s["instances"] > 0 for s in meta["shards"])
    shards = [v for k, v in ref.items() if k.endswith(".tfrecord")]
    assert len(shards) == 3 and len(set(shards)) == 3
    assert len(ref) == 7  # 3 shards, 3 stats, meta_data.json
    return dict(base=base, cfg=cfg, ref=ref)


def _leftovers(out_dir):
    return [os.path.join(d, f) for d, _, files in os.walk(out_dir) for f in files if ".tmp" in f]


def test_beam_writes_the_local_writers_bytes(job):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "beam"))
    out = beam_tool(cli_args(cfg, runner="beam", beam_runner="DirectRunner"))
    assert out.returncode == 0, _report(out)
    assert "on Beam's DirectRunner" in out.stdout and out.stdout.count(" written (") == 3
    assert digests(cfg.output_dir) == job["ref"]
    assert not _leftovers(cfg.output_dir)


def test_beam_multi_processing_writes_the_same_bytes(job):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "beam-mp"))
    options = "--direct_num_workers=2 --direct_running_mode=multi_processing"
    out = beam_tool(cli_args(cfg, runner="beam", beam_options=options))
    assert out.returncode == 0, _report(out)
    assert digests(cfg.output_dir) == job["ref"]


def test_beam_resumes_a_local_run_and_skips_complete_shards(job):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "resume"))
    shutil.copytree(job["cfg"].output_dir, cfg.output_dir)
    out_dir = cfg.output_dir
    gone = cfg.shard_name(1)
    os.remove(os.path.join(out_dir, gone))
    os.remove(os.path.join(out_dir, "meta_data.json"))
    stale = os.path.join(out_dir, cfg.shard_name(2) + ".tmp-0123")  # a killed attempt's
    with open(stale, "wb") as f:
        f.write(b"partial")
    kept = [os.path.join(out_dir, cfg.shard_name(s)) for s in (0, 2)]
    mtimes = [os.stat(p).st_mtime_ns for p in kept]
    out = beam_tool(cli_args(cfg, runner="beam"))
    assert out.returncode == 0, _report(out)
    assert digests(out_dir) == job["ref"]
    assert [os.stat(p).st_mtime_ns for p in kept] == mtimes  # not rewritten
    assert out.stdout.count("already complete") == 2 and f"{gone} written" in out.stdout
    assert not _leftovers(out_dir)


def test_beam_refuses_shards_of_other_settings(job):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "other"), random_seed=7)
    shutil.copytree(job["cfg"].output_dir, cfg.output_dir)
    before = digests(cfg.output_dir)
    _one_line_error(beam_tool(cli_args(cfg, runner="beam")), "made from other inputs or settings")
    assert before and digests(cfg.output_dir) == before  # nothing of the other job touched


def test_beam_a_full_disk_is_one_line_naming_the_shard(tmp_path):
    """A shard's write fails (here: a file-size limit, EFBIG, as a full disk's ENOSPC):
    one line naming the shard, nothing of it kept. Beam re-raises a step's error as its
    type with the step's name appended to its first argument; an OSError(errno, ...) has
    a number there, so it became a RuntimeError naming no file (two tracebacks)."""
    text = (_need_data() / "corpus" / "wikitext-2" / "valid.txt").read_text()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text[:400_000])  # one shard of ~1.3 MB; the tokenizer's copy: 0.8 MB
    cfg = config(str(corpus), tmp_path / "out", num_output_shards=1)
    argv = ["create_pretraining_data", *cli_args(cfg, runner="beam")]
    script = textwrap.dedent(
        f"""
        import resource, runpy, sys
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, resource.RLIM_INFINITY))
        sys.argv = {argv!r}
        runpy.run_module("data_pipeline.pretraining.create_pretraining_data", run_name="__main__")
        """
    )
    out = beam_python("-c", script)
    shard = os.path.join(cfg.output_dir, cfg.shard_name(0))
    _one_line_error(out, f"error: cannot write {shard}: File too large; nothing of this")
    assert _leftovers(cfg.output_dir) == [] and not os.path.exists(shard)


def test_cli_beam_empty_input_is_a_one_line_error(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n\n")
    cfg = config(str(blank), tmp_path / "out", num_output_shards=2)
    out = beam_tool(cli_args(cfg, runner="beam"))
    _one_line_error(out, "no instances were made", "0 document(s)")
    assert not os.path.exists(os.path.join(cfg.output_dir, "meta_data.json"))


@pytest.mark.parametrize(
    "flag, value, says",
    [
        ("masked_lm_prob", "2", "masked_lm_prob=2.0 must be in (0, 1)"),
        ("ngram", "0", "ngram=0 must be at least 1"),
        ("max_predictions_per_seq", "-3", "max_predictions_per_seq=-3 must be >= 1"),
    ],
)
def test_cli_beam_checks_every_setting_before_the_pipeline(tmp_path, flag, value, says):
    """A setting only a Beam worker would reject is one line from the driver, before any
    pipeline (or output directory) exists: on a cluster, workers would retry it."""
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    cfg = config(str(tmp_path / "a.txt"), tmp_path / "out")
    args = [a for a in cli_args(cfg, runner="beam") if not a.startswith(f"--{flag}=")]
    _one_line_error(beam_tool([*args, f"--{flag}={value}"], timeout=60), says)
    assert not os.path.exists(cfg.output_dir)


@pytest.mark.parametrize(
    "flags, needles, tool",
    [  # checked before Apache Beam is imported: any environment
        (dict(beam_runner="DataflowRunner"), ["--beam_runner need --runner beam"], run_tool),
        (dict(beam_options="--direct_num_workers=2"), ["--beam_options need"], run_tool),
        (dict(runner="beam", num_tasks=2, task_index=1), ["--num_tasks, --task_index"], run_tool),
        (dict(runner="beam", num_workers=2), ["--num_workers belong to"], run_tool),
        # checked by the Beam writer's settings
        (dict(runner="beam", beam_runner="Direct"), ["--beam_runner=Direct is not"], beam_tool),
        (dict(runner="beam", beam_options="--runner=Flink"), ["with --beam_runner"], beam_tool),
    ],
)
def test_cli_wrong_runner_flags_are_one_line_errors(tmp_path, flags, needles, tool):
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    cfg = config(str(tmp_path / "a.txt"), tmp_path / "out")
    _one_line_error(tool(cli_args(cfg, **flags)), *needles)
    assert not os.path.exists(cfg.output_dir)


def test_cli_beam_without_apache_beam_says_how_to_install(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    cfg = config(str(tmp_path / "a.txt"), tmp_path / "out")
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # as if it were not installed
    out = run_command(*TOOL, *cli_args(cfg, runner="beam"))
    _one_line_error(out, "needs Apache Beam", "requirements-beam.txt")
    assert out.returncode == 1 and not os.path.exists(cfg.output_dir)


def test_without_tensorflow_urls_go_through_beams_filesystems(tmp_path):
    """The Beam environment has no TensorFlow: `data_pipeline.io.filesystem` then serves URLs
    (the driver's input globs and sizes, the workers' byte ranges, the SentencePiece model)
    with `data_pipeline.io.beam_files` over Beam's FileSystems, which hold gs:// (with
    apache-beam[gcp]) as they hold local paths. Exercised here on local paths, the one
    scheme Beam serves without extras."""
    (tmp_path / "a.txt").write_bytes(b"0123456789")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_bytes(b"x")
    script = textwrap.dedent(
        f"""
        import importlib.util, sys
        assert importlib.util.find_spec("tensorflow") is None
        from data_pipeline.io import beam_files, filesystem
        assert filesystem._gfile() is beam_files
        d = {str(tmp_path)!r}
        assert sorted(beam_files.glob(d + "/*.txt")) == [d + "/a.txt"]
        assert beam_files.stat(d + "/a.txt").length == 10
        assert beam_files.isdir(d + "/sub") and not beam_files.isdir(d + "/a.txt")
        assert beam_files.stat(d + "/sub").is_directory
        with beam_files.GFile(d + "/a.txt", "rb") as f:
            f.seek(3)
            assert f.read(4) == b"3456" and f.tell() == 7
        with beam_files.GFile(d + "/c.txt", "w") as f:
            f.write("é")
        beam_files.rename(d + "/c.txt", d + "/sub/b.txt", overwrite=True)
        assert open(d + "/sub/b.txt", encoding="utf-8").read() == "é"
        try:
            beam_files.stat(d + "/missing")
        except OSError as e:
            assert type(e).__name__ == "NotFoundError"
        else:
            raise AssertionError("a missing path must raise")
        with filesystem._as_os_error(d + "/missing"):
            pass
        try:
            beam_files.walk
        except OSError as e:
            assert "needs TensorFlow" in str(e)
        print("ok")
        """
    )
    r = beam_python("-c", script)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
