"""The extractive question-answering family (run_squad.py): SQuAD v1.1 and v2.0 in one
family, CMRC 2018 with `--eval_metric cmrc2018`.

Features (data_pipeline.squad.features): `[CLS] question [SEP] context window [SEP]`, cached
as TFRecords in OUTPUT_DIR/cache. Head (`--squad_head`): v2.0 defaults to the official ALBERT
head (a start × end beam plus an answer-class logit), v1.1 to start/end logits (`bert`).
Outputs: predictions.json, nbest_predictions.json, and for v2.0 null_odds.json. `--do_eval`
scores them exactly as the official script of the version into eval_results.json; for v2.0
at `--null_score_diff_threshold`, and at a threshold tuned on `--tune_threshold_on` (a
separate file). Controls: LoRA, early stopping, layer-wise decay, recomputation.
"""

from __future__ import annotations

import dataclasses
import json
import os

from albert_tf.runners.family import Data, Family
from data_pipeline.cli import Bounds, setting
from data_pipeline.windows import WindowSettings

# What a recipe's classifier_dropout is for each head (no flag sets it).
HEAD_DROPOUT = {
    "albert": "the albert head's answer-class dropout, fixed at 0.1",
    "bert": "the bert head has no dropout layer (as the official v1.1 head)",
}


@dataclasses.dataclass(frozen=True)
class SquadSettings:
    """The files, what to do, the head, windows and answers."""

    train_file: str | None = setting(None, "SQuAD-format JSON to train on.")
    predict_file: str | None = setting(None, "SQuAD-format JSON to predict (and score).")
    do_train: bool = setting(False, "Fine-tune on --train_file.")
    do_predict: bool = setting(False, "Write predictions for --predict_file.")
    do_eval: bool = setting(False, "Score the predictions of --predict_file (EM, F1).")
    version_2_with_negative: bool = setting(False, "SQuAD v2.0: unanswerable questions.")
    eval_metric: str = setting(
        "squad",
        "--do_eval: squad, the official SQuAD v1.1/v2.0 script (F1 over whitespace words: "
        "on Chinese text it equals EM); cmrc2018, the CMRC 2018 script's EM and F1 (each "
        "CJK character a segment; data_pipeline.squad.cmrc_evaluation).",
        choices=("squad", "cmrc2018"),
    )
    squad_head: str | None = setting(
        None,
        "albert: the official ALBERT v2.0 head (start/end beam + answer-class logit; the "
        "default for v2.0); bert: start/end logits with the [CLS] null score (the default "
        "for v1.1, the official v1.1 head).",
        choices=("albert", "bert"),
    )
    start_n_top: int = setting(5, "--squad_head albert: starts in the beam.")
    end_n_top: int = setting(5, "--squad_head albert: ends per start in the beam.")
    max_query_length: int = setting(64, "Question tokens kept.", minimum=1)
    predict_batch_size: int = setting(32, "Prediction batch size.", minimum=1)
    n_best_size: int = setting(20, "Start and end candidates per window.", minimum=1)
    max_answer_length: int = setting(30, "Longest answer, in tokens.", minimum=1)
    null_score_diff_threshold: float = setting(
        0.0, "v2.0: predict no answer when null score - best span score > this."
    )
    tune_threshold_on: str | None = setting(
        None,
        "v2.0: a separate SQuAD v2.0 file; the threshold maximizing F1 on it is reported "
        "and applied to --predict_file as well.",
    )


