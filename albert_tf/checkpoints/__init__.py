"""Checkpoints: this project's own format, the official TF1 / TF-Hub names, Hugging Face
weights, and the two command-line tools over them (`convert`, `export_encoder`).

The names below are imported on first use (PEP 562), not with the package: a runner that
only reads a run record (`albert_tf.checkpoints.run_record`) to check its flags does not
import TensorFlow for it, so a bad flag is reported at once.
"""

from __future__ import annotations

import importlib

_HOMES = {
    "LoadReport": "loading",
    "load_checkpoint": "loading",
    "HEADS": "official",
    "AssignResult": "official",
    "OfficialVariable": "official",
    "assign_official": "official",
    "official_name_map": "official",
    "read_tf1_checkpoint": "official",
    "CONFIG_NAME": "own",
    "CheckpointError": "own",
    "resolve_checkpoint": "own",
    "save_checkpoint": "own",
    "config_from_transformers": "transformers",
    "read_transformers": "transformers",
    "transformers_to_official": "transformers",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
