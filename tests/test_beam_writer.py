"""create_pretraining_data --runner beam (data_pipeline/pretraining/beam_writer.py) on
DirectRunner: the local writer's bytes (shards, stats, meta_data.json) for the same job,
resume, and one-line errors for flags of the wrong runner. A small corpus cut from
../shared/data (skipped without it): two text files and a gzip jsonl, several blocks per
shard, dupe_factor 2."""

import dataclasses
import gzip
import json
import os
import shutil
import textwrap

import pytest

from conftest import run_cli
from test_create_pretraining_data import (
    TOOL,
    _need_data,
    _one_line_error,
    cli_args,
    config,
    digests,
    make,
    run_tool,
)

pytest.importorskip("apache_beam")

from data_pipeline.pretraining.beam_writer import (  # noqa: E402
    BeamSettings,
    create_pretraining_data_beam,
)

DIRECT = BeamSettings("DirectRunner")


@pytest.fixture(scope="session")
def job(tmp_path_factory):
    """The job's config and the local writer's output (the reference bytes)."""
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


def test_cli_beam_writes_the_local_writers_bytes(job):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "beam-cli"))
    out = run_tool(cli_args(cfg, runner="beam", beam_runner="DirectRunner"))
    assert out.returncode == 0, out.report()
    assert "on Beam's DirectRunner" in out.stdout
    assert digests(cfg.output_dir) == job["ref"]
    assert not _leftovers(cfg.output_dir)


def test_beam_multi_processing_writes_the_same_bytes(job):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "beam-mp"))
    options = ("--direct_num_workers=2", "--direct_running_mode=multi_processing")
    meta = create_pretraining_data_beam(cfg, BeamSettings("DirectRunner", options))
    assert meta["instances"] == sum(s["instances"] for s in meta["shards"])
    assert digests(cfg.output_dir) == job["ref"]


def test_beam_resumes_a_local_run_and_skips_complete_shards(job, capsys):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "resume"))
    shutil.copytree(job["cfg"].output_dir, cfg.output_dir)
    out = cfg.output_dir
    gone = cfg.shard_name(1)
    os.remove(os.path.join(out, gone))
    os.remove(os.path.join(out, "meta_data.json"))
    stale = os.path.join(out, cfg.shard_name(2) + ".tmp-0123")  # a killed attempt's
    with open(stale, "wb") as f:
        f.write(b"partial")
    kept = [os.path.join(out, cfg.shard_name(s)) for s in (0, 2)]
    mtimes = [os.stat(p).st_mtime_ns for p in kept]
    create_pretraining_data_beam(cfg, DIRECT)
    assert digests(out) == job["ref"]
    assert [os.stat(p).st_mtime_ns for p in kept] == mtimes  # not rewritten
    said = capsys.readouterr().out
    assert said.count("already complete") == 2 and f"{gone} written" in said
    assert not _leftovers(out)


def test_beam_refuses_shards_of_other_settings(job):
    cfg = dataclasses.replace(job["cfg"], output_dir=str(job["base"] / "other"), random_seed=7)
    shutil.copytree(job["cfg"].output_dir, cfg.output_dir)
    with pytest.raises(ValueError, match="made from other inputs or settings"):
        create_pretraining_data_beam(cfg, DIRECT)


def test_cli_beam_empty_input_is_a_one_line_error(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n\n")
    cfg = config(str(blank), tmp_path / "out", num_output_shards=2)
    out = run_tool(cli_args(cfg, runner="beam"))
    _one_line_error(out, "no instances were made", "0 document(s)")
    assert not os.path.exists(os.path.join(cfg.output_dir, "meta_data.json"))


@pytest.mark.parametrize(
    "flags, needles",
    [
        (dict(beam_runner="DataflowRunner"), ["--beam_runner need --runner beam"]),
        (dict(beam_options="--direct_num_workers=2"), ["--beam_options need --runner beam"]),
        (dict(runner="beam", num_tasks=2, task_index=1), ["--num_tasks, --task_index belong"]),
        (dict(runner="beam", num_workers=2), ["--num_workers belong to --runner local"]),
        (dict(runner="beam", beam_runner="Direct"), ["--beam_runner=Direct is not one of"]),
        (dict(runner="beam", beam_options="--runner=FlinkRunner"), ["with --beam_runner"]),
    ],
)
def test_cli_wrong_runner_flags_are_one_line_errors(tmp_path, flags, needles):
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    cfg = config(str(tmp_path / "a.txt"), tmp_path / "out")
    _one_line_error(run_tool(cli_args(cfg, **flags)), *needles)
    assert not os.path.exists(cfg.output_dir)


def test_cli_beam_without_apache_beam_says_how_to_install(tmp_path):
    (tmp_path / "a.txt").write_text("Some text.\nMore text.\n")
    cfg = config(str(tmp_path / "a.txt"), tmp_path / "out")
    blocked = textwrap.dedent(
        f"""
        import runpy, sys
        sys.modules["apache_beam"] = None  # as if it were not installed
        sys.argv[0] = "{TOOL[1]}"
        runpy.run_module("{TOOL[1]}", run_name="__main__")
        """
    )
    out = run_cli("-c", blocked, *cli_args(cfg, runner="beam"))
    _one_line_error(out, "needs Apache Beam", "pip install -e .[beam]")
