"""The trainer's built-in evaluation: the task's loss and metric terms summed over the
evaluation set on every replica, and loop totals turned into figures.

Totals are global sums (terms and their denominators over replicas and batches), divided
once at the end (`summarize`), so an evaluation's figures do not depend on how the set was
batched or split over replicas — the same exact global means as training.
"""

from __future__ import annotations

from albert_tf.training.tasks import Task, divisors


def summarize(task: Task, totals: dict) -> dict:
    """Loop totals ({"sum/NAME", "den/KEY", "sum/grad_norm", "count"}: numbers) →
    {name: value}: every term as sum/denominator, "loss" the sum of the losses, and the
    averaged gradient norm when the totals have one."""
    keys = {**task.losses, **task.metrics}
    dens = divisors(
        keys,
        {key: float(totals[f"den/{key}"]) for key in keys.values()},
        task.denominator_offsets,
    )
    values = {name: float(totals[f"sum/{name}"]) / float(dens[name]) for name in keys}
    values["loss"] = sum(values[n] for n in task.losses)
    if "sum/grad_norm" in totals:
        values["grad_norm"] = float(totals["sum/grad_norm"]) / max(float(totals["count"]), 1)
    return values


class EvalLoop:
    """One pass over an evaluation set: per batch, `strategy.run` of the task's terms and
    denominators (XLA-compiled with `jit_compile`), summed across replicas with `reduce`
    (the train step's), and over batches in Python. Traced once, on first use."""

    def __init__(self, task: Task, model, strategy, reduce, jit_compile: bool = False):
        self.task, self.model, self.strategy = task, model, strategy
        self.reduce, self.jit_compile = reduce, jit_compile
        self._step = None

    def _build(self):
        import tensorflow as tf

        def replica_eval(batch):
            dens = self.task.denominators(batch)
            outputs = self.task.call_model(self.model, batch, False)
            out = {f"sum/{n}": t for n, t in self.task.terms(batch, outputs).items()}
            out.update({f"den/{k}": v for k, v in dens.items()})
            return out

        fn = tf.function(replica_eval, jit_compile=self.jit_compile)
        return tf.function(lambda batch: self.reduce(self.strategy.run(fn, (batch,))))

    def __call__(self, dataset_fn, max_steps: int) -> dict:
        """{name: value} (`summarize`) over at most `max_steps` batches of `dataset_fn`
        (`input_context → tf.data.Dataset`); ValueError when it gives no batch."""
        if self._step is None:
            self._step = self._build()
        dataset = self.strategy.distribute_datasets_from_function(dataset_fn)
        totals = None
        for i, batch in enumerate(dataset):
            if i >= max_steps:
                break
            values = {k: v.numpy() for k, v in self._step(batch).items()}
            totals = values if totals is None else {k: totals[k] + values[k] for k in totals}
        if totals is None:
            raise ValueError(
                "the evaluation set gave no batch (fewer records than one batch? drop_remainder)"
            )
        return summarize(self.task, totals)
