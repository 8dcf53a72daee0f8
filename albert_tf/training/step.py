"""The training step: the per-replica computation and the `steps_per_loop` loop the
`Trainer` runs in one `tf.function` call (its module docstring says what they guarantee:
global losses, accumulation equal to the large batch, one all-reduce and global-norm
clipping, the NaN/inf guard).

`TrainStep` holds the very objects the trainer built (task, model, optimizers, variables,
gradient accumulators, strategy, config); the trainer keeps checkpoints, logs, resume and
evaluation.
"""

from __future__ import annotations

from albert_tf.training.tasks import divisors

# max(LAST_STEP - step) over the non-finite steps of a loop is the first of them: the
# loop's float32 totals count steps exactly up to 2**24 and start from zeros (hence a max).
LAST_STEP = float(1 << 24)


class TrainStep:
    """The per-replica step functions and `loop(iterator, num_steps)` → loop totals."""

    def __init__(
        self, task, model, optimizer, inner_optimizer, variables, accumulators, strategy, config
    ):
        self.task, self.model, self.strategy, self.config = task, model, strategy, config
        self.optimizer, self.inner_optimizer = optimizer, inner_optimizer
        self.variables, self.accumulators = variables, accumulators
        self.loss_scaling = config.dtype == "float16"

    def loss(self, batch, dens, training=True):
        outputs = self.task.call_model(self.model, batch, training)
        report = self.task.terms(batch, outputs)
        loss = 0.0
        for name in self.task.losses:
            loss += report[name] / dens[name]
        return loss, report

    def _gradients(self, batch, dens, micro=0):
        import tensorflow as tf

        from albert_tf.modeling.dropout import step_seed
        from albert_tf.modeling.trace_options import DropoutSeed, trace_options

        # Dropout masks are a function of (seed, step, micro-batch, replica): a resumed run
        # draws the masks of an uninterrupted one (albert_tf.modeling.dropout).
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        seed = step_seed(self.config.seed, self.inner_optimizer.iterations, micro, replica)
        # Activation recomputation (--recompute) applies to this forward pass only. Set
        # here, inside the replica function: the trace options are per thread.
        options = trace_options(dropout=DropoutSeed(seed), recompute=self.config.recompute)
        with tf.GradientTape() as tape, options:
            loss, report = self.loss(batch, dens)
            scaled = self.optimizer.scale_loss(loss) if self.loss_scaling else loss
        # Dense gradients: the embedding gather gives IndexedSlices with repeated rows, whose
        # global norm (and so clipping) would count each repeat separately. A variable the
        # task does not use (the pooler under a span head) gets a zero gradient.
        grads = [
            tf.convert_to_tensor(g) if g is not None else tf.zeros_like(v)
            for g, v in zip(tape.gradient(scaled, self.variables), self.variables)
        ]
        return grads, report

    def _reduce_and_clip(self, grads):
        """Per-replica gradients → (their all-reduced sum clipped by its global norm, that
        norm of the unscaled gradients)."""
        import tensorflow as tf

        ctx = tf.distribute.get_replica_context()
        grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        scale = tf.cast(self.optimizer.dynamic_scale, tf.float32) if self.loss_scaling else 1.0
        # clip(g·s, c·s) = clip(g, c)·s: clipping scaled gradients is exact.
        grads, norm = tf.clip_by_global_norm(grads, self.config.clip_norm * scale)
        return grads, norm / scale

    def _replica_apply(self, grads):
        self.optimizer.apply_gradients(zip(grads, self.variables))

    def _replica_skip(self):
        """A skipped step (on_nonfinite="skip_step") still counts: the step number, the
        learning-rate schedule and the input position stay aligned."""
        self.inner_optimizer.iterations.assign_add(1)

    def _replica_step(self, batch, dens):
        grads, report = self._gradients(batch, dens)
        grads, report["grad_norm"] = self._reduce_and_clip(grads)
        self._replica_apply(grads)
        return report

    def _replica_gradients(self, batch, dens):
        """skip_step mode: the step's reduced, clipped gradients; `_loop` applies them only
        when the step is finite."""
        grads, report = self._gradients(batch, dens)
        grads, report["grad_norm"] = self._reduce_and_clip(grads)
        return grads, report

    def _replica_micro_step(self, batch, dens, micro):
        grads, report = self._gradients(batch, dens, micro)
        for acc, g in zip(self.accumulators, grads):
            acc.assign_add(g)
        return report

    def _replica_accumulated(self):
        """The accumulated gradients, reduced and clipped, with their norm; the
        accumulators are zeroed for the next step."""
        import tensorflow as tf

        grads, norm = self._reduce_and_clip([acc.read_value() for acc in self.accumulators])
        for acc in self.accumulators:
            acc.assign(tf.zeros_like(acc))
        return grads, norm

    def _replica_apply_accumulated(self):
        grads, norm = self._replica_accumulated()
        self._replica_apply(grads)
        return {"grad_norm": norm}

    def reduce(self, per_replica):
        import tensorflow as tf

        return {
            k: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
            for k, v in per_replica.items()
        }

    def loop(self, iterator, num_steps):
        """`num_steps` optimizer steps on the batches of `iterator` (a distributed iterator);
        see `run_loop`."""
        return self.run_loop(lambda: next(iterator), num_steps)

    def run_loop(self, next_batch, num_steps):
        """`num_steps` optimizer steps, each on `grad_accum_steps` batches from
        `next_batch()`; returns summed reports and denominators, and
        `nonfinite_rank` (on_nonfinite="stop"): LAST_STEP - the first step whose loss or
        gradient norm was NaN/inf (0 if none), or `skipped` (on_nonfinite="skip_step"): how
        many such steps were not applied. The check costs nothing extra: the loss and the global
        norm are reduced values the loop computes anyway, read with the loop's totals.

        The trainer reads an input iterator here (`loop`), the one host operation of the loop
        (on a TPU it becomes the infeed). With `next_batch` a tensor function instead (batches
        staged on the device), the whole loop compiles as one XLA computation: that is how
        tests/training/test_tpu_readiness.py checks on CPU what a TPU requires."""
        import tensorflow as tf

        k = self.config.grad_accum_steps
        jit = self.config.jit_compile
        step_fn = tf.function(self._replica_step, jit_compile=jit)
        micro_fn = tf.function(self._replica_micro_step, jit_compile=jit)
        # With float16 the LossScaleOptimizer already skips overflowing steps (and lowers
        # its scale); there only a non-finite loss counts.
        skip = self.config.on_nonfinite == "skip_step" and not self.loss_scaling
        grads_fn = tf.function(self._replica_gradients, jit_compile=jit)
        apply_fn = tf.function(self._replica_apply, jit_compile=jit)
        totals = None
        for _ in tf.range(num_steps):
            batches = [next_batch() for _ in range(k)]
            dens_parts = [
                self.reduce(self.strategy.run(self.task.denominators, (b,))) for b in batches
            ]
            dens = {key: tf.add_n([d[key] for d in dens_parts]) for key in dens_parts[0]}
            safe = divisors(self.task.losses, dens, self.task.denominator_offsets)
            grads = None
            if k == 1 and skip:
                grads, report = self.strategy.run(grads_fn, (batches[0], safe))
                report = self.reduce(report)
            elif k == 1:
                report = self.reduce(self.strategy.run(step_fn, (batches[0], safe)))
            else:
                parts = [
                    self.reduce(self.strategy.run(micro_fn, (b, safe, tf.constant(i))))
                    for i, b in enumerate(batches)
                ]
                report = {key: tf.add_n([p[key] for p in parts]) for key in parts[0]}
                if skip:
                    grads, norm = self.strategy.run(self._replica_accumulated, ())
                    report["grad_norm"] = self.reduce({"n": norm})["n"]
                else:
                    accumulated = self.strategy.run(self._replica_apply_accumulated, ())
                    report.update(self.reduce(accumulated))
            # grad_norm is identical on every replica: undo the sum.
            report["grad_norm"] = report["grad_norm"] / self.strategy.num_replicas_in_sync
            loss = tf.add_n([report[n] / safe[n] for n in self.task.losses])
            finite = tf.math.is_finite(loss)
            if not self.loss_scaling:
                finite = tf.logical_and(finite, tf.math.is_finite(report["grad_norm"]))
            step_values = {
                **{f"sum/{n}": v for n, v in report.items()},
                **{f"den/{n}": v for n, v in dens.items()},
                "count": 1.0,
            }
            step_values = {n: tf.cast(v, tf.float32) for n, v in step_values.items()}
            if skip:

                def apply(grads=grads):
                    self.strategy.run(apply_fn, (grads,))
                    return tf.constant(0.0)

                def skip_step():
                    self.strategy.run(self._replica_skip, ())
                    return tf.constant(1.0)

                # The same decision on every replica: the loss and the norm are global.
                step_values = {n: tf.where(finite, v, 0.0) for n, v in step_values.items()}
                step_values["skipped"] = tf.cond(finite, apply, skip_step)
            else:
                # max(LAST_STEP - step) over the bad steps is the first one: a max, because
                # the loop's totals start from zeros.
                at = tf.cast(self.inner_optimizer.iterations, tf.float32)
                step_values["nonfinite_rank"] = tf.where(finite, 0.0, LAST_STEP - at)
            totals = (
                step_values
                if totals is None
                else {
                    n: (tf.maximum if n == "nonfinite_rank" else tf.add)(totals[n], v)
                    for n, v in step_values.items()
                }
            )
        return totals
