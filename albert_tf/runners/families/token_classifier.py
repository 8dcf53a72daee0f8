"""The token-classification family (run_ner.py): named entities in any tag scheme.

Files (data_pipeline.tagging.data): CoNLL columns, one character a line (Chinese), or JSON
lines with `tokens` and `tags`; DATA_DIR/{train,dev,test}.txt (or .jsonl) unless
--train_file/--dev_file/--test_file. The label list is discovered from the training file.
Each word is tokenized alone, its label on its first piece; a sentence longer than
--max_seq_length is cut into windows every --doc_stride pieces, each word predicted from the
window where it has most context. Evaluation: entity precision/recall/F1 as seqeval
computes them, read with --tag_scheme, and token accuracy; the best checkpoint by micro F1.
--do_predict writes OUTPUT_DIR/predictions.conll and scores it against the test file's tags
(test_results.json). Controls: LoRA, class weights (per tag),
early stopping, layer-wise decay, recomputation, --num_runs.
"""

from __future__ import annotations

import os

from albert_tf.runners.family import Data, Family
from data_pipeline.cli import Bounds
from data_pipeline.tagging.settings import (
    SPLIT_FLAGS,
    NerSettings,
    ner_file,
    resolve_tag_scheme,
    tag_counts,
)
from data_pipeline.windows import WindowSettings


class TokenClassifier(Family):
    runner = "run_ner"
    task_name = "ner"
    kind = "token_classifier"
    settings = (NerSettings, WindowSettings)
    bounds = {"doc_stride": Bounds(minimum=1)}
    defaults = {"learning_rate": 5e-5, "max_seq_length": 128, "num_train_epochs": 3.0}
    controls = frozenset(
        {"lora", "class_weights", "early_stopping", "layer_lr_decay", "recompute", "num_runs"}
    )

    def no_recipe(self, s) -> str:
        return (
            f"--recipe={s.recipe}: no ALBERT source publishes NER hyper-parameters (the "
            "paper's Table 14 and the official repository cover GLUE, SQuAD and RACE only); "
            "give --learning_rate, --train_batch_size, --num_train_epochs yourself"
        )

    def best_metric(self, s) -> str:
        return "f1"

    def check(self, s) -> None:
        if not (s.do_train or s.do_eval or s.do_predict):
            raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")
        needed = [("train", True), ("dev", s.do_eval), ("test", s.do_predict)]
        for split, wanted in needed:
            if wanted and not ner_file(s, split):
                why = "the label list is discovered from it" if split == "train" else "its file"
                raise ValueError(
                    f"give --{SPLIT_FLAGS[split]} or --data_dir ({split} split: {why})"
                )

    def read(self, s, inputs) -> Data:
        from albert_tf.training.class_weights import parse_class_weights, resolve_class_weights
        from data_pipeline.tagging.data import check_labels, discover_labels, read_tagged

        files = {split: ner_file(s, split) for split in ("train", "dev", "test")}
        wanted = ["train"] * s.do_train + ["dev"] * s.do_eval + ["test"] * s.do_predict
        sentences = {"train": read_tagged(files["train"])}
        labels = discover_labels(sentences["train"], files["train"])
        for split in [w for w in wanted if w != "train"]:
            sentences[split] = read_tagged(files[split])
            check_labels(sentences[split], labels, files[split])
        scheme = resolve_tag_scheme(s.tag_scheme, labels)
        asked = parse_class_weights(s.class_weights, labels, False, None)
        weights = resolve_class_weights(
            asked, labels, lambda: tag_counts(labels, sentences["train"])
        )
        identity = {"max_seq_length": s.max_seq_length, "doc_stride": s.doc_stride}
        extra = dict(files=files, wanted=wanted, sentences=sentences, scheme=scheme)
        extra.update(weights=weights)
        return Data(labels, files["train"], identity, extra=extra)

    def features(self, s, inputs, data: Data) -> Data:
        from data_pipeline.tagging.features import tagging_features

        cache = os.path.join(s.output_dir, "cache")
        for split in data.extra["wanted"]:
            found = tagging_features(
                data.extra["files"][split],
                split,
                inputs.tokenizer,
                cache,
                data.labels,
                s.max_seq_length,
                s.doc_stride,
            )
            print(found.describe(), flush=True)
            data.splits[split] = found
        train = data.splits.get("train")
        weights = data.extra["weights"]
        data.recorded = dict(labels=data.labels, tag_scheme=data.extra["scheme"])
        data.recorded.update(train_features=train.count if train else 0)
        data.recorded.update(class_weights=list(weights) if weights else None)
        return data

    def task(self, s, data: Data, albert_config):
        from albert_tf.training.token_classification import TokenClassificationTask

        data.extra["per_type"] = {}
        return TokenClassificationTask(
            albert_config,
            len(data.labels),
            s.classifier_dropout,
            class_weights=data.extra["weights"],
        )

    def tags(self, s, data: Data, model, split: str, strategy):
        from albert_tf.training.task_predictions import predicted_tags

        return predicted_tags(
            model,
            data.splits[split],
            data.extra["sentences"][split],
            data.labels,
            s.eval_batch_size,
            self.length_buckets(s),
            strategy,
        )

    def evaluate(self, s, data: Data, strategy):
        from collections import Counter

        from albert_tf.training.task_predictions import ner_scores

        if data.splits.get("dev") is None:
            return None

        def evaluate(model):
            predicted = self.tags(s, data, model, "dev", strategy)
            sentences, scheme = data.extra["sentences"]["dev"], data.extra["scheme"]
            flat, data.extra["per_type"]["dev"] = ner_scores(sentences, predicted, scheme)
            data.extra["predicted"] = Counter(tag for tags in predicted for tag in tags)
            return flat

        return evaluate

    def conclude(self, s, data: Data, trainer, run, result: dict) -> dict:
        from albert_tf.training.task_predictions import ner_scores
        from data_pipeline.io.atomic import write_json
        from data_pipeline.tagging.predictions import write_conll

        scheme = data.extra["scheme"]
        if s.do_eval:
            result["eval"] = result.get("eval") or trainer.evaluate()  # (train() evaluates last)
            report = {"task": "ner", "tag_scheme": data.extra["scheme"], "labels": data.labels}
            report.update(seed=trainer.config.seed, step=trainer.step, final=result["eval"])
            report.update(per_type=data.extra["per_type"]["dev"], best=trainer.best_record())
            write_json(trainer.files.results_path(), report)
        if s.do_predict:
            path = os.path.join(run.output_dir, "predictions.conll")
            predicted = self.tags(s, data, trainer.model, "test", run.strategy)
            write_conll(path, data.extra["sentences"]["test"], predicted)
            print(f"predictions: {path}", flush=True)
            scores, per_type = ner_scores(data.extra["sentences"]["test"], predicted, scheme)
            name = os.path.basename(ner_file(s, "test"))  # (the tags' column: always labelled)
            extra = dict(per_type=per_type, tag_scheme=scheme)
            trainer.files.record_test(name, scores, trainer.weights_step, **extra)
        return result

    def evaluated(self, s) -> str:
        return os.path.basename(ner_file(s, "dev"))

    def predicted_classes(self, data: Data) -> dict | None:
        return data.extra.get("predicted")

    def task_info(self, s, data: Data, trainer):
        from albert_tf.checkpoints.task_info import TaskInfo

        return TaskInfo.build(
            kind=self.kind,
            task_name="ner",
            labels=list(data.labels),
            max_seq_length=s.max_seq_length,
            doc_stride=s.doc_stride,
            do_lower_case=s.do_lower_case,
            scheme=data.extra["scheme"],
            step=trainer.weights_step,
        )
