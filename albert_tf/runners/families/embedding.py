"""The sentence-embedding family (run_embedding.py): an encoder trained from sentence pairs
(cosine regression or in-batch negatives), evaluated as the Spearman correlation of cosine
similarity.

Why a family of its own, not a classifier task: the data is pairs of sentences each encoded
alone (no `[CLS] a [SEP] b [SEP]` packing), with a score or only a positive label and no
label set; the model is `AlbertEmbedder` (encoder + pooling), no head; the best checkpoint
is chosen by Spearman of cosine on scored pairs; and the export is the encoder's (`embed`,
`similarity`), of the best checkpoint (the driver's rule for every family). Controls:
early stopping, layer-wise decay, recomputation, --num_runs.

Objectives (albert_tf.training.embedding_task): `cosine` regresses cos(u, v) on the gold
score / --max_score, in [0, 1] rather than [-1, 1] (sentence-transformers' STS-B recipe:
"unrelated" asks for orthogonal embeddings, which unrelated sentences already get, not
opposite ones); `contrastive` is MultipleNegativesRankingLoss over positive pairs (MRPC or
AFQMC label 1, or the user's file filtered by --label_column / --positive_label), the
batch's other pairs as negatives. Files: data_pipeline.classification.pair_files (every
error names the flag, file:line). Each sentence is packed alone, padded to
--max_seq_length.

Evaluation (--eval_file, STS-B-style scored pairs): Spearman of the pairs' cosine with the
gold scores, on the starting weights before the first step (the unsupervised figure,
step 0 in metrics.jsonl), every --eval_every steps and at the end; best/ keeps the best
checkpoint (the starting weights when training never beats them). eval_results.json:
{"unsupervised", "final", "best"} (with --num_runs: over seeds). The run is the shared
trainer's (resume after a kill, the output lock, the NaN guard, run_config.json).
--do_predict: each --predict_file pair's cosine, one JSON line a pair with its gold score
when the file has one (then scored: test_results.json), OUTPUT_DIR/similarities.jsonl.
--export_dir writes the best checkpoint's encoder as a SavedModel (albert_tf.serving.export
--task encoder): raw strings → embeddings (--pooling, L2-normalized unless --nonormalize)
and similarity(text_a, text_b) = cosine.
"""

from __future__ import annotations

import os

from albert_tf.runners.family import Data, Family
from albert_tf.training.embedding_settings import (
    EmbeddingSettings,
    evaluation_pairs,
    predicted_pairs,
    training_pairs,
)

SIMILARITIES = "similarities.jsonl"  # --do_predict: one line a --predict_file pair


