"""Throughput and peak memory of create_pretraining_data, on real text.

    python -m bench.pretraining_data [--json_out FILE]

Job (the reference setting of the writer's speed target): ~5 MB of real English text
($ALBERT_TF_DATA/corpus: WikiText-2 valid+test and the inaugural and State of the Union
addresses, one paragraph a line, so `--split_sentences`), `max_seq_length` 128,
`dupe_factor` 3, the ALBERT-recipe SentencePiece model
$ALBERT_TF_DATA/spm/de-30k-clean.model, everything else default.

Each case runs the command line tool in a fresh process (start-up, tokenization and writing
included: what a user waits for) and samples the RSS of its whole process tree every 20 ms
(main + workers, summed), so "peak RSS" is the memory the job needs. The 4× case reads the
same corpus four times (as four copies, written to a temporary directory): its RSS must stay
flat because memory is bounded by the block, not the corpus.

Reference: the official create_pretraining_data.py on this 2-core machine made about
466 instances/s on this job, peak RSS 785 MB growing with corpus × dupe_factor.

`--beam` adds `--runner beam` on DirectRunner for the 5 MB and 20 MB jobs, run by the
Beam venv's Python (`--beam_python`, default .venv-beam/bin/python; requirements-beam.txt):
in one process (Beam's default), and with two worker processes
(`--direct_num_workers=2 --direct_running_mode=multi_processing`); a second table compares
each with the local writer's run on the same job (seconds, ratio, peak RSS) and checks
that the files written are the same bytes.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("ALBERT_TF_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
OFFICIAL_INSTANCES_PER_S = 466.0
OFFICIAL_PEAK_RSS_MB = 785.0


def corpus_files() -> list[str]:
    files = sorted(glob.glob(os.path.join(DATA, "corpus", "wikitext-2", "*.txt")))
    files += sorted(glob.glob(os.path.join(DATA, "corpus", "en_speeches", "*", "*.txt")))
    return files


def _tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants (children started by any of a
    process's threads: Beam starts its worker processes from a thread)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


# Runners: the flags each adds to the command line (beyond the job's own).
BEAM_MULTI = "--direct_num_workers={} --direct_running_mode=multi_processing"
RUNNERS = {
    "local": lambda workers: [f"--num_workers={workers}"],
    "beam": lambda workers: (
        ["--runner=beam", "--beam_runner=DirectRunner"]
        + ([f"--beam_options={BEAM_MULTI.format(workers)}"] if workers > 1 else [])
    ),
}


def _output_digest(out_dir: str) -> str:
    """sha256 over every file written (shards, stats, meta_data.json), by name."""
    h = hashlib.sha256()
    for root, _, names in sorted(os.walk(out_dir)):
        for name in sorted(names):
            if name.startswith(".lock"):
                continue
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, out_dir).encode())
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def run_case(
    inputs: str, workers: int, out_dir: str, extra=(), runner: str = "local", python=None
) -> dict:
    cmd = [
        python or sys.executable,
        "-m",
        "data_pipeline.pretraining.create_pretraining_data",
        f"--input_file={inputs}",
        f"--output_dir={out_dir}",
        f"--spm_model_file={os.path.join(DATA, 'spm', 'de-30k-clean.model')}",
        "--max_seq_length=128",
        "--dupe_factor=3",
        "--split_sentences",
        *RUNNERS[runner](workers),
        "--progress_every=1000",
        *extra,
    ]
    start = time.time()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak = [0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    output = proc.communicate()[0]
    elapsed = time.time() - start
    sampler.join()
    if proc.returncode:
        raise RuntimeError(f"create_pretraining_data failed:\n{output}")
    with open(os.path.join(out_dir, "meta_data.json")) as f:
        meta = json.load(f)
    return {
        "runner": runner,
        "digest": _output_digest(out_dir),
        "workers": workers,
        "instances": meta["instances"],
        "seconds": elapsed,
        "instances_per_s": meta["instances"] / elapsed,
        "peak_rss_mb": peak[0] / 2**20,
        "input_mb": meta["input"]["bytes"] / 1e6,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json_out", default=None)
    p.add_argument("--repeats", type=int, default=3, help="runs per case; the median is kept")
    p.add_argument("--beam", action="store_true", help="add --runner beam on DirectRunner")
    p.add_argument(
        "--beam_python",
        default=os.path.join(ROOT, ".venv-beam", "bin", "python"),
        help="the Python of the Beam venv (runs the --beam cases)",
    )
    args = p.parse_args()
    if args.beam and not os.path.exists(args.beam_python):
        print(f"--beam needs the Beam venv: {args.beam_python} is absent", file=sys.stderr)
        return 1
    if not os.path.isdir(DATA):
        print(f"needs the real corpus at {DATA}", file=sys.stderr)
        return 1
    files = corpus_files()
    tmp = tempfile.mkdtemp(prefix="bench-pretraining-data-")
    try:
        big = []
        for copy in range(4):
            d = os.path.join(tmp, f"copy{copy}")
            os.makedirs(d)
            for i, f in enumerate(files):
                target = os.path.join(d, f"{i:04d}-{os.path.basename(f)}")
                shutil.copyfile(f, target)
                big.append(target)
        cases = [
            ("5 MB", ",".join(files), 1, "local"),
            ("5 MB", ",".join(files), 2, "local"),
            ("20 MB (4x)", ",".join(big), 2, "local"),
        ]
        if args.beam:
            cases += [
                ("5 MB", ",".join(files), 1, "beam"),
                ("5 MB", ",".join(files), 2, "beam"),
                ("20 MB (4x)", ",".join(big), 1, "beam"),
                ("20 MB (4x)", ",".join(big), 2, "beam"),
            ]
        rows = []
        for label, inputs, workers, runner in cases:
            runs = []
            for r in range(args.repeats if label == "5 MB" else 1):
                out = os.path.join(tmp, f"out-{len(rows)}-{r}")
                python = args.beam_python if runner == "beam" else sys.executable
                runs.append(run_case(inputs, workers, out, runner=runner, python=python))
                shutil.rmtree(out)
            runs.sort(key=lambda x: x["instances_per_s"])
            row = dict(
                runs[len(runs) // 2], input=label, peak_rss_mb=max(x["peak_rss_mb"] for x in runs)
            )
            rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"\n{'input':<12}{'runner':>7}{'workers':>8}{'instances':>11}{'seconds':>9}{'inst/s':>10}"
        f"{'vs official':>13}{'peak RSS MB':>13}"
    )
    for r in rows:
        print(
            f"{r['input']:<12}{r['runner']:>7}{r['workers']:>8}{r['instances']:>11,}"
            f"{r['seconds']:>9.2f}"
            f"{r['instances_per_s']:>10,.0f}"
            f"{r['instances_per_s'] / OFFICIAL_INSTANCES_PER_S:>12.1f}x"
            f"{r['peak_rss_mb']:>13.0f}"
        )
    print(
        f"{'official':<12}{'':>7}{1:>8}{'':>11}{'':>9}{OFFICIAL_INSTANCES_PER_S:>10,.0f}"
        f"{1.0:>12.1f}x{OFFICIAL_PEAK_RSS_MB:>13.0f}"
    )
    if args.beam:
        _print_beam_comparison(rows)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def _print_beam_comparison(rows: list[dict]) -> None:
    """Each Beam row against the local writer's row of the same input (the one with as many
    workers, else the 2-worker one): seconds, ratio, peak RSS, and whether the bytes match."""
    local = {(r["input"], r["workers"]): r for r in rows if r["runner"] == "local"}
    print(
        f"\n{'input':<12}{'Beam DirectRunner':<26}{'local s':>8}{'Beam s':>8}{'Beam/local':>11}"
        f"{'RSS local MB':>13}{'RSS Beam MB':>12}{'same bytes':>11}"
    )
    for r in rows:
        if r["runner"] != "beam":
            continue
        ref = local.get((r["input"], r["workers"])) or local[(r["input"], 2)]
        mode = "1 process" if r["workers"] == 1 else f"{r['workers']} worker processes"
        print(
            f"{r['input']:<12}{mode:<26}{ref['seconds']:>8.2f}{r['seconds']:>8.2f}"
            f"{r['seconds'] / ref['seconds']:>10.2f}x{ref['peak_rss_mb']:>13.0f}"
            f"{r['peak_rss_mb']:>12.0f}{'yes' if r['digest'] == ref['digest'] else 'NO':>11}"
        )


if __name__ == "__main__":
    sys.exit(main())
