"""The classifier family (run_classifier.py): sentence (pair) classification, regression and
multiple choice over GLUE, the Chinese sets, RACE and the user's csv/tsv/jsonl; one label or
several (`--multi_label`); long documents as windows (`--doc_stride`). It takes every
control: LoRA, distillation, class weights, early stopping, layer-wise decay, recomputation,
--num_runs and --sweep.

Files are converted once into cached TFRecords (OUTPUT_DIR/cache); evaluation computes the
task's GLUE metrics on the dev set (per document for windows; the best checkpoint follows
the task's metric); `--do_predict` writes the GLUE submission file and a JSONL with
probabilities (keeping the file's own `id` column), and scores a labelled test file
(test_results.json); the export is a classifier SavedModel with its labels, thresholds and windows.
"""

from __future__ import annotations

import dataclasses
import os

from albert_tf.runners.controls import ALL_CONTROLS
from albert_tf.runners.family import Data, Family
from albert_tf.training.label_modes import MultiLabelSettings
from data_pipeline.classification.long_documents import DocumentWindows
from data_pipeline.classification.tasks import ClassificationTaskSettings
from data_pipeline.cli import setting


@dataclasses.dataclass(frozen=True)
class ClassifierSettings:
    """What to do and how."""

    do_train: bool = setting(False, "Fine-tune on the train split.")
    do_eval: bool = setting(False, "Evaluate on the dev split(s).")
    do_predict: bool = setting(False, "Predict the test split.")
    eval_batch_size: int = setting(8, "Evaluation/prediction batch size.", minimum=1)
    classifier_dropout: float = setting(
        0.1, "Dropout on the pooled output.", minimum=0, below=1, sweepable=True
    )
    max_train_examples: int = setting(
        0,
        "Fine-tune on this many training examples at most, drawn at random with --seed "
        "(0: all): learning curves, low-resource comparisons.",
        minimum=0,
    )


