"""A fine-tuning family as one object: what the driver (albert_tf.runners.driver) needs of a
task to run it, and nothing the driver does for every task.

    class Family:
        runner, settings, defaults, required   its command: name, own groups, defaults
        controls                               the controls it takes (runners.controls)
        check(s)                               its up-front checks (before any write)
        recipe_task(s)                         --recipe's task name (None: refused)
        read(s, inputs) -> Data                files → texts, labels; the run's identity
        features(s, inputs, data) -> Data      cached features (the first writes)
        task(s, data, albert_config)           the training Task (loss, model)
        dataset(s, data, batch, seed, ctx)     the training tf.data of one replica
        evaluate(s, data, model, strategy)     {metric: value} on the dev data (None: none)
        conclude(s, data, trainer, run, out)   eval_results.json, predictions
        concluding(s)                          what conclude does, named for its phase line
        task_info(s, data, trainer)            the export's task.json (TaskInfo; None: none)
        evaluated(s)                           what an evaluation-only run evaluates
        adopt(s, data, directory)              decisions recorded beside a model (thresholds)
        predicted_classes(data)                the last evaluation's predicted class counts

A new family is a module with a subclass of `Family` and one line in
`albert_tf.runners.families.FAMILIES`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Data:
    """What a family read and built: `labels` (None: no label set), `train_file` (its
    sha256 is the run's data identity; None: not training), `identity` (the settings the
    features are built with, recorded in the identity), `splits` ({split: features}),
    `recorded` (extra run_config.json entries), `extra` (the family's own)."""

    labels: list | None = None
    train_file: str | None = None
    identity: dict = dataclasses.field(default_factory=dict)
    splits: dict = dataclasses.field(default_factory=dict)
    recorded: dict = dataclasses.field(default_factory=dict)
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def train(self):
        return self.splits.get("train")

    def any_split(self):
        """A split to build the trainer's pipeline from when it does not train."""
        return self.train or next((f for f in self.splits.values() if f is not None), None)


class Family:
    """The interface (see the module docstring); defaults where most families agree."""

    runner: str = ""
    task_name: str = ""  # the identity's task (a family may derive it from settings)
    settings: tuple[type, ...] = ()
    defaults: dict = {}
    required: tuple[str, ...] = ("output_dir",)
    bounds: dict = {}  # this family's range of a shared setting (data_pipeline.cli.Bounds)
    controls: frozenset = frozenset()
    untrained: str = "--do_eval/--do_predict without --do_train"
    kind: str = ""  # the task kind its export writes (albert_tf.checkpoints.task_kinds)

    def check(self, s) -> None:
        """The family's own one-line checks, before anything is written."""

    def recipe_task(self, s) -> str | None:
        """The task name --recipe looks up (None: no recipe for this family)."""
        return None

    def no_recipe(self, s) -> str:
        """The one line refusing --recipe for a family with none."""
        return (
            f"--recipe={s.recipe}: the ALBERT paper gives no {self.runner} hyper-parameters; "
            "give --learning_rate, --train_batch_size, --num_train_epochs"
        )

    def best_metric(self, s) -> str:
        """The metric a sweep selects on (the task's best-checkpoint metric)."""
        raise NotImplementedError

    def recipe_built_in(self, s) -> dict:
        """Recipe values this family has no setting for: name → what stands for it."""
        return {}

    def identity_task(self, s) -> str:
        return self.task_name

    def export_kind(self, s) -> str:
        return self.kind

    def read(self, s, inputs) -> Data:
        raise NotImplementedError

    def features(self, s, inputs, data: Data) -> Data:
        return data

    def train_count(self, data: Data) -> int:
        """The training examples the schedule's epochs count (0: not training)."""
        return data.train.count if data.train is not None else 0

    def length_buckets(self, s):
        from albert_tf.training.finetuning_settings import length_buckets

        return length_buckets(s)

    def task(self, s, data: Data, albert_config):
        raise NotImplementedError

    def dataset(self, s, data: Data, batch: int, seed: int, ctx, buckets):
        return data.any_split().dataset(
            batch, is_training=True, seed=seed, input_context=ctx, length_buckets=buckets
        )

    def evaluate(self, s, data: Data, strategy):
        """The trainer's evaluate_fn (model → {metric: value}), or None: no evaluation."""
        return None

    def before_training(self, s, data: Data, trainer) -> dict:
        """What the run reports before it trains (e.g. the starting weights' figure)."""
        return {}

    def conclude(self, s, data: Data, trainer, run, result: dict) -> dict:
        """After training: eval_results.json and predictions; returns `result`."""
        return result

    def concluding(self, s) -> str:
        """What `conclude` does for `s`, as its phase line names it ("": nothing)."""
        doing = (("final report", s.do_eval), ("test predictions", s.do_predict))
        return " and ".join(name for name, on in doing if on)

    def task_info(self, s, data: Data, trainer):
        """The TaskInfo the export writes as task.json (and best/ keeps beside its
        checkpoint); None: the family's model is no fine-tuned kind (best/ stays a
        checkpoint)."""
        return None

    def evaluated(self, s) -> str:
        """The name of what an evaluation-only run evaluates (its report is
        eval_results.<name>.json): the evaluated file's name."""
        return "dev"

    def adopt(self, s, data: Data, directory: str) -> None:
        """Takes the decisions recorded beside the model of `directory` (a fine-tuned model
        directory or a run's: e.g. a multi-label model's tuned thresholds) for the model
        now in the trainer: best/ restored, or the model an evaluation-only run reads."""

    def predicted_classes(self, data: Data) -> dict | None:
        """{class: count} of the last evaluation's predictions (None: no classes, e.g.
        regression, spans, several labels an example)."""
        return None

    def export(self, s, data: Data, trainer, model, inputs, export_dir: str) -> list[str]:
        """--export_dir: `model` (the driver has put the best checkpoint in it) with its
        task.json; the paths written."""
        from albert_tf.serving.export import export_trained, print_exports
        from albert_tf.serving.formats import export_formats

        info = self.task_info(s, data, trainer)
        tokenizer, run_dir = inputs.tokenizer_spec, trainer.files.output_dir
        paths = export_trained(
            model, export_dir, info, tokenizer, run_dir=run_dir, **export_formats(s)
        )
        print_exports(paths, finetuned=True)
        return paths

    def seeds_report(self, results: list[dict]) -> list[dict]:
        """The per-seed figures the --num_runs report summarizes."""
        return [r["eval"] for r in results]

    def seeds_extra(self, results: list[dict]) -> dict:
        """What the --num_runs report adds beside the spread of the figures."""
        return {}
