"""`--strategy tpu` run in-process on a CPU machine: TensorFlow's TPU entry points
(TPUClusterResolver, experimental_connect_to_cluster, initialize_tpu_system, TPUStrategy)
replaced by recorders for the test's duration, the strategy by a one-CPU strategy whose
`distribute_datasets_from_function` and `experimental_distribute_dataset` record the
element shapes of every dataset the run distributes (training, evaluation, prediction).
The project's TPU path runs up to the point where a TPU is needed."""

from __future__ import annotations


def record_tpu(monkeypatch) -> dict:
    """Patches TensorFlow's TPU entry points (undone by `monkeypatch` at the test's end);
    returns the record the run fills: {"resolver": [tpu names], "connect": n,
    "initialize": n, "datasets": [[element shapes as lists] per distributed dataset]}."""
    import tensorflow as tf

    record = {"resolver": [], "connect": 0, "initialize": 0, "datasets": []}

    class Resolver:
        def __init__(self, tpu=None, **kwargs):
            record["resolver"].append(tpu)

    def connect(resolver):
        assert isinstance(resolver, Resolver)
        record["connect"] += 1

    def initialize(resolver):
        assert isinstance(resolver, Resolver) and record["connect"]
        record["initialize"] += 1

    def shapes(ds):
        record["datasets"].append([x.shape.as_list() for x in tf.nest.flatten(ds.element_spec)])

    def strategy(resolver):
        assert record["initialize"]
        s = tf.distribute.OneDeviceStrategy("/cpu:0")
        distribute, distribute_one = (
            s.distribute_datasets_from_function,
            s.experimental_distribute_dataset,
        )

        def recorded(fn, options=None):
            def fn_recorded(ctx):
                ds = fn(ctx)
                shapes(ds)
                return ds

            return distribute(fn_recorded, options)

        def recorded_one(ds, options=None):
            shapes(ds)
            return distribute_one(ds, options)

        s.distribute_datasets_from_function = recorded
        s.experimental_distribute_dataset = recorded_one
        return s

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", Resolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", connect)
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", initialize)
    monkeypatch.setattr(tf.distribute, "TPUStrategy", strategy)
    return record
