"""Fine-tune ALBERT for sentence (pair) classification, regression and multiple choice.

    python run_classifier.py --task_name mrpc --data_dir glue/MRPC --output_dir out/mrpc \\
        --spm_model_file 30k-clean.model --albert_config_file albert_config.json \\
        --init_checkpoint out/encoder --do_train --do_eval --do_predict \\
        --max_seq_length 128 --train_batch_size 32 --learning_rate 2e-5 --num_train_epochs 3

Tasks (data_pipeline.classification.tasks): GLUE, Chinese (chnsenticorp, afqmc), RACE and
the user's csv/tsv/jsonl files. Their files are converted once into cached TFRecords
(`OUTPUT_DIR/cache`, rebuilt when the file, the vocabulary or the settings change).
Training runs on the shared trainer; evaluation computes the task's GLUE metrics on the dev
set every `--eval_every` steps and at the end, keeping the best checkpoint by the task's
metric; final figures go to eval_results.json (with `--num_runs`: over seeds).
`--do_predict` writes the GLUE submission file and a JSONL with probabilities
(data_pipeline.classification.submission). `--export_dir` writes a SavedModel that takes
raw text (albert_tf.serving.export), versioned. `--recipe paper` sets the ALBERT paper's
hyper-parameters for the task (GLUE, RACE; albert_tf.training.recipes) on every flag not
given, and prints each with its source.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from absl import app, flags

from albert_tf.runners import flags as shared_flags
from albert_tf.runners.recipe_flags import apply_recipe
from albert_tf.runners.run_setup import (
    check_same_run,
    run_identity,
    run_main,
    training_file_identity,
)

FLAGS = flags.FLAGS


# The runner's flags are defined in albert_tf.runners.flags.
define_flags = shared_flags.define_classifier_flags


def main(argv):
    del argv
    return run_main(_main)


def _predict(model, features, strategy):
    """(logits [N, labels or choices], label_ids [N]) of every record of `features` (a
    TaskFeatures), in file order (batches grouped by length unless padded to the maximum),
    computed on the replicas of `strategy`."""
    from albert_tf.training.prediction import predict_logits

    buckets = shared_flags.length_buckets_from_flags()
    batches = features.dataset(FLAGS.eval_batch_size, drop_remainder=False, length_buckets=buckets)
    out = predict_logits(
        model,
        batches,
        carry=("label_ids",),
        order_by="example_index",
        strategy=strategy,
        batch_size=FLAGS.eval_batch_size,
    )
    return out["logits"], out["label_ids"]


def _main() -> int:
    from absl import logging
    from data_pipeline.io.atomic import write_json
    from data_pipeline.classification import metrics
    from data_pipeline.classification.features import task_features

    shared_flags.resolve_tokenizer_flags()

    logging.set_verbosity(logging.WARNING)
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")
    apply_recipe(FLAGS.task_name)  # --recipe: sets what the user did not give, first
    # Everything is checked before the first write (the feature cache in OUTPUT_DIR/cache).
    check = shared_flags.check_classifier_flags
    albert_config, tokenizer = shared_flags.finetuning_inputs_from_flags(check)
    spec = shared_flags.classification_task_from_flags()
    labels = spec.labels()
    evaluated = spec.dev_splits if FLAGS.do_eval or FLAGS.do_train else []
    for split in evaluated + (["test"] if FLAGS.do_predict else []):
        spec.check_labels(split, labels)
    train_data = training_file_identity(
        spec.source("train"), max_seq_length=FLAGS.max_seq_length,
        max_train_examples=FLAGS.max_train_examples,
    ) if FLAGS.do_train else None  # fmt: skip
    identity = run_identity(
        "run_classifier", spec.name, albert_config, tokenizer, labels, train_data
    )
    check_same_run(FLAGS.output_dir, identity, FLAGS.do_train)  # before the cache is written
    cache = os.path.join(FLAGS.output_dir, "cache")

    def features(split, limit=0):
        found = task_features(
            spec, split, tokenizer, cache, FLAGS.max_seq_length, labels, limit, FLAGS.seed
        )
        print(found.describe(), flush=True)
        return found

    train = features("train", FLAGS.max_train_examples) if FLAGS.do_train else None
    dev = {s: features(s) for s in evaluated}
    test = features("test") if FLAGS.do_predict else None
    steps, warmup = shared_flags.finetuning_schedule(train.count if train else 0)
    runs = max(1, FLAGS.num_runs)
    seeds = [FLAGS.seed + i for i in range(runs)]
    results = []
    for i, seed in enumerate(seeds):  # one output directory per seed with --num_runs
        output_dir = FLAGS.output_dir if runs == 1 else os.path.join(FLAGS.output_dir, f"run_{i}")
        trainer_config = shared_flags.trainer_config_from_flags(
            output_dir=output_dir, num_train_steps=steps, num_warmup_steps=warmup
        )
        trainer_config = dataclasses.replace(trainer_config, seed=seed)
        results.append(
            _run_once(spec, albert_config, trainer_config, labels, train, dev, test, identity)
        )
    if runs > 1 and FLAGS.do_eval:
        report, line = metrics.seeds_report(spec.name, seeds, [r["eval"] for r in results])
        write_json(os.path.join(FLAGS.output_dir, "eval_results.json"), report)
        print(line, flush=True)
    print(json.dumps(results[-1] if runs == 1 else results, default=str))
    return 0


def _run_once(spec, albert_config, trainer_config, labels, train, dev, test, identity) -> dict:
    """One fine-tuning run (one seed, into trainer_config.output_dir); what it did."""
    from albert_tf.training import ClassificationTask, Trainer
    from data_pipeline.io.atomic import write_json
    from data_pipeline.classification.submission import write_submission

    run = shared_flags.setup_run_from_flags(
        "run_classifier",
        trainer_config,
        albert_config,
        FLAGS.do_train,
        identity,
        labels=labels,
        train_examples=train.count if train else 0,
    )
    task = ClassificationTask.for_task(albert_config, spec, labels, FLAGS.classifier_dropout)
    # Without --do_train the trainer only builds its pipeline: any split will do.
    source = train or next(iter(dev.values()), None) or test

    def train_fn(ctx):
        batch = ctx.get_per_replica_batch_size(run.micro_batch)
        return source.dataset(
            batch,
            is_training=True,
            seed=trainer_config.seed,
            input_context=ctx,
            length_buckets=shared_flags.length_buckets_from_flags(),
        )

    def evaluate(model):
        return spec.evaluate({s: _predict(model, f, run.strategy) for s, f in dev.items()})

    trainer = Trainer(
        task,
        trainer_config,
        run.strategy,
        train_fn,
        init_checkpoint=FLAGS.init_checkpoint,
        evaluate_fn=evaluate if dev else None,
    )
    if not FLAGS.do_train:
        trainer.check_trained("--do_eval/--do_predict without --do_train")
    result = trainer.train() if FLAGS.do_train else {}
    if FLAGS.do_eval:
        result["eval"] = trainer.evaluate()
        report = {"task": spec.name, "seed": trainer_config.seed, "step": trainer.step}
        report.update(final=result["eval"], best=trainer.best_record())
        write_json(os.path.join(run.output_dir, "eval_results.json"), report)
    if FLAGS.do_predict:
        logits = _predict(trainer.model, test, run.strategy)[0]
        names = spec.output_names(labels)
        tsv, jsonl = write_submission(run.output_dir, spec.name, spec.read("test"), logits, names)
        print(f"predictions: {tsv}, {jsonl}", flush=True)
    if FLAGS.export_dir:
        from albert_tf.serving.export import export_trained

        export_dir = FLAGS.export_dir  # with --num_runs: EXPORT_DIR/run_i/N
        if trainer_config.output_dir != FLAGS.output_dir:
            export_dir = os.path.join(export_dir, os.path.basename(run.output_dir))
        serving = spec.serving_task(
            labels, source.text_pair, source.max_seq_length, FLAGS.do_lower_case, trainer.step
        )
        from albert_tf.checkpoints.task_info import TaskInfo
        from data_pipeline.tokenization.spec import TokenizerSpec

        paths = export_trained(
            trainer.model,
            export_dir,
            TaskInfo.build(**serving),
            TokenizerSpec.from_files(FLAGS.spm_model_file, FLAGS.vocab_file, FLAGS.do_lower_case),
            **shared_flags.export_formats_from_flags(),
        )
        for path in paths:
            if path.endswith(".tflite"):
                print(f"LiteRT: {path}", flush=True)
            else:
                finetuned = os.path.join(path, "assets.extra", "finetuned")
                print(f"SavedModel: {path} (fine-tuned checkpoint in {finetuned})", flush=True)
        result["export_dir"] = paths[0]
        result["exported"] = paths
    return result


def entry():
    """The console script `albert-classify`: the same as `python run_classifier.py`."""
    # absl's --help prints __main__'s docstring: under the console script, this module's.
    sys.modules["__main__"].__doc__ = __doc__
    define_flags()
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == "__main__":
    entry()
