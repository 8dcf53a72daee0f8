"""A held-out part of the training examples: drawn with a seed, never trained on, used to
tune what must not be tuned on the reported dev set (multi-label decision thresholds), the
rule SQuAD v2.0's null threshold follows with its separate file."""

from __future__ import annotations

import dataclasses

import numpy as np

PARTS = ("fit", "tune")


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """fraction of the training examples (0 < fraction < 1, at least one example each
    side) drawn at random with `seed` into the `tune` part; the rest is the `fit` part.
    `part` says which one a feature file holds."""

    fraction: float
    seed: int
    part: str = "fit"

    def __post_init__(self):
        if not 0 < self.fraction < 1:
            raise ValueError(f"--held_out_fraction={self.fraction} is not in (0, 1)")
        if self.part not in PARTS:
            raise ValueError(f"held-out part {self.part!r} is not one of {PARTS}")

    def tune_indices(self, count: int) -> np.ndarray:
        """The sorted indices [K] of the tune part among `count` examples: K =
        round(fraction × count); ValueError when either part would be empty."""
        k = int(round(self.fraction * count))
        if not 0 < k < count:
            raise ValueError(
                f"--held_out_fraction={self.fraction} of {count} training examples leaves "
                f"{k} to tune on and {count - k} to train on (both must be > 0)"
            )
        return np.sort(np.random.default_rng(self.seed).permutation(count)[:k])

    def select(self, examples: list) -> list:
        """This part's examples, in file order."""
        tune = set(self.tune_indices(len(examples)).tolist())
        keep = (lambda i: i in tune) if self.part == "tune" else (lambda i: i not in tune)
        return [e for i, e in enumerate(examples) if keep(i)]

    def key(self) -> dict:
        """What the feature cache's fingerprint records of it."""
        return {"held_out": [self.fraction, self.seed, self.part]}
