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
  run. Ctrl-C stops at once (`Interrupted`, naming the step and the last checkpoint).
  SIGTERM (preemption) writes a checkpoint at the end of the current loop, then exits;
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
import math
import os
import signal
import time
from collections.abc import Callable

from albert_tf.training.config import TrainerConfig
from albert_tf.training.distribution import set_precision, task_output_dir
from albert_tf.training.early_stopping import early_stopping_for
from albert_tf.training.evaluation import EvalLoop, summarize
from albert_tf.training.preemption import coordinated_preemption
from albert_tf.training.resume import restore_newest
from albert_tf.training.run_files import Pace, RunFiles
from albert_tf.training.step import LAST_STEP, TrainStep
from albert_tf.training.stops import Interrupted, NonFiniteLoss, Preempted, peer_lost
from albert_tf.training.tasks import Task
from data_pipeline.io import filesystem
from data_pipeline.phases import phase

# (the stops are raised here; their old import path stays valid)
__all__ = ["Interrupted", "NonFiniteLoss", "Preempted", "Trainer"]


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
      evaluated, on_best: `RunFiles`' (an evaluation-only run's name of what it evaluates;
        what makes best/ servable).
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
        evaluated: str | None = None,
        on_best: Callable | None = None,
    ):
        import keras
        import tensorflow as tf

        from albert_tf.training.layer_decay import apply_layer_decay
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
        # metrics.jsonl, best/, progress, the report's file
        self.files = RunFiles(config.output_dir, log, evaluated, on_best)
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
            scales = apply_layer_decay(
                inner, self.variables, task.albert_config, config.layer_lr_decay
            )
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
        self._log_controls(scales)
        self.train_dataset = strategy.distribute_datasets_from_function(train_dataset_fn)
        self.train_iterator = iter(self.train_dataset)
        # Multi-device strategies give a DistributedIterator, which TensorFlow cannot
        # checkpoint (tensorflow#56372); their data position is restored by skipping the
        # batches already consumed (exact; costs reading them once), see below.
        iterator_saved = isinstance(self.train_iterator, tf.__internal__.tracking.Trackable)
        parts = {"iterator": self.train_iterator} if iterator_saved else {}
        # --early_stopping_patience: its state is checkpointed with the run.
        self.early_stopping = early_stopping_for(task, config, eval_dataset_fn or evaluate_fn)
        if self.early_stopping is not None:
            parts["early_stopping"] = self.early_stopping.state
        saved = task.checkpointed(self.model)  # (LoRA: the adapters and the head only)
        self.checkpoint = tf.train.Checkpoint(model=saved, optimizer=self.optimizer, **parts)
        # Parts of the model still at their random initialization (see `check_trained`).
        self.untrained: list[str] = []
        # A partial checkpoint (LoRA) restores onto the frozen base, loaded first.
        base_first = bool(init_checkpoint) and task.partial_checkpoints
        if base_first:
            self._load_init(init_checkpoint)
        # The newest checkpoint that reads completely (albert_tf.training.resume): a garbled
        # state file or a deleted latest checkpoint never restarts the run from step 0.
        own_dir = os.path.join(config.output_dir, "checkpoints")
        latest = restore_newest(
            self.checkpoint, restore_dir, log=self.log, repair=restore_dir == own_dir
        )
        self.restored_from = latest
        self._saved = saved  # what best/ keeps
        self._best_step = None  # the step of the weights `restore_best` put in the model
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
            if not base_first:
                self._load_init(init_checkpoint)
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
        self._eval_loop = EvalLoop(
            task, self.model, strategy, self.train_step.reduce, config.jit_compile
        )
        self._preempted = False
        self._preemption = None  # multi-worker and TPU: created when training starts
        self._preempted_at = 0

    def _log_controls(self, scales: dict) -> None:
        """What the run trains, in its log: the trainable parameters when some are frozen
        (LoRA: the adapters and the head), the per-group rates of layer-wise decay."""
        from albert_tf.training.layer_decay import describe_scales

        count = lambda vs: sum(math.prod(v.shape) for v in vs)  # noqa: E731
        weights = [v for v in self.model.weights if "float" in str(v.dtype)]  # (no seeds)
        trainable, total = count(self.variables), count(weights)
        if trainable < total:
            share = f"{100 * trainable / max(total, 1):.2f}%"
            self.log(f"trainable parameters: {trainable:,} of {total:,} ({share})")
        for line in describe_scales(scales, self.config.learning_rate):
            self.log(line)

    def _load_init(self, init_checkpoint: str) -> None:
        from albert_tf.checkpoints import load_checkpoint

        report = load_checkpoint(self.model, init_checkpoint)
        self.log(f"init_checkpoint: {report}")
        for line in report.warnings():
            self.log(line)
        self.untrained = list(report.missing)

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
        """Writes checkpoint `step` (`RunFiles.save`: a failed write leaves nothing)."""
        return self.files.save(self.manager, step)

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
        training and evaluation figures. Ctrl-C raises `Interrupted` (one line: the step
        reached, the last checkpoint); a peer lost by a multi-worker run, `PeerLost`."""
        import tensorflow as tf

        try:
            return self._train()
        except tf.errors.UnavailableError as e:  # a collective whose peer is gone?
            lost = peer_lost(e, self.step, self.manager.latest_checkpoint)
            if lost is None:
                raise
            raise lost from None
        except KeyboardInterrupt:
            last = self.manager.latest_checkpoint
            where = (
                f"the last checkpoint is {os.path.basename(last)} (the same command resumes "
                f"from it)"
                if last
                else "no checkpoint was written"
            )
            raise Interrupted(f"interrupted at step {self.step}; {where}") from None

    def _train(self) -> dict:
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
        pace = Pace(step, time.time())
        last, evaluation = {}, {}
        stopping = self.early_stopping
        if stopping is not None and stopping.stopped_at:
            self.log(f"this run stopped early: {stopping.describe()}")
        try:
            while step < cfg.num_train_steps and not (stopping and stopping.stopped_at):
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
                last = summarize(self.task, totals)
                last["learning_rate"] = float(self.schedule(step))
                last["examples_per_second"] = (
                    float(totals["den/examples"]) / elapsed
                    if "den/examples" in totals
                    else float("nan")
                )
                with writer.as_default(step=step):
                    for name, value in last.items():
                        tf.summary.scalar(name, value)
                self.files.progress(step, cfg.num_train_steps, last, pace)
                self.files.append_metrics({"step": step, "split": "train", **last})
                alone = self._preempted and not coordinated
                evaluate_now = (
                    cfg.eval_every
                    and (self.eval_dataset_fn or self.evaluate_fn)
                    and (step % cfg.eval_every == 0 or step >= cfg.num_train_steps)
                )
                stop = False
                if evaluate_now and stopping:  # first: the checkpoint holds its verdict
                    evaluation = self.evaluate(step)
                    stop = stopping.update(evaluation, step)
                if (
                    step % cfg.save_checkpoints_steps == 0
                    or step >= cfg.num_train_steps
                    or alone
                    or stop
                ):
                    self._save(step)
                if evaluate_now and not stopping:
                    evaluation = self.evaluate(step)
                if stop:
                    self.log(stopping.describe())
                    break
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
        result = {"step": step, "train": last, "eval": evaluation}
        if stopping is not None and stopping.stopped_at:
            result["stopped_early_at"] = stopping.stopped_at
        return result

    def evaluate(self, step: int | None = None) -> dict:
        """One pass over the evaluation set (at most `max_eval_steps` batches), or
        `evaluate_fn`; recorded (`RunFiles.record_eval`: events, metrics.jsonl, best/)."""
        step = self.step if step is None else step
        with phase(f"evaluation at step {step}", self.log):  # (its figures: record_eval's line)
            if self.evaluate_fn is not None:
                result = dict(self.evaluate_fn(self.model))
            else:
                result = self._eval_loop(self.eval_dataset_fn, self.config.max_eval_steps)
        self.files.record_eval(step, result, self._saved, self.task.best_metric)
        return result

    def best_record(self) -> dict | None:
        """The best evaluation so far (`RunFiles.best_record`), or None."""
        return self.files.best_record()

    def restore_best(self) -> dict | None:
        """Puts best/'s weights into the model (what best/ keeps: the whole model, or
        LoRA's adapters and head) and returns best/best.json's record; None, the model
        left as trained, when no evaluation kept one."""
        best = self.files.restore_best(self._saved)
        self._best_step = best["step"] if best is not None else None
        return best

    @property
    def weights_step(self) -> int:
        """The training step of the model's weights: best/'s after `restore_best`, else
        the step reached (what task.json records as the model's step)."""
        return self.step if self._best_step is None else self._best_step


def _until_multiple(step: int, every: int) -> int:
    return every - step % every if every > 0 else 1 << 30


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
