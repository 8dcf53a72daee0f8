"""This project's own checkpoints: object-based `tf.train.Checkpoint(model=...)` files
with `albert_config.json` beside them.

Every model keeps its encoder in `model.encoder` and its heads in named attributes, so an
encoder restores from any model's checkpoint and a head that is absent can be reported.
"""

from __future__ import annotations

import os

import tensorflow as tf

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from data_pipeline.io import filesystem

CONFIG_NAME = "albert_config.json"


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or does not fit the model."""


# ----------------------------------------------------------------------------- own format
def resolve_checkpoint(path: str) -> str:
    """What every `--init_checkpoint` accepts → a readable checkpoint prefix:

    - a checkpoint prefix (`DIR/ckpt-4`, `model.ckpt-best`, with or without `.index`);
    - a checkpoint directory: its latest checkpoint (the `checkpoint` state file), a TF-Hub
      v1 module (`variables/variables`) or its one `*.index` file (export_encoder and
      convert outputs are such directories);
    - a run's output directory (run_pretraining, run_classifier, run_squad): the latest
      checkpoint of its `checkpoints/` (where training ended), else its `best/`.
    """
    path = os.fspath(path)
    if filesystem.isdir(path) and not _holds_checkpoint(path):
        for sub in ("checkpoints", "best"):
            if _holds_checkpoint(os.path.join(path, sub)):
                path = os.path.join(path, sub)
                break
    if filesystem.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            hub_variables = os.path.join(path, "variables", "variables")  # TF-Hub v1 module
            if filesystem.exists(hub_variables + ".index"):
                return hub_variables
            indexes = sorted(filesystem.glob(os.path.join(filesystem.escape(path), "*.index")))
            if len(indexes) == 1:
                return indexes[0][: -len(".index")]
            raise CheckpointError(
                f"no checkpoint in directory {path} (no 'checkpoint' state file and "
                f"{len(indexes)} *.index files)"
            )
        return latest
    if path.endswith(".index"):
        path = path[: -len(".index")]
    if filesystem.exists(path + ".index"):
        return path
    raise FileNotFoundError(
        f"checkpoint not found: {path} (expected a directory or a "
        f"checkpoint prefix with {os.path.basename(path)}.index)"
    )


def checkpoint_reader(prefix: str):
    """A reader of the checkpoint at `prefix` (tf.errors.OpError when it does not read).
    Unlike `tf.train.load_checkpoint`, never takes `prefix` for a directory (which ram://
    does for any prefix of a file name)."""
    return tf.compat.v1.train.NewCheckpointReader(prefix)


def unreadable(prefix: str, error: Exception) -> CheckpointError:
    """The one-line CheckpointError of a checkpoint whose files do not read: tf.errors'
    OpError of a random or truncated .index / .data file, or the IndexError ("Read less
    bytes than requested") of a .data file cut short."""
    message = getattr(error, "message", None) or str(error)
    lines = str(message).strip().splitlines()
    return CheckpointError(
        f"{prefix}: not a readable TensorFlow checkpoint (truncated or corrupt?): "
        f"{lines[0] if lines else type(error).__name__}"
    )


def checkpoint_variables(prefix: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every variable at `prefix`, sorted (`tf.train.list_variables`)."""
    return sorted(checkpoint_reader(prefix).get_variable_to_shape_map().items())


def _holds_checkpoint(directory: str) -> bool:
    return filesystem.isdir(directory) and (
        filesystem.exists(os.path.join(directory, "checkpoint"))
        or bool(filesystem.glob(os.path.join(filesystem.escape(directory), "*.index")))
        or filesystem.exists(os.path.join(directory, "variables", "variables.index"))
    )


def _checkpoint_root(model, components: list[str] | None = None):
    """The object graph every own checkpoint uses: root → model → encoder/heads.

    With `components`, only those parts of `model` (e.g. ["encoder", "mlm_head"]) are
    written, so that a head that was never trained or imported is absent, not random.
    """
    if isinstance(model, AlbertEncoder):
        return tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=model))
    if components is None:
        return tf.train.Checkpoint(model=model)
    return tf.train.Checkpoint(
        model=tf.train.Checkpoint(**{name: getattr(model, name) for name in components})
    )


def save_checkpoint(
    model,
    directory: str,
    config: AlbertConfig | None = None,
    max_to_keep: int = 1,
    components: list[str] | None = None,
) -> str:
    """Writes `model` (an encoder or any model with `.encoder`) as `directory/ckpt-N`, plus
    `albert_config.json`. Returns the checkpoint prefix.

    `components` restricts what is written (see `_checkpoint_root`). The `checkpoint`
    state file is updated only after the data is complete, so a crash never leaves a half
    checkpoint that `load_checkpoint(directory)` would pick.
    """
    if not model.built:
        model.build()
    filesystem.makedirs(directory)
    config = config or model_config(model)
    config.to_json_file(os.path.join(directory, CONFIG_NAME))
    manager = tf.train.CheckpointManager(
        _checkpoint_root(model, components), directory, max_to_keep=max_to_keep
    )
    return manager.save()


def model_config(model) -> AlbertConfig:
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    return encoder.config


# The checkpoint object every task model keeps its AlbertEncoder under (model/encoder/...);
# its other named sub-layers are its heads.
ENCODER_OBJECT = "encoder"


def head_attributes(model) -> list[str]:
    """Named sub-layers of a task model other than its encoder (its heads)."""
    import keras

    return [
        name
        for name, value in vars(model).items()
        if isinstance(value, keras.layers.Layer)
        and name != ENCODER_OBJECT
        and not name.startswith("_")
    ]
