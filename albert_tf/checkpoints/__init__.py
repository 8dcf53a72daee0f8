"""Checkpoints: this project's own format, the official TF1 / TF-Hub names, Hugging Face
weights, and the two command-line tools over them (`convert`, `export_encoder`)."""

from albert_tf.checkpoints.loading import LoadReport, load_checkpoint
from albert_tf.checkpoints.official import (
    HEADS,
    AssignResult,
    OfficialVariable,
    assign_official,
    official_name_map,
    read_tf1_checkpoint,
)
from albert_tf.checkpoints.own import (
    CONFIG_NAME,
    CheckpointError,
    resolve_checkpoint,
    save_checkpoint,
)
from albert_tf.checkpoints.transformers import (
    config_from_transformers,
    read_transformers,
    transformers_to_official,
)

__all__ = [
    "CONFIG_NAME",
    "CheckpointError",
    "resolve_checkpoint",
    "save_checkpoint",
    "HEADS",
    "AssignResult",
    "OfficialVariable",
    "assign_official",
    "official_name_map",
    "read_tf1_checkpoint",
    "LoadReport",
    "load_checkpoint",
    "config_from_transformers",
    "read_transformers",
    "transformers_to_official",
]
