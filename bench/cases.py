"""Runs each case of a benchmark in its own process (so that its peak RSS and its TensorFlow
state are its own) and collects the JSON each prints on a `RESULT ` line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cases(module: str, cases: list[str], passthrough: list[str]) -> list[dict]:
    """`python -m module --case CASE *passthrough` from the repository root for every case;
    failed cases are reported on stderr and left out."""
    results = []
    for case in cases:
        print(f"[{time.strftime('%H:%M:%S')}] {case} ...", file=sys.stderr, flush=True)
        run = subprocess.run(
            [sys.executable, "-m", module, "--case", case] + passthrough,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
        if run.returncode or not lines:
            print(f"{case} failed:\n{run.stderr[-2000:]}", file=sys.stderr)
            continue
        results.append(json.loads(lines[-1][len("RESULT ") :]))
    return results


def run_child(command: list[str]) -> dict:
    """The JSON object on the last stdout line of `command` (a child benchmark process, the
    repository on its PYTHONPATH, TensorFlow quiet), or {"error": its last stderr line}."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])
