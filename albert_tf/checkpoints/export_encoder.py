"""Exports the encoder of a trained model for fine-tuning: `DIR/ckpt-1` + `DIR/albert_config.json`.

    python -m albert_tf.checkpoints.export_encoder --init_checkpoint RUN/checkpoints \\
        [--albert_config_file FILE] --output_dir DIR

`--init_checkpoint` is a pretraining run's checkpoint directory or prefix (model + heads +
optimizer + data position), or any checkpoint `load_checkpoint` accepts (`save_checkpoint`,
`albert_tf.checkpoints.convert`, official TF1 / TF-Hub). A run's output directory works too (its
`checkpoints/` is used). The config is `--albert_config_file`, else the first of
`albert_config.json` and `run_config.json` ("albert_config") found in the checkpoint's
directory, then in its parent (where a run writes run_config.json).

The result holds the encoder only (embeddings, blocks, pooler: no heads, no optimizer state),
a tenth of a run's checkpoint or less, and works as `--init_checkpoint` of every runner.
The tokenizer the source was trained with, when recorded (a run's run_config.json, a
fine-tuned directory's vocabulary, an earlier export's tokenizer.json), is recorded in
`DIR/tokenizer.json` (`albert_tf.checkpoints.tokenizer_record`), so fine-tuning from the
export checks its --spm_model_file / --vocab_file against it.
It is written to a temporary directory, checked, then moved into place: an interrupted or
failed export leaves no checkpoint behind. `DIR` is locked while the export runs
(`data_pipeline.io.locks.output_lock`): a second writer on it fails at once.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile

from albert_tf.checkpoints.run_record import RUN_RECORD_FILE, RunRecord
from albert_tf.checkpoints.tokenizer_record import recorded_tokenizer, write_tokenizer_record
from albert_tf.modeling.config import AlbertConfig, ConfigError
from data_pipeline.cli import setting
from data_pipeline.command import Command
from data_pipeline.io import filesystem
from data_pipeline.io.locks import output_lock

# (the checkpoint modules, which import TensorFlow, are imported inside the functions: the
# command's --help and a bad command line come first)


@dataclasses.dataclass(frozen=True)
class ExportEncoderSettings:
    """Which checkpoint, its config, and where the encoder goes."""

    init_checkpoint: str | None = setting(
        None,
        "A run's checkpoint directory or prefix (or its output directory), or any checkpoint "
        "load_checkpoint accepts.",
    )
    albert_config_file: str | None = setting(
        None,
        "albert_config.json; by default found beside the checkpoint (albert_config.json or "
        "run_config.json).",
    )
    output_dir: str | None = setting(None, "Where to write ckpt-1 and albert_config.json.")


COMMAND = Command(
    "albert-export-encoder",
    __doc__,
    (ExportEncoderSettings,),
    required=("init_checkpoint", "output_dir"),
)


def checkpoint_config(
    init_checkpoint: str, albert_config: AlbertConfig | str | None = None
) -> tuple[AlbertConfig, str]:
    """The config of a checkpoint, and where it came from.

    `albert_config` (a config or a path) wins; otherwise the first of `albert_config.json`,
    `run_config.json`["albert_config"] in the checkpoint's directory, then in its parent.

    Raises:
      FileNotFoundError: no checkpoint at `init_checkpoint`, or `albert_config` names no file.
      ConfigError: no config found (the paths searched are named), or an invalid one.
    """
    from albert_tf.checkpoints.own import CONFIG_NAME, resolve_checkpoint

    prefix = resolve_checkpoint(init_checkpoint)
    if isinstance(albert_config, AlbertConfig):
        return albert_config, "the given config"
    if albert_config:
        return AlbertConfig.from_json_file(albert_config), os.fspath(albert_config)
    here = os.path.dirname(prefix if filesystem.is_url(prefix) else os.path.abspath(prefix))
    searched = []
    for directory in dict.fromkeys((here, os.path.dirname(here))):
        config_path = os.path.join(directory, CONFIG_NAME)
        searched.append(config_path)
        if filesystem.isfile(config_path):
            return AlbertConfig.from_json_file(config_path), config_path
        run_path = os.path.join(directory, RUN_RECORD_FILE)
        searched.append(run_path)
        try:
            run = RunRecord.read(directory)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if run is not None and run.albert_config is not None:
            source = f"{run_path} (albert_config)"
            return AlbertConfig.from_dict(run.albert_config, source=source), source
    raise ConfigError(
        f"no config for checkpoint {prefix}: none of {', '.join(searched)} "
        f"holds one; pass --albert_config_file"
    )


def _encoder_variables(prefix: str) -> dict[str, str]:
    """Variables under root → model → encoder in an own checkpoint's object graph:
    path relative to the encoder (first path breadth-first, as TF names them) → key.

    Read from the object graph because a trainer checkpoint names most variables after
    their path through the optimizer (`optimizer/_trainable_variables/N`).
    """
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    from albert_tf.checkpoints.own import checkpoint_reader

    reader = checkpoint_reader(prefix)
    if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
        return {}
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))

    def child(node, name):
        return next((c.node_id for c in graph.nodes[node].children if c.local_name == name), None)

    model = child(0, "model")
    encoder = child(model, "encoder") if model is not None else None
    if encoder is None:
        return {}
    out, seen, queue = {}, {encoder}, [(encoder, "")]
    for node, path in queue:  # grows while iterating: breadth-first
        for attribute in graph.nodes[node].attributes:
            if attribute.name == "VARIABLE_VALUE":
                out[path] = attribute.checkpoint_key
        for c in graph.nodes[node].children:
            if c.node_id not in seen:
                seen.add(c.node_id)
                queue.append((c.node_id, f"{path}/{c.local_name}" if path else c.local_name))
    return out


def _official_extras(prefix: str, encoder) -> list[str]:
    """Encoder variables of an official TF1 checkpoint that the model has no place for
    (e.g. group_1 when the config has one group); load_checkpoint ignores them."""
    from albert_tf.checkpoints.official import OPTIMIZER_SUFFIXES, official_name_map, strip_module
    from albert_tf.checkpoints.own import checkpoint_variables

    known = official_name_map(encoder)
    names = (strip_module(n) for n, _ in checkpoint_variables(prefix))
    return sorted(
        n
        for n in names
        if n.startswith("bert/") and n not in known and not n.endswith(OPTIMIZER_SUFFIXES)
    )


def export_encoder(
    init_checkpoint: str, output_dir: str, albert_config: AlbertConfig | str | None = None
) -> str:
    """Writes the encoder of `init_checkpoint` as `output_dir/ckpt-1` with
    `output_dir/albert_config.json`. Returns the checkpoint prefix.

    Args:
      init_checkpoint: checkpoint directory or prefix (see the module docstring).
      output_dir: a new directory, or one without a checkpoint.
      albert_config: an `AlbertConfig` or the path of an albert_config.json; by default
        found beside the checkpoint (`checkpoint_config`).

    Raises:
      FileNotFoundError: no checkpoint at `init_checkpoint`.
      ConfigError: no config found, or an invalid one.
      CheckpointError: the checkpoint does not fit the config, holds no encoder, or
        `output_dir` already holds a checkpoint.
      OutputLocked: another writer holds `output_dir` (an OSError).
    """
    output_dir = os.fspath(output_dir)
    with output_lock(output_dir, "albert_tf.checkpoints.export_encoder"):
        return _export_encoder(init_checkpoint, output_dir, albert_config)


def _export_encoder(init_checkpoint, output_dir: str, albert_config) -> str:
    """export_encoder under the lock of `output_dir` (created; removed again if still empty
    when the lock is released)."""
    from albert_tf.checkpoints import (
        CheckpointError,
        load_checkpoint,
        resolve_checkpoint,
        save_checkpoint,
    )
    from albert_tf.modeling.encoder import AlbertEncoder

    prefix = resolve_checkpoint(init_checkpoint)
    config, config_source = checkpoint_config(prefix, albert_config)
    existing = [
        p
        for p in (
            os.path.join(output_dir, "checkpoint"),
            *filesystem.glob(os.path.join(filesystem.escape(output_dir), "ckpt-*.index")),
        )
        if filesystem.exists(p)
    ]
    if existing:
        raise CheckpointError(
            f"--output_dir {output_dir} already holds a checkpoint "
            f"({existing[0]}); choose a new directory"
        )

    encoder = AlbertEncoder(config)
    try:
        report = load_checkpoint(encoder, prefix)
    except CheckpointError as e:
        raise CheckpointError(f"{e} [config: {config_source}]") from None
    if report.format == "tf1":
        extras = _official_extras(prefix, encoder)
    else:
        extras = None  # compared after writing, object graph against object graph

    # Written beside the output (renamed into it), or locally for a URL (copied up).
    remote = filesystem.is_url(output_dir)
    if remote:
        tmp = tempfile.mkdtemp(prefix="albert-export-encoder-")
    else:
        tmp = f"{output_dir.rstrip(os.sep)}.tmp-export-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp_prefix = save_checkpoint(encoder, tmp, config)
        tokenizer = recorded_tokenizer(prefix)
        if tokenizer is not None:
            where, record = tokenizer
            write_tokenizer_record(tmp, {**record, "source": record.get("source", where)})
        if extras is None:
            extras = sorted(set(_encoder_variables(prefix)) - set(_encoder_variables(tmp_prefix)))
        if extras:
            raise CheckpointError(
                f"{prefix} holds {len(extras)} encoder variable(s) that config "
                f"{config_source} has no place for (another depth or sharing?): "
                + ", ".join(extras[:5])
                + (" ..." if len(extras) > 5 else "")
            )
        _write_card(tmp, prefix, init_checkpoint, output_dir)
        filesystem.makedirs(output_dir)
        # The state file last: until it is in place, no reader picks the new checkpoint.
        names = sorted(os.listdir(tmp), key=lambda n: n == "checkpoint")
        for name in names:
            move = filesystem.copy if remote else os.replace
            move(os.path.join(tmp, name), os.path.join(output_dir, name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return os.path.join(output_dir, os.path.basename(tmp_prefix))


def _write_card(directory: str, prefix: str, init_checkpoint, output_dir: str) -> None:
    """The export's README.md: its records, then those of the run `prefix` comes from."""
    import shlex

    from albert_tf.checkpoints.model_card import near, write_model_card

    command = (
        "python -m albert_tf.checkpoints.export_encoder "
        f"--init_checkpoint={shlex.quote(os.fspath(init_checkpoint))} "
        f"--output_dir={shlex.quote(output_dir)}"
    )
    write_model_card(
        directory,
        near(prefix),
        name=os.path.basename(os.path.normpath(output_dir)),
        what=f"An ALBERT encoder (no head), exported from {prefix}.",
        commands=(command,),
        own_figures=False,  # (a run's figures are of its model with its head)
    )


def main(argv=None) -> int:
    """The console command `albert-export-encoder`: parse once (--help: before TensorFlow),
    export; the exit code (2: a bad command line; 1: one `error:` line)."""
    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    from albert_tf.checkpoints.own import CONFIG_NAME, checkpoint_variables, resolve_checkpoint

    try:
        source = resolve_checkpoint(s.init_checkpoint)
        _, config_source = checkpoint_config(source, s.albert_config_file)
        prefix = export_encoder(source, s.output_dir, s.albert_config_file)
    except (OSError, ValueError) as e:  # ConfigError, CheckpointError, OutputLocked
        print(f"error: {e}", file=sys.stderr)
        return 1
    import numpy as np

    count = sum(
        int(np.prod(shape))
        for name, shape in checkpoint_variables(prefix)
        if name.startswith("model/encoder/")
    )
    print(
        f"wrote {prefix} (encoder only, {count:,} parameters) and "
        f"{os.path.join(s.output_dir, CONFIG_NAME)}"
    )
    print(f"  from {source}, config {config_source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
