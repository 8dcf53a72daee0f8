"""Runs each case of a benchmark script in its own process (so that its peak RSS and its
TensorFlow state are its own) and collects the JSON each prints on a `RESULT ` line; and
the report logger of the experiment scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def run_cases(script: str, cases: list[str], passthrough: list[str]) -> list[dict]:
    """`python script --case CASE *passthrough` for every case; failed cases are reported
    on stderr and left out."""
    results = []
    for case in cases:
        print(f"[{time.strftime('%H:%M:%S')}] {case} ...", file=sys.stderr, flush=True)
        run = subprocess.run(
            [sys.executable, script, "--case", case] + passthrough, capture_output=True, text=True
        )
        lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
        if run.returncode or not lines:
            print(f"{case} failed:\n{run.stderr[-2000:]}", file=sys.stderr)
            continue
        results.append(json.loads(lines[-1][len("RESULT ") :]))
    return results


def report_logger(output_dir: str):
    """`log(msg)`: prints `msg` and appends it to OUTPUT_DIR/report.txt (created)."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, "report.txt")

    def log(msg: str) -> None:
        print(msg, flush=True)
        with open(path, "a") as f:
            f.write(msg + "\n")

    return log
