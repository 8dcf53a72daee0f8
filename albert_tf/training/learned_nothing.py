"""The one line a run prints when its evaluation shows it learned nothing that tells classes
apart: every prediction of the evaluation is one class (a classifier stuck on the majority
label, a tagger that tags every word "O"). Its figures alone (accuracy near the majority
share, F1 0.0000) do not say so, and a user reads them as a weak model rather than a
degenerate one. One rule for every family (the driver asks each for its predicted classes).
"""

from __future__ import annotations


def one_class_line(counts: dict | None, metric: str, value: float | None) -> str | None:
    """The line when `counts` ({class: predictions}) has one class predicted (of two or
    more predictions); None otherwise or without counts. `metric`/`value`: the run's
    figure, named beside the class."""
    if not counts:
        return None
    live = {name: n for name, n in counts.items() if n}
    if len(live) != 1:
        return None
    ((name, n),) = live.items()
    if n < 2:
        return None
    figure = f"{metric} {value:.4f}" if isinstance(value, (int, float)) else metric
    return (
        f"note: every prediction of the last evaluation is one class, {name!r} ({n} of {n}); "
        f"{figure}: the model tells no classes apart (revisit the learning rate, the steps, "
        f"--class_weights)"
    )
