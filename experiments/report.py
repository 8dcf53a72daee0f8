"""The report of an experiment script: what it prints, also appended to OUTPUT_DIR/report.txt."""

from __future__ import annotations

import os


def report_logger(output_dir: str):
    """`log(msg)`: prints `msg` and appends it to OUTPUT_DIR/report.txt (created)."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, "report.txt")

    def log(msg: str) -> None:
        print(msg, flush=True)
        with open(path, "a") as f:
            f.write(msg + "\n")

    return log