class Embedding(Family):
    runner = "run_embedding"
    kind = "encoder"
    settings = (EmbeddingSettings,)
    defaults = {"learning_rate": 2e-5, "max_seq_length": 128, "num_train_epochs": 4.0}
    controls = frozenset({"early_stopping", "layer_lr_decay", "recompute", "num_runs"})
    untrained = "--eval_file/--do_predict without --do_train"

    def identity_task(self, s) -> str:
        return f"embedding-{s.objective}"

    def best_metric(self, s) -> str:
        return "spearman"

    def length_buckets(self, s):
        return None  # every sentence padded to --max_seq_length

    def check(self, s) -> None:
        if not (s.do_train or s.eval_file or s.do_predict):
            raise ValueError(
                "nothing to do: give --do_train with --train_file, --eval_file and/or "
                "--do_predict with --predict_file"
            )
        if s.do_predict and not s.predict_file:
            raise ValueError("--do_predict needs --predict_file (the pairs to predict)")
        if s.do_train and not s.train_file:
            raise ValueError("--do_train needs --train_file (the training pairs)")
        if s.given("length_buckets"):
            raise ValueError(
                "--length_buckets: run_embedding.py pads every sentence to --max_seq_length "
                "(both sides of a pair in one batch); it has no length buckets"
            )
        if s.objective == "contrastive" and s.train_batch_size < 2:
            raise ValueError(
                f"--train_batch_size={s.train_batch_size}: the contrastive objective's "
                "negatives are the batch's other pairs; give 2 or more"
            )
        if s.export_dir:  # a file in the way is found now, not after training
            from albert_tf.serving.export_dir import check_export_dir

            check_export_dir(s.export_dir)

    def no_recipe(self, s) -> str:
        return (
            f"--recipe={s.recipe}: the ALBERT paper gives no sentence-embedding "
            "hyper-parameters; give --learning_rate, --train_batch_size, --num_train_epochs"
        )

    def read(self, s, inputs) -> Data:
        texts = {"train": training_pairs(s)} if s.do_train else {}
        if s.eval_file:
            texts["eval"] = evaluation_pairs(s)
        if s.do_predict:
            texts["predict"] = predicted_pairs(s)
        identity = dict(
            max_seq_length=s.max_seq_length,
            pooling=s.pooling,
            train_format=s.train_format,
            max_score=s.max_score,
            columns=[
                s.text_a_column,
                s.text_b_column,
                s.score_column,
                s.label_column,
                s.positive_label,
            ],
        )
        return Data(None, s.train_file, identity, extra={"texts": texts})

    def features(self, s, inputs, data: Data) -> Data:
        texts = data.extra["texts"]
        from albert_tf.training.sentence_similarity import pair_features

        length, top = s.max_seq_length, s.max_score
        data.splits = {k: pair_features(v, inputs.tokenizer, length, top) for k, v in texts.items()}
        for k, v in texts.items():
            print(f"{k}: {len(v)} pairs from {v.path}", flush=True)
        data.extra["train_count"] = len(texts["train"]) if s.do_train else 0
        data.recorded = dict(objective=s.objective, pooling=s.pooling, normalize=s.normalize)
        return data

    def train_count(self, data: Data) -> int:
        return data.extra["train_count"]

    def task(self, s, data: Data, albert_config):
        from albert_tf.training.embedding_task import EmbeddingTask

        return EmbeddingTask(albert_config, objective=s.objective, pooling=s.pooling)

    def dataset(self, s, data: Data, batch, seed, ctx, buckets):
        from albert_tf.training.embedding_task import pair_dataset

        splits = data.splits  # (without --do_train: built, never run)
        source = splits.get("train") or splits.get("eval") or splits["predict"]
        return pair_dataset(source, batch, seed=seed, input_context=ctx)

    def evaluate(self, s, data: Data, strategy):
        from albert_tf.training.sentence_similarity import cosine_spearman

        if "eval" not in data.splits:
            return None
        return lambda model: {
            "spearman": cosine_spearman(model, data.splits["eval"], s.eval_batch_size)
        }

    def before_training(self, s, data: Data, trainer) -> dict:
        result = {}
        if "eval" in data.splits:
            # The starting weights' figure: measured for a new run, read back when resumed.
            figure = trainer.evaluate(0) if trainer.step == 0 else None
            result["unsupervised"] = figure or trainer.files.evaluation_at(0)
            if not s.do_train and trainer.step == 0:
                result["eval"] = result["unsupervised"]  # (the same weights: not measured twice)
        return result

    def conclude(self, s, data: Data, trainer, run, result: dict) -> dict:
        from data_pipeline.io.atomic import write_json

        if "eval" in data.splits:
            result["eval"] = result.get("eval") or trainer.evaluate()  # (train() evaluates last)
            report = {"task": "embedding", "objective": s.objective, "pooling": s.pooling}
            report.update(seed=trainer.config.seed, step=trainer.step)
            report.update(unsupervised=result["unsupervised"], final=result["eval"])
            report.update(best=trainer.best_record())
            write_json(trainer.files.results_path(), report)
        if s.do_predict:
            self._predict(s, data, trainer)
        return result

    def concluding(self, s) -> str:
        doing = (("final report", bool(s.eval_file)), ("pair similarities", s.do_predict))
        return " and ".join(name for name, on in doing if on)

    def _predict(self, s, data: Data, trainer) -> None:
        """OUTPUT_DIR/similarities.jsonl: each --predict_file pair's cosine (its gold
        score beside it when the file has scores: then its Spearman is the test's score,
        test_results.json)."""
        from albert_tf.training.sentence_similarity import pair_cosines, write_similarities
        from data_pipeline.classification.metrics import spearman

        pairs = data.extra["texts"]["predict"]
        cosines = pair_cosines(trainer.model, data.splits["predict"], s.eval_batch_size)
        path = os.path.join(trainer.config.output_dir, SIMILARITIES)
        write_similarities(path, pairs, cosines)
        print(f"predictions: {path} ({len(pairs):,} pairs)", flush=True)
        if pairs.scores is not None:
            figures = {"spearman": spearman(cosines, pairs.scores)}
            trainer.files.record_test(os.path.basename(pairs.path), figures, trainer.weights_step)

    def evaluated(self, s) -> str:
        return os.path.basename(s.eval_file or s.predict_file)

    def seeds_report(self, results: list[dict]) -> list[dict]:
        return [{"spearman": r["eval"]["spearman"]} for r in results]

    def seeds_extra(self, results: list[dict]) -> dict:
        return {"unsupervised": [r.get("unsupervised") for r in results]}

    def export(self, s, data: Data, trainer, model, inputs, export_dir: str) -> list[str]:
        """The encoder SavedModel (and LiteRT files with --export_format tflite) of `model`
        (the best checkpoint: the driver restored it; the last without an evaluation), its
        pooling and normalization recorded in its task.json."""
        import tempfile

        from albert_tf.checkpoints import save_checkpoint
        from albert_tf.serving.export import export_formats as export
        from albert_tf.serving.export import print_exports
        from albert_tf.serving.export_dir import check_export_dir
        from albert_tf.serving.formats import export_formats
        from data_pipeline.io import filesystem

        check_export_dir(export_dir)
        filesystem.makedirs(export_dir)
        scratch = None if filesystem.is_url(export_dir) else export_dir
        with tempfile.TemporaryDirectory(dir=scratch, prefix=".encoder-") as tmp:
            save_checkpoint(model.encoder, tmp, inputs.albert_config)
            paths = export(
                "encoder",
                tmp,
                export_dir,
                albert_config=inputs.albert_config,
                tokenizer=inputs.tokenizer_spec,
                max_seq_length=s.max_seq_length,
                do_lower_case=s.do_lower_case,
                pooling=s.pooling,
                normalize=s.normalize,
                card_sources=(trainer.files.output_dir,),
                **export_formats(s),
            )
        print_exports(paths)
        return paths