class Classifier(Family):
    runner = "run_classifier"
    kind = "classifier"
    settings = (ClassificationTaskSettings, ClassifierSettings, MultiLabelSettings, DocumentWindows)
    defaults = {"learning_rate": 3e-5, "max_seq_length": 512, "num_train_epochs": 3.0}
    required = ("task_name", "output_dir")
    controls = ALL_CONTROLS

    def spec(self, s):
        from data_pipeline.classification.tasks import TaskSpec

        return s.group(TaskSpec, name=s.task_name)

    def check(self, s) -> None:
        from albert_tf.training.label_modes import check_multi_label

        if not (s.do_train or s.do_eval or s.do_predict):
            raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")
        check_multi_label(s)

    def recipe_task(self, s) -> str:
        if not (s.do_train or s.do_eval or s.do_predict):
            raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")
        return s.task_name

    def identity_task(self, s) -> str:
        return s.task_name

    def best_metric(self, s) -> str:
        return self.spec(s).best_metric

    def read(self, s, inputs) -> Data:
        from albert_tf.training.class_weights import parse_class_weights
        from albert_tf.training.teacher import load_teacher

        spec = self.spec(s)
        windows = s.group(DocumentWindows)
        windows.check_task(spec.choices is not None, spec.is_regression, spec.multi_label)
        labels = spec.labels()
        evaluated = spec.dev_splits if s.do_eval or s.do_train else []
        for split in evaluated + (["test"] if s.do_predict else []):
            spec.check_labels(split, labels)
        weights = parse_class_weights(
            s.class_weights, labels, spec.is_regression, spec.choices, spec.multi_label
        )
        identity = {"max_seq_length": s.max_seq_length, "max_train_examples": s.max_train_examples}
        identity.update(windows.fingerprint() if windows.enabled else {})
        teacher = load_teacher(s, labels, inputs.tokenizer_spec) if s.do_train else None
        extra = dict(spec=spec, windows=windows, evaluated=evaluated, weights=weights)
        extra.update(teacher=teacher)
        return Data(labels, spec.source("train"), identity, extra=extra)

    def features(self, s, inputs, data: Data) -> Data:
        from albert_tf.training import teacher as distillation
        from albert_tf.training.class_weights import (
            label_counts,
            multi_label_counts,
            resolve_class_weights,
        )
        from albert_tf.training.finetuning_settings import length_buckets
        from albert_tf.training.label_modes import held_out
        from albert_tf.training.sweep import HELD_OUT
        from data_pipeline.classification.features import task_features

        spec, windows, labels = data.extra["spec"], data.extra["windows"], data.labels
        cache = os.path.join(s.output_dir, "cache")

        def features(split, limit=0, part=None):
            found = task_features(
                spec,
                split,
                inputs.tokenizer,
                cache,
                s.max_seq_length,
                labels,
                limit,
                s.seed,
                part,
                windows,
            )
            print(found.describe(), flush=True)
            return found

        fit, tune = held_out(s, "fit"), held_out(s, "tune")
        limit = s.max_train_examples
        train = features("train", limit, fit) if s.do_train else None
        tune = features("train", limit, tune) if tune else None  # thresholds, sweep points
        counts = multi_label_counts if spec.multi_label else label_counts  # (auto only)
        asked = data.extra["weights"]
        weights = train and resolve_class_weights(
            asked, labels, lambda: counts(train.path, len(labels)), spec.multi_label
        )
        # --distill_unlabelled_file: appended to train (after the class weights' counts)
        train, labelled = distillation.with_unlabelled(
            s, train, spec, inputs.tokenizer, cache, labels, windows
        )
        dev = {split: features(split) for split in data.extra["evaluated"]}
        if s.sweep:  # scored first: the best checkpoint and the points follow it
            dev = {HELD_OUT: tune, **dev}
        teacher = data.extra["teacher"]

        def examples():  # (the training examples in record order: a file's teacher)
            from data_pipeline.classification.features import split_examples
            from data_pipeline.classification.unlabelled import read_unlabelled

            if spec.choices or windows.enabled:
                raise ValueError("--teacher_logits_file: for one-record examples")
            unlabelled = s.distill_unlabelled_file
            more = read_unlabelled(unlabelled, train.text_pair) if unlabelled else []
            return split_examples(spec, "train", labels, limit, s.seed, fit) + more

        if teacher is not None:  # its logits once, by example_index; then the teacher goes
            batches = distillation.teacher_table(
                teacher, train, s.eval_batch_size, length_buckets(s), labelled, examples
            )
            teacher = batches, labelled
        data.splits = {"train": train, "test": features("test") if s.do_predict else None}
        weights = list(weights) if weights else None
        data.recorded = dict(labels=labels, train_examples=train.count if train else 0)
        data.recorded.update(class_weights=weights)
        data.extra.update(dev=dev, tune=tune, teacher=teacher, resolved=weights)
        return data

    def mode(self, s, data: Data):
        """This run's label mode (made by `task`, once per run: it keeps the thresholds)."""
        return data.extra["mode"]

    def source(self, data: Data):
        """The features the trainer's pipeline reads (any split when it does not train)."""
        dev = next(iter(data.extra["dev"].values()), None)
        return data.train or dev or data.splits["test"]

    def task(self, s, data: Data, albert_config):
        from albert_tf.training.label_modes import label_mode
        from albert_tf.training.teacher import distill_task

        mode = data.extra["mode"] = label_mode(data.extra["spec"], data.labels, s)
        task = mode.task(albert_config, s.classifier_dropout, data.extra["resolved"])
        return distill_task(task, s)

    def dataset(self, s, data: Data, batch, seed, ctx, buckets):
        from albert_tf.training.distillation import with_teacher_logits

        ds = self.source(data).dataset(
            batch, is_training=True, seed=seed, input_context=ctx, length_buckets=buckets
        )
        teacher = data.extra["teacher"]
        return ds if teacher is None else with_teacher_logits(ds, *teacher)

    def predict(self, s, features, model, strategy):
        """(logits, label_ids) of `features`, per document when they are windows."""
        from albert_tf.training.finetuning_settings import length_buckets
        from albert_tf.training.task_predictions import classifier_logits
        from data_pipeline.classification.long_documents import document_outputs

        out = classifier_logits(model, features, s.eval_batch_size, length_buckets(s), strategy)
        return document_outputs(*out, features.info, s.aggregate)

    def evaluate(self, s, data: Data, strategy):
        dev, tune, mode = data.extra["dev"], data.extra["tune"], self.mode(s, data)
        if not dev:
            return None

        def evaluate(model):
            outputs = {split: self.predict(s, f, model, strategy) for split, f in dev.items()}
            return mode.evaluate(outputs, lambda: tune and self.predict(s, tune, model, strategy))

        return evaluate

    def conclude(self, s, data: Data, trainer, run, result: dict) -> dict:
        from data_pipeline.io.atomic import write_json

        mode = self.mode(s, data)
        if s.do_eval:
            if not result.get("eval"):  # (train() has evaluated its last step: not twice)
                result["eval"] = trainer.evaluate()
            report = {"task": s.task_name, "seed": trainer.config.seed, "step": trainer.step}
            report.update(final=result["eval"], best=trainer.best_record())
            report.update(mode.report())  # multi-label: "thresholds" and "f1" of each label
            write_json(trainer.files.results_path(), report)
        if s.do_predict:
            logits, gold = self.predict(s, data.splits["test"], trainer.model, run.strategy)
            print(f"predictions: {mode.write_predictions(run.output_dir, logits)}", flush=True)
            spec = data.extra["spec"]
            if all(e.label is not None for e in spec.read("test")):  # labelled: scored too
                name = os.path.basename(spec.source("test"))
                trainer.files.record_test(name, mode.score(logits, gold), trainer.weights_step)
        return result

    def evaluated(self, s) -> str:
        spec = self.spec(s)
        return os.path.basename(spec.source(spec.dev_splits[0]))

    def adopt(self, s, data: Data, directory: str) -> None:
        self.mode(s, data).adopt(directory)

    def predicted_classes(self, data: Data) -> dict | None:
        return self.mode(None, data).predicted

    def task_info(self, s, data: Data, trainer):
        from albert_tf.checkpoints.task_info import TaskInfo

        source = self.source(data)
        serving = data.extra["spec"].serving_task(
            data.labels,
            source.text_pair,
            source.max_seq_length,
            s.do_lower_case,
            trainer.weights_step,
            self.mode(s, data).thresholds(),
        )
        if source.info.get("document_windows") is not None:
            serving.update(s.group(DocumentWindows).task_fields())
        return TaskInfo.build(**serving)
