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
given, and prints each with its source. `--multi_label` (csv/tsv/jsonl): any number of
labels an example, sigmoid outputs, thresholds `--threshold` or tuned on a held-out part of
train (`--tune_thresholds`; albert_tf.runners.multi_label_flags), ranked by micro F1.
`--sweep NAME=v1,v2,...` trains a grid of settings in OUTPUT_DIR/sweep and selects on a
held-out part of train, never dev (albert_tf.runners.sweep_flags).
"""

from __future__ import annotations

import json
import os

from absl import flags

from albert_tf.runners import classifier_flags as cf
from albert_tf.runners import distill_flags as df
from albert_tf.runners import finetuning_flags as ff
from albert_tf.runners import multi_label_flags as mlf
from albert_tf.runners import sweep_flags as sw
from albert_tf.runners.classifier_flags import define_classifier_flags as define_flags
from albert_tf.runners.classifier_run import run_once
from albert_tf.runners.recipe_flags import apply_recipe
from albert_tf.runners.run_setup import run_entry, run_main

FLAGS = flags.FLAGS


def main(argv):
    return run_main(_main, argv)


def _main() -> int:
    from absl import logging

    from albert_tf.runners.trainer_flags import trainer_config_from_flags
    from albert_tf.training.class_weights import (
        label_counts,
        multi_label_counts,
        parse_class_weights,
        resolve_class_weights,
    )
    from data_pipeline.classification import metrics
    from data_pipeline.classification.features import task_features
    from data_pipeline.io.atomic import write_json

    logging.set_verbosity(logging.WARNING)
    cf.check_something_to_do()
    apply_recipe(FLAGS.task_name)  # --recipe: sets what the user did not give, first
    # Everything is checked before the first write (the feature cache in OUTPUT_DIR/cache).
    inputs = ff.finetuning_inputs_from_flags(cf.check_classifier_flags)
    spec = cf.classification_task_from_flags()
    windows = cf.document_windows_from_flags()
    windows.check_task(spec.choices is not None, spec.is_regression, spec.multi_label)
    labels = spec.labels()
    evaluated = spec.dev_splits if FLAGS.do_eval or FLAGS.do_train else []
    for split in evaluated + (["test"] if FLAGS.do_predict else []):
        spec.check_labels(split, labels)
    weights_asked = parse_class_weights(
        FLAGS.class_weights, labels, spec.is_regression, spec.choices, spec.multi_label
    )
    identity = ff.checked_identity(
        "run_classifier", spec.name, inputs, labels, spec.source("train"),
        max_seq_length=FLAGS.max_seq_length, max_train_examples=FLAGS.max_train_examples,
        **(windows.fingerprint() if windows.enabled else {}),
    )  # fmt: skip
    teacher = df.load_teacher(labels, inputs.tokenizer_spec) if FLAGS.do_train else None
    cache = os.path.join(FLAGS.output_dir, "cache")

    def features(split, limit=0, held_out=None):
        found = task_features(
            spec, split, inputs.tokenizer, cache, FLAGS.max_seq_length, labels, limit, FLAGS.seed,
            held_out, windows,
        )  # fmt: skip
        print(found.describe(), flush=True)
        return found

    fit, tune = mlf.held_out_from_flags("fit"), mlf.held_out_from_flags("tune")
    train = features("train", FLAGS.max_train_examples, fit) if FLAGS.do_train else None
    tune = features("train", FLAGS.max_train_examples, tune) if tune else None  # thresholds
    counts = multi_label_counts if spec.multi_label else label_counts  # (auto only)
    weights = train and resolve_class_weights(
        weights_asked, labels, lambda: counts(train.path, len(labels)), spec.multi_label
    )
    # --distill_unlabelled_file: appended to train (after the class weights' counts)
    train, labelled = df.with_unlabelled(train, spec, inputs.tokenizer, cache, labels, windows)
    dev = sw.held_out_first(tune, {s: features(s) for s in evaluated})  # --sweep: scored on
    test = features("test") if FLAGS.do_predict else None
    if teacher is not None:  # its logits once, by example_index; then the teacher goes
        buckets = ff.length_buckets_from_flags()
        teacher = df.teacher_table(teacher, train, FLAGS.eval_batch_size, buckets), labelled
    seeds = [FLAGS.seed + i for i in range(FLAGS.num_runs)]

    def run_seeds(output_dir):  # one output directory per seed with --num_runs
        steps, warmup = ff.finetuning_schedule(train.count if train else 0)
        results = []
        for i, seed in enumerate(seeds):
            out = output_dir if len(seeds) == 1 else os.path.join(output_dir, f"run_{i}")
            config = trainer_config_from_flags(
                output_dir=out, num_train_steps=steps, num_warmup_steps=warmup, seed=seed
            )
            run = (spec, inputs, config, identity, labels, train, dev, test, tune, weights)
            results.append(run_once(*run, teacher))
        if len(seeds) > 1 and FLAGS.do_eval:
            report, line = metrics.seeds_report(spec.name, seeds, [r["eval"] for r in results])
            write_json(os.path.join(output_dir, "eval_results.json"), report)
            print(line, flush=True)
        return results

    if FLAGS.sweep:  # every point in OUTPUT_DIR/sweep/<point>, selected on held-out train
        sw.run_sweep_from_flags(run_seeds, spec.best_metric, seeds)
    else:
        results = run_seeds(FLAGS.output_dir)
        print(json.dumps(results[-1] if len(seeds) == 1 else results, default=str))
    return 0


def entry():
    """The console script `albert-classify`: `python run_classifier.py`."""
    run_entry(__doc__, define_flags, main)


if __name__ == "__main__":
    entry()
