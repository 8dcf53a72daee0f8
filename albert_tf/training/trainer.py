"""The one trainer: a custom loop for every task, under any `tf.distribute` strategy.

Keras 3 `model.fit` is not the engine (with Keras 3.15 under MirroredStrategy,
`steps_per_execution > 1` and `jit_compile=True` both fail); this loop is small and does
what TPU pods and multi-GPU runs need:

- Everything is built under `strategy.scope()`. Input comes from
  `strategy.distribute_datasets_from_function`, so each input pipeline reads its own part
  (`tf.distribute.InputContext`).
- One `tf.function` call runs `steps_per_loop` optimizer steps (`tf.range` loop), each a
  `strategy.run` of the per-replica step, which is XLA-compiled with `jit_compile`.
- Losses are exact global means: a task declares its loss and metric terms as
  (numerator, denominator) sums; denominators (e.g. the number of masked tokens) are summed
  over all replicas *and* all `grad_accum_steps` micro-batches before the gradients are
  taken, so accumulating k batches of b gives the update of one batch of k·b, and N replicas
  give the update of one device with the global batch. The MLM loss is the official
  Σ w·nll / (Σ w + 1e-5) (`Task.denominator_offsets`; its accuracy is Σ w·correct / Σ w),
  with the sums global. The official
  TPU code instead averages per-core losses (each core divides by its own Σ w), which
  weighs a masked token by 1/(its core's count): the gradient then depends on how the
  batch was split, and 8 cores or 1 device give different updates from the same batch.
  One global mean is the loss the paper's large-batch formulation describes, and it is
  independent of the replica count; on a single device the two are the same.
- Gradients are all-reduced once, clipped by their global norm (official: 1.0), then
  applied. (Keras' own `global_clipnorm` clips per replica before the all-reduce, which is
  not the global norm; the optimizer's internal all-reduce is therefore switched off here.)
- Mixed precision: `bfloat16` or `float16` Keras policies (losses, softmax and LayerNorm
  stay float32 in the model); float16 adds dynamic loss scaling
  (`keras.optimizers.LossScaleOptimizer`).
- Fault tolerance: `tf.train.CheckpointManager` checkpoints hold model, optimizer (its
  `iterations` is the global step) and the input iterator position; a restarted run resumes
  where the last checkpoint was written and ends with the same weights as an uninterrupted
  run. SIGTERM (preemption) writes a checkpoint at the end of the current loop, then exits;
  under a multi-worker strategy TensorFlow's `PreemptionCheckpointHandler` makes every
  worker write it at the same step (albert_tf.training.preemption).
  Multi-device strategies' iterators cannot be checkpointed (tensorflow#56372): there a
  restart skips the batches already consumed. Under a multi-worker strategy only the chief
  writes to `output_dir`; the other workers write to `output_dir/workers/TYPE_ID`.
- Logs: TensorBoard scalars (`output_dir/train`, `output_dir/eval`), a console progress
  line, and `metrics.jsonl`. Evaluation every `eval_every` steps; the best checkpoint by the
  task's metric is kept in `output_dir/best`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import time
from collections.abc import Callable

from albert_tf.training.config import TrainerConfig
from albert_tf.training.distribution import set_precision, task_output_dir
from albert_tf.training.preemption import coordinated_preemption
from albert_tf.training.resume import clean_temporaries, restore_newest
from albert_tf.training.step import LAST_STEP, TrainStep
from albert_tf.training.tasks import Task, divisors
from data_pipeline.io import filesystem
from data_pipeline.io.atomic import write_json


class Preempted(Exception):
    """Raised after a SIGTERM-triggered checkpoint; the runner exits with status 143."""


class NonFiniteLoss(ValueError):
    """The loss or the gradients became NaN/inf (`on_nonfinite="stop"`): raised before
    anything from that step on is written (no checkpoint, best/, prediction or export)."""


class Trainer:
    """Trains `task` with `config` under `strategy`.

    Args:
      task: a `Task`.
      config: a `TrainerConfig`.
      strategy: a `tf.distribute.Strategy` (see `make_strategy`).
      train_dataset_fn: `input_context → tf.data.Dataset` of per-replica batches (repeated).
      eval_dataset_fn: the same for evaluation (one pass), or None.
      init_checkpoint: weights to start from when no checkpoint of this run exists
        (`checkpoints.load_checkpoint`: ours, official TF1/TF-Hub, converted).
      log: where progress lines go.
      evaluate_fn: `model → {metric: value}` replacing the built-in evaluation loop (task
        metrics computed on predictions, e.g. MCC); the best checkpoint follows
        `task.best_metric` in its result.
    """

    def __init__(
        self,
        task: Task,
        config: TrainerConfig,
        strategy,
        train_dataset_fn: Callable,
        eval_dataset_fn: Callable | None = None,
        init_checkpoint: str | None = None,
        log=print,
        evaluate_fn: Callable | None = None,
    ):
        import tensorflow as tf
        import keras
        from albert_tf.training.optimization import WarmupPolynomialDecay, create_optimizer

        # Non-chief workers write (checkpoints too: saving may need every worker) to their
        # own directory and resume from the chief's checkpoints, as TensorFlow prescribes.
        restore_dir = os.path.join(config.output_dir, "checkpoints")
        config = dataclasses.replace(
            config, output_dir=task_output_dir(strategy, config.output_dir)
        )
        self.task, self.config, self.strategy = task, config, strategy
        self.log = log
        self.eval_dataset_fn = eval_dataset_fn
        self.evaluate_fn = evaluate_fn
        filesystem.makedirs(config.output_dir)
        set_precision(config.dtype)
        keras.utils.set_random_seed(config.seed)
        with strategy.scope():
            self.model = task.build_model()
            schedule = WarmupPolynomialDecay(
                config.learning_rate,
                config.num_train_steps,
                config.num_warmup_steps,
                config.poly_power,
            )
            inner = create_optimizer(config.optimizer, schedule, config.weight_decay_rate)
            # The trainer all-reduces (and clips) gradients itself; see the module docstring.
            inner._all_reduce_sum_gradients = lambda grads_and_vars: list(grads_and_vars)
            self.loss_scaling = config.dtype == "float16"
            self.optimizer = (
                keras.optimizers.LossScaleOptimizer(inner) if self.loss_scaling else inner
            )
            self.inner_optimizer = inner
            self.schedule = schedule
            self.variables = self.model.trainable_variables
            self.optimizer.build(self.variables)
            self.accumulators = []
            if config.grad_accum_steps > 1:
                self.accumulators = [
                    tf.Variable(
                        tf.zeros(v.shape, v.dtype),
                        trainable=False,
                        synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.SUM,
                    )
                    for v in self.variables
                ]
        self.train_dataset = strategy.distribute_datasets_from_function(train_dataset_fn)
        self.train_iterator = iter(self.train_dataset)
        # Multi-device strategies give a DistributedIterator, which TensorFlow cannot
        # checkpoint (tensorflow#56372); their data position is restored by skipping the
        # batches already consumed (exact; costs reading them once), see below.
        iterator_saved = isinstance(self.train_iterator, tf.__internal__.tracking.Trackable)
        parts = {"iterator": self.train_iterator} if iterator_saved else {}
        self.checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer, **parts)
        # Parts of the model still at their random initialization (see `check_trained`).
        self.untrained: list[str] = []
        # The newest checkpoint that reads completely (albert_tf.training.resume): a garbled
        # state file or a deleted latest checkpoint never restarts the run from step 0.
        own_dir = os.path.join(config.output_dir, "checkpoints")
        latest = restore_newest(
            self.checkpoint, restore_dir, log=self.log, repair=restore_dir == own_dir
        )
        self.restored_from = latest
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, own_dir, max_to_keep=config.keep_checkpoint_max
        )
        if latest:
            if not iterator_saved and self.step:
                done, k = self.step, config.grad_accum_steps

                def resumed_fn(ctx):  # each pipeline feeds replicas/pipelines replicas a step
                    per_step = k * ctx.num_replicas_in_sync // ctx.num_input_pipelines
                    return train_dataset_fn(ctx).skip(done * per_step)

                self.train_dataset = strategy.distribute_datasets_from_function(resumed_fn)
                self.train_iterator = iter(self.train_dataset)
        elif init_checkpoint:
            from albert_tf.checkpoints import load_checkpoint

            report = load_checkpoint(self.model, init_checkpoint)
            self.log(f"init_checkpoint: {report}")
            for line in report.warnings():
                self.log(line)
            self.untrained = list(report.missing)
        else:
            self.untrained = ["the whole model (no --init_checkpoint, no checkpoint of this run)"]
        self.train_step = TrainStep(
            task,
            self.model,
            self.optimizer,
            inner,
            self.variables,
            self.accumulators,
            strategy,
            config,
        )
        self._train_loop = tf.function(self.train_step.loop)
        self._eval_step = None
        self._preempted = False
        self._preemption = None  # multi-worker and TPU: created when training starts
        self._preempted_at = 0

    def check_trained(self, what: str) -> None:
        """Raises ValueError (one line) when the model has parts at their random
        initialization and `what` (e.g. "--do_eval without --do_train") would use them as
        they are: an official pretraining checkpoint has no classifier head, and its
        random logits must not pass for an evaluation."""
        if self.untrained and not self.step:
            raise ValueError(
                f"{what}: {', '.join(self.untrained)} "
                f"{'is' if len(self.untrained) == 1 else 'are'} at random "
                f"initialization (not in --init_checkpoint); train first "
                f"(--do_train) or give a fine-tuned checkpoint"
            )

    @property
    def step(self) -> int:
        return int(self.inner_optimizer.iterations.numpy())

    def _summarize(self, totals) -> dict:
        """Loop totals → {name: value}: every term as sum/denominator, averaged grad norm."""
        keys = {**self.task.losses, **self.task.metrics}
        dens = divisors(
            keys,
            {key: float(totals[f"den/{key}"]) for key in keys.values()},
            self.task.denominator_offsets,
        )
        values = {name: float(totals[f"sum/{name}"]) / float(dens[name]) for name in keys}
        values["loss"] = sum(values[n] for n in self.task.losses)
        if "sum/grad_norm" in totals:
            values["grad_norm"] = float(totals["sum/grad_norm"]) / max(float(totals["count"]), 1)
        return values

    def _check_finite(self, totals: dict, step: int) -> None:
        """Raises NonFiniteLoss for a stopped loop; logs the steps a skip_step loop skipped."""
        rank = totals.pop("nonfinite_rank", 0.0)
        if rank > 0:
            first = LAST_STEP - rank
            last = self.manager.latest_checkpoint
            raise NonFiniteLoss(
                f"the loss or the gradients became NaN/inf at step {int(first)}: stopped, and "
                f"nothing from that step on was written (last checkpoint: {last or 'none'}); "
                f"lower --learning_rate, or skip such steps with --on_nonfinite skip_step"
            )
        skipped = int(totals.pop("skipped", 0))
        if skipped:
            self.log(f"skipped {skipped} step(s) with a NaN/inf loss or gradient (up to {step})")

    def _save(self, step: int) -> str:
        """Writes checkpoint `step`; a failed write (disk full) removes what it left and
        raises one line, the earlier checkpoints intact."""
        import tensorflow as tf

        try:
            return self.manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as e:
            directory = self.manager.directory
            clean_temporaries(directory)
            reason = getattr(e, "message", None) or str(e)
            raise OSError(
                f"cannot write checkpoint ckpt-{step} in {directory}: "
                f"{reason.strip().splitlines()[0] if reason.strip() else type(e).__name__}; "
                f"the earlier checkpoints are intact"
            ) from None

    def _on_sigterm(self, signum, frame):
        self._preempted = True
        if self._preemption is not None and self._preemption.handles_sigterm:
            self.log("SIGTERM: every worker will write a checkpoint at the same step, then stop")
        else:
            self.log("SIGTERM: a checkpoint will be written at the end of this loop")

    def _coordinated_save(self, step: int) -> None:
        """The preemption handler's `save_fn`: checkpoint `step` (unless the schedule just
        wrote it), on every worker."""
        self.log(f"preemption: every worker writes checkpoint {step}")
        if os.path.basename(self.manager.latest_checkpoint or "") != f"ckpt-{step}":
            self._save(step)
        self._preempted_at = step

    def _coordinated_stop(self) -> None:
        """The preemption handler's `exit_fn`."""
        raise Preempted(f"preempted at step {self._preempted_at}; checkpoint written")

    def train(self) -> dict:
        """Runs to `num_train_steps` (resuming if a checkpoint exists); returns the last
        training and evaluation figures."""
        import tensorflow as tf

        cfg = self.config
        writer = tf.summary.create_file_writer(os.path.join(cfg.output_dir, "train"))
        previous = signal.signal(signal.SIGTERM, self._on_sigterm) if _main_thread() else None
        if self._preemption is None:
            self._preemption = coordinated_preemption(
                self.strategy,
                signalled=lambda: self._preempted,
                save=self._coordinated_save,
                stop=self._coordinated_stop,
                directory=os.path.join(cfg.output_dir, "preemption"),
            )
        coordinated = self._preemption is not None and self._preemption.handles_sigterm
        step = self.step
        if self.restored_from:
            self.log(f"resumed from {self.restored_from} at step {step}")
        start_step, start = step, time.time()
        last, evaluation = {}, {}
        try:
            while step < cfg.num_train_steps:
                n = min(
                    cfg.steps_per_loop,
                    cfg.num_train_steps - step,
                    _until_multiple(step, cfg.save_checkpoints_steps),
                    _until_multiple(step, cfg.eval_every) if cfg.eval_every else 1 << 30,
                )
                loop_start = time.time()
                totals = self._train_loop(self.train_iterator, tf.constant(n))
                totals = {k: v.numpy() for k, v in totals.items()}
                step = self.step
                self._check_finite(totals, step)
                elapsed = time.time() - loop_start
                last = self._summarize(totals)
                last["learning_rate"] = float(self.schedule(step))
                last["examples_per_second"] = (
                    float(totals["den/examples"]) / elapsed
                    if "den/examples" in totals
                    else float("nan")
                )
                with writer.as_default(step=step):
                    for name, value in last.items():
                        tf.summary.scalar(name, value)
                self._progress(step, last, start_step, start)
                self._append_jsonl({"step": step, "split": "train", **last})
                alone = self._preempted and not coordinated
                if step % cfg.save_checkpoints_steps == 0 or step >= cfg.num_train_steps or alone:
                    self._save(step)
                if (
                    cfg.eval_every
                    and (self.eval_dataset_fn or self.evaluate_fn)
                    and (step % cfg.eval_every == 0 or step >= cfg.num_train_steps)
                ):
                    evaluation = self.evaluate(step)
                if alone:
                    raise Preempted(f"preempted at step {step}; checkpoint written")
                # (not after the last loop: a worker that has finished acknowledges nothing)
                if self._preemption is not None and step < cfg.num_train_steps:
                    self._preemption.after_loop(step)
        finally:
            writer.flush()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        if (self.eval_dataset_fn or self.evaluate_fn) and not evaluation:
            evaluation = self.evaluate(step)
        return {"step": step, "train": last, "eval": evaluation}

    def evaluate(self, step: int | None = None) -> dict:
        """One pass over the evaluation set (at most `max_eval_steps` batches)."""
        import tensorflow as tf

        step = self.step if step is None else step
        if self.evaluate_fn is not None:
            result = dict(self.evaluate_fn(self.model))
            self._record_eval(step, result)
            return result
        if self._eval_step is None:

            def replica_eval(batch):
                dens = self.task.denominators(batch)
                outputs = self.task.call_model(self.model, batch, False)
                out = {f"sum/{n}": t for n, t in self.task.terms(batch, outputs).items()}
                out.update({f"den/{k}": v for k, v in dens.items()})
                return out

            fn = tf.function(replica_eval, jit_compile=self.config.jit_compile)
            self._eval_step = tf.function(
                lambda batch: self.train_step.reduce(self.strategy.run(fn, (batch,)))
            )
        dataset = self.strategy.distribute_datasets_from_function(self.eval_dataset_fn)
        totals = None
        for i, batch in enumerate(dataset):
            if i >= self.config.max_eval_steps:
                break
            values = {k: v.numpy() for k, v in self._eval_step(batch).items()}
            totals = values if totals is None else {k: totals[k] + values[k] for k in totals}
        if totals is None:
            raise ValueError(
                "the evaluation set gave no batch (fewer records than one batch? drop_remainder)"
            )
        result = self._summarize(totals)
        self._record_eval(step, result)
        return result

    def _record_eval(self, step: int, result: dict) -> None:
        """TensorBoard, log line, metrics.jsonl and the best checkpoint for one evaluation."""
        import tensorflow as tf

        writer = tf.summary.create_file_writer(os.path.join(self.config.output_dir, "eval"))
        with writer.as_default(step=step):
            for name, value in result.items():
                tf.summary.scalar(name, value)
        writer.flush()
        self.log(f"eval step {step}: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items()))
        self._append_jsonl({"step": step, "split": "eval", **result})
        best = self.task.best_metric
        if best and best in result:
            self._keep_best(step, best, result[best], result)

    def best_record(self) -> dict | None:
        """The best evaluation so far ({"metric", "value", "step", "eval"}; `checkpoint`
        is in best/best.json), or None before the first evaluation with a best metric."""
        record = os.path.join(self.config.output_dir, "best", "best.json")
        if not filesystem.exists(record):
            return None
        with filesystem.open(record) as f:
            best = json.load(f)
        return {k: best[k] for k in ("metric", "value", "step", "eval")}

    def _keep_best(self, step, name, value, result):
        import tensorflow as tf

        best_dir = os.path.join(self.config.output_dir, "best")
        record = os.path.join(best_dir, "best.json")
        previous = None
        if filesystem.exists(record):
            with filesystem.open(record) as f:
                previous = json.load(f)
        if previous is not None and previous["value"] >= value or not math.isfinite(value):
            return
        filesystem.makedirs(best_dir)
        ckpt = tf.train.Checkpoint(model=self.model)
        manager = tf.train.CheckpointManager(ckpt, best_dir, max_to_keep=1)
        path = manager.save(checkpoint_number=step)
        write_json(
            record,
            {"metric": name, "value": value, "step": step, "checkpoint": path, "eval": result},
        )
        self.log(f"best {name} {value:.4f} at step {step} -> {path}")

    def _progress(self, step, values, start_step, start):
        done = step - start_step
        rate = done / max(time.time() - start, 1e-9)
        eta = (self.config.num_train_steps - step) / rate if rate > 0 else float("nan")
        shown = ", ".join(
            f"{k} {values[k]:.4f}"
            for k in values
            if k not in ("learning_rate", "examples_per_second", "grad_norm")
        )
        self.log(
            f"step {step}/{self.config.num_train_steps} | {shown} | grad_norm "
            f"{values.get('grad_norm', float('nan')):.3f} | lr "
            f"{values['learning_rate']:.3g} | {values['examples_per_second']:.1f} ex/s"
            f" | ETA {_hms(eta)}"
        )

    def _append_jsonl(self, row: dict) -> None:
        # On URLs (no append on object stores) the small file is rewritten whole.
        path = os.path.join(self.config.output_dir, "metrics.jsonl")
        filesystem.append_text(path, json.dumps(row) + "\n")


def _until_multiple(step: int, every: int) -> int:
    return every - step % every if every > 0 else 1 << 30


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _hms(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
