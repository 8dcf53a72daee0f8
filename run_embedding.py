"""Fine-tune ALBERT as a sentence-embedding model from sentence pairs (cosine regression or
in-batch negatives), evaluated as the Spearman correlation of cosine similarity.

    python run_embedding.py --objective cosine --train_file glue/STS-B/train.tsv \\
        --eval_file glue/STS-B/dev.tsv --output_dir out/sts --spm_model_file 30k-clean.model \\
        --albert_config_file albert_config.json --init_checkpoint out/encoder --do_train \\
        --pooling mean --export_dir out/sts_export

Why a runner of its own, not run_classifier --task_name: the data is pairs of sentences
each encoded alone (no `[CLS] a [SEP] b [SEP]` packing), with a score or only a positive
label and no label set; the model is `AlbertEmbedder` (encoder + pooling), no head; the
best checkpoint is chosen by Spearman of cosine on scored pairs, not by a classification
metric; and the export is the encoder's (`embed`, `similarity`), not a task model's.

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
--export_dir writes the best checkpoint's encoder as a SavedModel (albert_tf.serving.export
--task encoder): raw strings → embeddings (--pooling, L2-normalized unless --nonormalize)
and similarity(text_a, text_b) = cosine.
"""

from __future__ import annotations

import json
import os

from absl import flags

from albert_tf.runners import embedding_flags as ef
from albert_tf.runners import finetuning_flags as ff
from albert_tf.runners.embedding_flags import define_embedding_flags as define_flags
from albert_tf.runners.run_setup import run_entry, run_main

FLAGS = flags.FLAGS


def main(argv):
    return run_main(_main, argv)


def _main() -> int:
    from absl import logging

    from albert_tf.runners.trainer_flags import trainer_config_from_flags
    from data_pipeline.classification.metrics import seeds_report
    from data_pipeline.io.atomic import write_json

    logging.set_verbosity(logging.WARNING)
    # Everything is read and checked before the first write.
    inputs = ff.finetuning_inputs_from_flags(ef.check_embedding_flags)
    texts = {"train": ef.training_pairs()} if FLAGS.do_train else {}
    if FLAGS.eval_file:
        texts["eval"] = ef.evaluation_pairs()
    identity = ff.checked_identity(
        "run_embedding", f"embedding-{FLAGS.objective}", inputs, None, FLAGS.train_file,
        max_seq_length=FLAGS.max_seq_length, pooling=FLAGS.pooling,
        train_format=FLAGS.train_format, max_score=FLAGS.max_score,
        columns=[FLAGS.text_a_column, FLAGS.text_b_column, FLAGS.score_column,
                 FLAGS.label_column, FLAGS.positive_label],
    )  # fmt: skip
    pairs = {k: ef.pair_features(v, inputs.tokenizer) for k, v in texts.items()}
    for k, v in texts.items():
        print(f"{k}: {len(v)} pairs from {v.path}", flush=True)
    steps, warmup = ff.finetuning_schedule(len(texts["train"]) if FLAGS.do_train else 0)
    seeds = [FLAGS.seed + i for i in range(FLAGS.num_runs)]
    results = []
    for i, seed in enumerate(seeds):  # one output directory per seed with --num_runs
        output_dir = (
            FLAGS.output_dir if len(seeds) == 1 else os.path.join(FLAGS.output_dir, f"run_{i}")
        )
        trainer_config = trainer_config_from_flags(
            output_dir=output_dir, num_train_steps=steps, num_warmup_steps=warmup, seed=seed
        )
        results.append(_run_once(inputs, trainer_config, identity, pairs))
    if len(seeds) > 1 and "eval" in pairs:
        evals = [{"spearman": r["eval"]["spearman"]} for r in results]
        report, line = seeds_report("embedding", seeds, evals)
        report["unsupervised"] = [r.get("unsupervised") for r in results]
        write_json(os.path.join(FLAGS.output_dir, "eval_results.json"), report)
        print(line, flush=True)
    print(json.dumps(results[-1] if len(seeds) == 1 else results, default=str))
    return 0