class QuestionAnswering(Family):
    runner = "run_squad"
    kind = "squad"
    settings = (SquadSettings, WindowSettings)
    bounds = {"doc_stride": Bounds(minimum=1)}
    defaults = {"learning_rate": 5e-5, "max_seq_length": 384, "num_train_epochs": 2.0}
    controls = frozenset({"lora", "early_stopping", "layer_lr_decay", "recompute"})
    untrained = "--do_predict/--do_eval without --do_train"

    def head(self, s) -> str:
        """--squad_head, defaulting to the official code's: albert for v2.0, bert for v1.1."""
        return s.squad_head or ("albert" if s.version_2_with_negative else "bert")

    def version(self, s) -> str:
        return "2.0" if s.version_2_with_negative else "1.1"

    def identity_task(self, s) -> str:
        return f"squad v{self.version(s)}, {self.head(s)} head"

    def recipe_task(self, s) -> str:
        return f"squad_v{self.version(s)}"

    def recipe_built_in(self, s) -> dict:
        return {"classifier_dropout": HEAD_DROPOUT[self.head(s)]}

    def check(self, s) -> None:
        if not (s.do_train or s.do_predict or s.do_eval):
            raise ValueError("nothing to do: give --do_train, --do_predict and/or --do_eval")
        if s.eval_metric == "cmrc2018" and s.version_2_with_negative:
            raise ValueError(
                "--eval_metric cmrc2018 scores answerable questions only (CMRC 2018 has no "
                "unanswerable ones); drop --version_2_with_negative or use --eval_metric squad"
            )
        if s.do_train and not s.train_file:
            raise ValueError("--do_train needs --train_file")
        if (s.do_predict or s.do_eval) and not s.predict_file:
            raise ValueError("--do_predict/--do_eval need --predict_file")
        if s.tune_threshold_on and not s.version_2_with_negative:
            raise ValueError("--tune_threshold_on is for SQuAD v2.0 (--version_2_with_negative)")
        if s.max_seq_length < s.max_query_length + 4:
            raise ValueError(
                f"--max_seq_length={s.max_seq_length} leaves no room for context after "
                f"--max_query_length={s.max_query_length} (needs at least max_query_length + 4)"
            )

    def read(self, s, inputs) -> Data:
        identity = dict(
            max_seq_length=s.max_seq_length,
            doc_stride=s.doc_stride,
            max_query_length=s.max_query_length,
        )
        return Data(None, s.train_file, identity)

    def features(self, s, inputs, data: Data) -> Data:
        from data_pipeline.squad.sets import squad_sets

        train, predict, tune = squad_sets(s, inputs.tokenizer)
        data.splits = {"train": train, "predict": predict, "tune": tune}
        data.recorded = dict(
            version=self.version(s),
            squad_head=self.head(s),
            train_features=train.count if train else 0,
        )
        return data

    def task(self, s, data: Data, albert_config):
        from albert_tf.training import SquadTask, SquadV2Task

        if self.head(s) == "albert":
            return SquadV2Task(albert_config, s.start_n_top, s.end_n_top)
        return SquadTask(albert_config)

    def answers(self, s, model, features, threshold, strategy):
        """(predictions, nbest, null_odds) of `features`."""
        from albert_tf.training.task_predictions import squad_answers

        return squad_answers(
            model,
            features,
            threshold,
            strategy,
            batch_size=s.predict_batch_size,
            length_buckets=self.length_buckets(s),
            beam=self.head(s) == "albert",
            n_best_size=s.n_best_size,
            max_answer_length=s.max_answer_length,
            version_2_with_negative=s.version_2_with_negative,
        )

    def evaluate(self, s, data: Data, strategy):
        from data_pipeline.squad import scoring

        if data.splits["predict"] is None or not s.do_eval:
            return None

        def evaluate(model):
            threshold = s.null_score_diff_threshold
            predictions = self.answers(s, model, data.splits["predict"], threshold, strategy)[0]
            dataset = scoring.read_dataset(s.predict_file)
            return scoring.score(dataset, predictions, self.version(s), s.eval_metric)

        return evaluate

    def conclude(self, s, data: Data, trainer, run, result: dict) -> dict:
        from data_pipeline.io.atomic import write_json
        from data_pipeline.squad import scoring
        from data_pipeline.squad.postprocess import write_predictions

        predict_set, tune_set = data.splits["predict"], data.splits["tune"]
        threshold = s.null_score_diff_threshold
        v2 = s.version_2_with_negative
        if predict_set:  # (written before they are scored)
            found = self.answers(s, trainer.model, predict_set, threshold, run.strategy)
            predictions, nbest, null_odds = found
            path = write_predictions(run.output_dir, predictions, nbest, null_odds if v2 else None)
            print(f"predictions: {path}", flush=True)
        if predict_set and s.do_eval:
            tune_on = None  # (held-out file, its nbest, its null_odds) for the v2.0 threshold
            if tune_set is not None:
                tuned = self.answers(s, trainer.model, tune_set, threshold, run.strategy)
                tune_on = (tune_set.source, *tuned[1:])
            scores = scoring.evaluation_report(
                s.predict_file,
                predictions,
                nbest,
                null_odds,
                v2,
                threshold,
                tune_on,
                s.eval_metric,
            )
            report = {"predict_file": s.predict_file, "version": self.version(s)}
            report.update(step=trainer.weights_step, metric=s.eval_metric, **scores)
            threshold = report.get("tuned_threshold", {}).get("threshold", threshold)
            write_json(trainer.files.results_path(), report)
            print(json.dumps(report), flush=True)
        data.extra["threshold"] = threshold
        return result

    def evaluated(self, s) -> str:
        return os.path.basename(s.predict_file)

    def task_info(self, s, data: Data, trainer):
        from albert_tf.checkpoints.task_info import TaskInfo

        source = data.splits["train"] or data.splits["predict"]
        return TaskInfo.build(
            "squad",
            version_2_with_negative=s.version_2_with_negative,
            do_lower_case=s.do_lower_case,
            max_seq_length=source.max_seq_length,
            doc_stride=s.doc_stride,
            max_query_length=s.max_query_length,
            max_answer_length=s.max_answer_length,
            n_best_size=s.n_best_size,
            null_score_diff_threshold=data.extra.get("threshold", s.null_score_diff_threshold),
            squad_head=self.head(s),
            start_n_top=s.start_n_top,
            end_n_top=s.end_n_top,
            step=trainer.weights_step,
        )
