"""run_classifier.py's one fine-tuning run: the task (one label or several, distillation,
LoRA) on the shared trainer, its evaluation on the dev splits (per document for windows),
eval_results.json, the predictions and the export; one call per seed (and per sweep point)."""

from __future__ import annotations

import os

from absl import flags

from albert_tf.runners import distill_flags as df
from albert_tf.runners import finetuning_flags as ff
from albert_tf.runners.predictions import classifier_logits

FLAGS = flags.FLAGS


def predict(model, features, strategy):
    """(logits, label_ids) of `features` with the flags' batch size and buckets; per
    document when they are windows (--doc_stride)."""
    from data_pipeline.classification.long_documents import document_outputs

    buckets = ff.length_buckets_from_flags()
    out = classifier_logits(model, features, FLAGS.eval_batch_size, buckets, strategy)
    return document_outputs(*out, features.info, FLAGS.aggregate)


def run_once(
    spec, inputs, trainer_config, identity, labels, train, dev, test, tune, weights, teacher
) -> dict:
    """One fine-tuning run (one seed, into trainer_config.output_dir) with the class
    `weights` (None: unweighted); what it did. `tune`: multi-label, the held-out training
    features the thresholds are tuned on. `teacher`: the teacher's logits by example_index
    (--teacher_checkpoint) and the count of labelled examples (None: all), or None."""
    from albert_tf.runners.classifier_export import export_classifier
    from albert_tf.runners.label_modes import label_mode
    from albert_tf.runners.lora_flags import lora_task
    from albert_tf.runners.trainer_flags import setup_run_from_flags
    from albert_tf.training import Trainer
    from albert_tf.training.distillation import with_teacher_logits
    from data_pipeline.io.atomic import write_json

    albert_config, buckets = inputs.albert_config, ff.length_buckets_from_flags()
    run = setup_run_from_flags(
        "run_classifier", trainer_config, albert_config, FLAGS.do_train, buckets, identity,
        labels=labels, train_examples=train.count if train else 0,
        class_weights=list(weights) if weights else None,
    )  # fmt: skip
    mode = label_mode(spec, labels)  # one label (softmax) or several (--multi_label)
    task = mode.task(albert_config, FLAGS.classifier_dropout, weights)
    task = lora_task(
        df.distill_task(task), trainer_config.seed
    )  # --teacher_checkpoint, --lora_rank
    # Without --do_train the trainer only builds its pipeline: any split will do.
    source = train or next(iter(dev.values()), None) or test

    def train_fn(ctx):
        batch = ctx.get_per_replica_batch_size(run.micro_batch)
        ds = source.dataset(
            batch, is_training=True, seed=trainer_config.seed, input_context=ctx,
            length_buckets=buckets,
        )  # fmt: skip
        return ds if teacher is None else with_teacher_logits(ds, *teacher)

    def evaluate(model):
        outputs = {s: predict(model, f, run.strategy) for s, f in dev.items()}
        return mode.evaluate(outputs, lambda: predict(model, tune, run.strategy) if tune else None)

    trainer = Trainer(
        task, trainer_config, run.strategy, train_fn, init_checkpoint=FLAGS.init_checkpoint,
        evaluate_fn=evaluate if dev else None,
    )  # fmt: skip
    if not FLAGS.do_train:
        trainer.check_trained("--do_eval/--do_predict without --do_train")
    result = trainer.train() if FLAGS.do_train else {}
    if FLAGS.do_eval:
        if not result.get("eval"):  # (train() has evaluated its last step: not twice)
            result["eval"] = trainer.evaluate()
        report = {"task": spec.name, "seed": trainer_config.seed, "step": trainer.step}
        report.update(final=result["eval"], best=trainer.best_record())
        report.update(mode.report())  # multi-label: "thresholds" and "f1" of each label
        write_json(os.path.join(run.output_dir, "eval_results.json"), report)
    if FLAGS.do_predict:
        logits = predict(trainer.model, test, run.strategy)[0]
        print(f"predictions: {mode.write_predictions(run.output_dir, logits)}", flush=True)
    if FLAGS.export_dir:  # with --num_runs: EXPORT_DIR/run_i/N
        per_run = trainer_config.output_dir != FLAGS.output_dir
        paths = export_classifier(
            spec, labels, source, mode, task, trainer, run.output_dir, per_run,
            inputs.tokenizer_spec,
        )  # fmt: skip
        result.update(export_dir=paths[0], exported=paths)
    return result
