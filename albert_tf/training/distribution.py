"""Where and in which precision a run computes: `tf.distribute` strategies by name, the
Keras mixed-precision policy, and which worker of a multi-worker run writes the run's
files."""

from __future__ import annotations

import dataclasses
import os

from data_pipeline.cli import setting


def make_strategy(name: str = "default", tpu: str | None = None, num_gpus: int = 0):
    """`default` (CPU or one GPU), `one_device`, `mirrored` (all local GPUs, or the CPU
    devices when there is none), `multi_worker_mirrored` (TF_CONFIG), `tpu` (`tpu` names
    the TPU or its grpc:// address; "" or "local" for a TPU VM)."""
    import tensorflow as tf

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if num_gpus > 0 else "/cpu:0")
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        if num_gpus:
            gpus = gpus[:num_gpus]
        devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(
        f"strategy {name!r} is not one of default, one_device, mirrored, multi_worker_mirrored, tpu"
    )


def set_precision(dtype: str) -> None:
    """Keras dtype policy for `dtype` (call before building the model)."""
    import keras

    keras.config.set_dtype_policy(
        {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}[dtype]
    )


def task_output_dir(strategy, output_dir: str) -> str:
    """`output_dir` for the chief (and single-worker strategies); `output_dir/workers/TYPE_ID`
    for the other workers of a multi-worker strategy, so that only the chief writes the run's
    files."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return output_dir
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    if task_type == "chief" or (
        task_type == "worker" and task_id == 0 and "chief" not in resolver.cluster_spec().as_dict()
    ):
        return output_dir
    return os.path.join(output_dir, "workers", f"{task_type}_{task_id}")


STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


@dataclasses.dataclass(frozen=True)
class DistributionSettings:
    """Where the run computes (albert_tf.training.distribution.make_strategy)."""

    strategy: str = setting("default", "tf.distribute strategy.", choices=STRATEGIES)
    tpu: str | None = setting(None, "TPU name or grpc:// address (--strategy tpu).")
    num_gpus: int = setting(0, "GPUs to use (mirrored/one_device; 0: all / CPU).", minimum=0)