def _run_once(inputs, trainer_config, identity, pairs) -> dict:
    """One run (one seed, into trainer_config.output_dir); what it did."""
    from albert_tf.runners.trainer_flags import setup_run_from_flags
    from albert_tf.training import Trainer
    from albert_tf.training.embedding_task import EmbeddingTask, pair_dataset
    from albert_tf.training.sentence_similarity import cosine_spearman
    from data_pipeline.io.atomic import write_json

    albert_config = inputs.albert_config
    run = setup_run_from_flags(
        "run_embedding", trainer_config, albert_config, FLAGS.do_train, None, identity,
        objective=FLAGS.objective, pooling=FLAGS.pooling, normalize=FLAGS.normalize,
    )  # fmt: skip
    task = EmbeddingTask(albert_config, objective=FLAGS.objective, pooling=FLAGS.pooling)
    source = pairs.get("train") or pairs["eval"]  # without --do_train: only built

    def train_fn(ctx):
        batch = ctx.get_per_replica_batch_size(run.micro_batch)
        return pair_dataset(source, batch, seed=trainer_config.seed, input_context=ctx)

    def evaluate(model):
        return {"spearman": cosine_spearman(model, pairs["eval"], FLAGS.eval_batch_size)}

    trainer = Trainer(
        task, trainer_config, run.strategy, train_fn, init_checkpoint=FLAGS.init_checkpoint,
        evaluate_fn=evaluate if "eval" in pairs else None,
    )  # fmt: skip
    if not FLAGS.do_train:
        trainer.check_trained("--eval_file without --do_train")
    result = {}
    if "eval" in pairs:
        result["unsupervised"] = _starting_figure(trainer)
        if not FLAGS.do_train and trainer.step == 0:
            result["eval"] = result["unsupervised"]  # (the same weights: not measured twice)
    if FLAGS.do_train:
        result.update(trainer.train())
    if "eval" in pairs:
        result["eval"] = result.get("eval") or trainer.evaluate()  # (train() evaluates last)
        report = {"task": "embedding", "objective": FLAGS.objective, "pooling": FLAGS.pooling}
        report.update(seed=trainer_config.seed, step=trainer.step)
        report.update(unsupervised=result["unsupervised"], final=result["eval"])
        report.update(best=trainer.best_record())
        write_json(os.path.join(run.output_dir, "eval_results.json"), report)
    if FLAGS.export_dir:
        result["exported"] = _export(trainer, inputs, trainer_config.output_dir)
    return result


def _starting_figure(trainer) -> dict | None:
    """The evaluation of the starting weights (step 0): made now for a new run (recorded
    in metrics.jsonl and best/ like every evaluation), read back from metrics.jsonl for a
    resumed one (None when that run never made it)."""
    from albert_tf.training.run_files import METRICS_FILE
    from data_pipeline.io import filesystem

    if trainer.step == 0:
        return trainer.evaluate(0)
    path = os.path.join(trainer.config.output_dir, METRICS_FILE)
    if not filesystem.exists(path):
        return None
    with filesystem.open(path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("split") == "eval" and row.get("step") == 0:
                return {k: v for k, v in row.items() if k not in ("split", "step")}
    return None


def _export(trainer, inputs, output_dir) -> list[str]:
    """--export_dir (with --num_runs: EXPORT_DIR/run_i/N): the encoder SavedModel (and
    LiteRT files with --export_format tflite) of the best checkpoint (the last without an
    evaluation), its pooling and normalization recorded in its task.json."""
    import tempfile

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.runners.export_flags import export_formats_from_flags, print_exports
    from albert_tf.serving.export import export_formats
    from albert_tf.serving.export_dir import check_export_dir
    from data_pipeline.io import filesystem

    export_dir = FLAGS.export_dir
    if output_dir != FLAGS.output_dir:
        export_dir = os.path.join(export_dir, os.path.basename(output_dir))
    check_export_dir(export_dir)
    model = best_embedder(trainer)
    filesystem.makedirs(export_dir)
    scratch = None if filesystem.is_url(export_dir) else export_dir
    with tempfile.TemporaryDirectory(dir=scratch, prefix=".encoder-") as tmp:
        save_checkpoint(model.encoder, tmp, inputs.albert_config)
        paths = export_formats(
            "encoder", tmp, export_dir, albert_config=inputs.albert_config,
            tokenizer=inputs.tokenizer_spec, max_seq_length=FLAGS.max_seq_length,
            do_lower_case=FLAGS.do_lower_case, pooling=FLAGS.pooling,
            normalize=FLAGS.normalize, **export_formats_from_flags(),
        )  # fmt: skip
    print_exports(paths)
    return paths


def best_embedder(trainer):
    """The trainer's model with best/'s weights restored when an evaluation kept one
    (`RunFiles.keep_best` writes tf.train.Checkpoint(model=...)), else as trained."""
    import tensorflow as tf

    from albert_tf.training.run_files import BEST_DIR, BEST_RECORD
    from data_pipeline.io import filesystem

    record = os.path.join(trainer.config.output_dir, BEST_DIR, BEST_RECORD)
    if not filesystem.exists(record):
        return trainer.model
    with filesystem.open(record) as f:
        best = json.load(f)
    # The checkpoint path is recorded as written; the directory may have moved since.
    prefix = os.path.join(os.path.dirname(record), os.path.basename(best["checkpoint"]))
    status = tf.train.Checkpoint(model=trainer.model).read(prefix)
    status.assert_existing_objects_matched().expect_partial()
    print(f"best checkpoint: {prefix} (spearman {best['value']:.4f})", flush=True)
    return trainer.model


def entry():
    """The console script `albert-embedding`: `python run_embedding.py`."""
    run_entry(__doc__, define_flags, main)


if __name__ == "__main__":
    entry()
