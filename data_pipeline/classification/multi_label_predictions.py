"""A multi-label classifier's test predictions as a file:

  <task>_test_predictions.jsonl   {"guid", "labels": [names at or over their thresholds],
                                  "probabilities": {label: sigmoid p}} a line,

written atomically (a GLUE-style TSV has no column for several labels)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np

from data_pipeline.classification.multi_label_metrics import decide, sigmoid
from data_pipeline.io.atomic import atomic_open


def write_multi_label_predictions(
    out_dir: str,
    task_name: str,
    examples,
    logits: np.ndarray,
    labels: Sequence[str],
    thresholds: Sequence[float],
) -> str:
    """Writes the module's file for `examples` (in the order of `logits` [N, L]) decided
    at `thresholds` [L]; returns its path."""
    path = os.path.join(out_dir, f"{task_name}_test_predictions.jsonl")
    probabilities = sigmoid(logits)
    chosen = decide(probabilities, thresholds)
    with atomic_open(path) as f:
        for e, p, row in zip(examples, probabilities, chosen):
            names = [name for name, on in zip(labels, row) if on]
            line = {
                "guid": e.guid,
                "labels": names,
                "probabilities": dict(zip(labels, p.round(6).tolist())),
            }
            f.write(json.dumps(line) + "\n")
    return path
