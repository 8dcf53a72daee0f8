"""Test-set predictions as files: the GLUE submission TSV and a JSONL with probabilities.

  <NAME>.tsv                      `index<TAB>prediction` a row, after an `index prediction`
                                  header: what the GLUE server takes (NAME: MNLI-m, STS-B,
                                  SST-2, else the task name upper-cased). The index is the
                                  file's own id column (the example's guid after `test-`);
                                  STS-B scores are clipped to [0, 5] with three decimals.
  <task>_test_predictions.jsonl   {"guid", "label", "probabilities": {label: p}} a line,
                                  or {"guid", "score"} (regression, unclipped).
Multiple choice names its choices A, B, C, ... (`tasks.TaskSpec.output_names`); padding
choices get (almost) no probability. Both files are written atomically.
"""

from __future__ import annotations

import json
import os

import numpy as np

from data_pipeline.io.atomic import atomic_open

SUBMISSION_NAMES = {"mnli": "MNLI-m", "sts-b": "STS-B", "sst-2": "SST-2"}


def _index(guid: str) -> str:
    split, _, rest = guid.partition("-")
    return rest if split in ("train", "dev", "test") and rest else guid


def write_submission(
    out_dir: str, task_name: str, examples, logits: np.ndarray, labels: list[str] | None
) -> tuple[str, str]:
    """Writes the two files of the module docstring for `examples` (test examples, in the
    order of `logits` [N, labels or choices]); `labels` names the logits' columns, None
    for regression (one column, the score). Returns (tsv path, jsonl path)."""
    tsv = os.path.join(out_dir, f"{SUBMISSION_NAMES.get(task_name, task_name.upper())}.tsv")
    jsonl = os.path.join(out_dir, f"{task_name}_test_predictions.jsonl")
    with atomic_open(tsv) as f, atomic_open(jsonl) as g:
        f.write("index\tprediction\n")
        for e, row in zip(examples, logits):
            if labels is None:
                value = float(row[0])
                f.write(f"{_index(e.guid)}\t{min(max(value, 0.0), 5.0):.3f}\n")
                g.write(json.dumps({"guid": e.guid, "score": value}) + "\n")
                continue
            p = np.exp(row - row.max())
            p /= p.sum()
            label = labels[int(row.argmax())]
            f.write(f"{_index(e.guid)}\t{label}\n")
            g.write(
                json.dumps(
                    {
                        "guid": e.guid,
                        "label": label,
                        "probabilities": dict(zip(labels, p.round(6).tolist())),
                    }
                )
                + "\n"
            )
    return tsv, jsonl
