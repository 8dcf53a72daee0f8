"""Fine-tune ALBERT for sentence (pair) classification and regression: GLUE and Chinese tasks.

    python run_classifier.py --task_name mrpc --data_dir glue/MRPC --output_dir out/mrpc \\
        --spm_model_file 30k-clean.model --albert_config_file albert_config.json \\
        --init_checkpoint out/encoder --do_train --do_eval --do_predict \\
        --max_seq_length 128 --train_batch_size 32 --learning_rate 2e-5 --num_train_epochs 3

Tasks: cola, sst-2, mrpc, sts-b (regression), qqp, mnli (dev = matched and mismatched),
qnli, rte, wnli, chnsenticorp, afqmc. Task files are read by data_pipeline.classifier_data
and converted once into cached TFRecords (`OUTPUT_DIR/cache`, rebuilt when the file, the
vocabulary or the settings change). Training runs on the shared trainer; evaluation
computes the task's GLUE metrics (data_pipeline.metrics) on the dev set every
`--eval_every` steps and at the end, keeping the best checkpoint by the task's metric
(MCC for CoLA, Pearson/Spearman mean for STS-B, F1/accuracy mean for MRPC and QQP,
accuracy otherwise); final figures go to eval_results.json. `--do_predict` writes the GLUE
submission file (`index<TAB>prediction`) and a JSONL with probabilities for the test set.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from absl import app, flags

from albert_tf import flags as shared_flags

FLAGS = flags.FLAGS


def define_flags():
    shared_flags.define_trainer_flags(learning_rate=3e-5, optimizer="adamw",
                                      num_train_steps=0, num_warmup_steps=0,
                                      steps_per_loop=100, save_checkpoints_steps=1000)
    flags.DEFINE_string("task_name", None, "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, "
                        "wnli, chnsenticorp, afqmc.")
    flags.DEFINE_string("data_dir", None, "The task's directory (its train/dev/test files).")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model of the pretrained model.")
    flags.DEFINE_bool("do_lower_case", True, "Lowercase (uncased models).")
    flags.DEFINE_bool("do_train", False, "Fine-tune on the train split.")
    flags.DEFINE_bool("do_eval", False, "Evaluate on the dev split(s).")
    flags.DEFINE_bool("do_predict", False, "Predict the test split.")
    flags.DEFINE_integer("max_seq_length", 512, "Sequence length (pairs are truncated).")
    flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
    flags.DEFINE_integer("eval_batch_size", 8, "Evaluation/prediction batch size.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Epochs when no step count is given.")
    flags.DEFINE_integer("train_step", 0, "Training steps (official flag; overrides epochs).")
    flags.DEFINE_float("warmup_proportion", 0.1, "Warmup as a fraction of training steps.")
    flags.DEFINE_integer("warmup_step", 0, "Warmup steps (official flag; overrides the "
                         "proportion).")
    flags.DEFINE_float("classifier_dropout", 0.1, "Dropout on the pooled output.")
    flags.mark_flags_as_required(["task_name", "data_dir", "output_dir", "spm_model_file"])


def _features(tokenizer, task, split, cache_dir, labels):
    from data_pipeline import classifier_data
    from data_pipeline.classifier_features import cached_features, convert_examples, fingerprint
    source = classifier_data.task_file(FLAGS.data_dir, task, split)
    if not os.path.exists(source):
        raise FileNotFoundError(f"{task} {split} file not found: {source}")
    key = fingerprint(source, tokenizer, task=task, split=split,
                      max_seq_length=FLAGS.max_seq_length, labels=labels)
    examples = []

    def build():
        examples.extend(classifier_data.read_task(FLAGS.data_dir, task, split))
        return convert_examples(examples, tokenizer, FLAGS.max_seq_length, labels)

    path, count, reused = cached_features(os.path.join(cache_dir, f"{task}-{split}"), key,
                                          build)
    print(f"{task} {split}: {count:,} examples "
          f"({'cached' if reused else 'converted'}: {path})", flush=True)
    return path, count


def predict(model, record_path, regression):
    """Logits for every record of `record_path`, in file order: [N, num_labels]."""
    import numpy as np
    import tensorflow as tf
    from data_pipeline.classifier_features import classifier_dataset
    forward = tf.function(lambda b: model(b, training=False)["logits"])
    logits, order = [], []
    for batch in classifier_dataset(record_path, FLAGS.eval_batch_size, FLAGS.max_seq_length,
                                    regression=regression, drop_remainder=False):
        logits.append(forward({k: batch[k] for k in ("input_ids", "input_mask",
                                                     "segment_ids")}).numpy())
        order.append(batch["example_index"].numpy())
    logits, order = np.concatenate(logits), np.concatenate(order)
    out = np.empty_like(logits)
    out[order] = logits
    return out


def evaluate_splits(model, task, dev, regression):
    """{metric: value} over every dev split (mnli: matched and mismatched, prefixed)."""
    import numpy as np
    from data_pipeline import metrics
    from data_pipeline.features import read_records
    import tensorflow as tf
    result = {}
    for split, path in dev.items():
        logits = predict(model, path, regression)
        labels = np.array([tf.train.Example.FromString(r).features.feature["label_ids"]
                           .__getattribute__("float_list" if regression else "int64_list")
                           .value[0] for r in read_records(path)])
        predictions = logits[:, 0] if regression else logits.argmax(-1)
        values = metrics.task_metrics(task, predictions, labels)
        prefix = "" if len(dev) == 1 else f"{split}/"
        result.update({prefix + k: v for k, v in values.items()})
    if len(dev) > 1:  # mnli: rank by the matched set
        first = next(iter(dev))
        for k in list(result):
            if k.startswith(first + "/"):
                result[k[len(first) + 1:]] = result[k]
    return result


def write_predictions(model, task, test_path, labels, regression, out_dir):
    import numpy as np
    from data_pipeline import classifier_data
    examples = classifier_data.read_task(FLAGS.data_dir, task, "test")
    logits = predict(model, test_path, regression)
    name = {"mnli": "MNLI-m", "sts-b": "STS-B", "sst-2": "SST-2"}.get(task, task.upper())
    tsv = os.path.join(out_dir, f"{name}.tsv")
    jsonl = os.path.join(out_dir, f"{task}_test_predictions.jsonl")
    with open(tsv + ".tmp", "w") as f, open(jsonl + ".tmp", "w") as g:
        f.write("index\tprediction\n")
        for e, row in zip(examples, logits):
            index = e.guid.split("-", 1)[1]
            if regression:
                value = float(row[0])
                f.write(f"{index}\t{min(max(value, 0.0), 5.0):.3f}\n")
                g.write(json.dumps({"guid": e.guid, "score": value}) + "\n")
            else:
                p = np.exp(row - row.max())
                p /= p.sum()
                f.write(f"{index}\t{labels[int(row.argmax())]}\n")
                g.write(json.dumps({"guid": e.guid, "label": labels[int(row.argmax())],
                                    "probabilities": dict(zip(labels, p.round(6).tolist()))})
                        + "\n")
    os.replace(tsv + ".tmp", tsv)
    os.replace(jsonl + ".tmp", jsonl)
    print(f"predictions: {tsv}, {jsonl}", flush=True)


def main(argv):
    del argv
    from absl import logging
    logging.set_verbosity(logging.WARNING)
    from albert_tf.training import ClassificationTask, Trainer, make_strategy, write_json
    from data_pipeline import classifier_data, metrics
    from data_pipeline.classifier_features import classifier_dataset
    from data_pipeline.tokenization import AlbertTokenizer

    task = FLAGS.task_name.lower()
    try:
        if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
            raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")
        albert_config = shared_flags.albert_config_from_flags()
        regression = classifier_data.is_regression(task)
        labels = None if regression else classifier_data.label_names(task)
        tokenizer = AlbertTokenizer(FLAGS.spm_model_file, FLAGS.do_lower_case)
        cache_dir = os.path.join(FLAGS.output_dir, "cache")
        train_path, train_count = (_features(tokenizer, task, "train", cache_dir, labels)
                                   if FLAGS.do_train else (None, 0))
        dev_splits = [s for s in classifier_data.splits(task) if s.startswith("dev")]
        dev = {s: _features(tokenizer, task, s, cache_dir, labels)[0] for s in dev_splits} \
            if (FLAGS.do_eval or FLAGS.do_train) else {}
        test_path = _features(tokenizer, task, "test", cache_dir, labels)[0] \
            if FLAGS.do_predict else None
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    steps = FLAGS.train_step or FLAGS.num_train_steps or max(
        1, int(train_count * FLAGS.num_train_epochs / FLAGS.train_batch_size))
    warmup = FLAGS.warmup_step or FLAGS.num_warmup_steps or int(steps * FLAGS.warmup_proportion)
    try:
        trainer_config = shared_flags.trainer_config_from_flags(num_train_steps=steps,
                                                                num_warmup_steps=warmup)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    strategy = make_strategy(FLAGS.strategy, FLAGS.tpu, FLAGS.num_gpus)
    micro = FLAGS.train_batch_size // trainer_config.grad_accum_steps
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    write_json(os.path.join(FLAGS.output_dir, "run_config.json"), {
        "runner": "run_classifier", "flags": FLAGS.flag_values_dict(),
        "albert_config": albert_config.to_dict(),
        "trainer_config": dataclasses.asdict(trainer_config), "labels": labels,
        "train_examples": train_count})

    task_obj = ClassificationTask(albert_config, num_labels=1 if regression else len(labels),
                                  dropout=FLAGS.classifier_dropout)
    task_obj.best_metric = metrics.primary_metric(task)

    def train_fn(ctx):
        return classifier_dataset(train_path or next(iter(dev.values())),
                                  ctx.get_per_replica_batch_size(micro), FLAGS.max_seq_length,
                                  regression=regression, is_training=True, seed=FLAGS.seed,
                                  input_context=ctx)

    try:
        trainer = Trainer(task_obj, trainer_config, strategy, train_fn,
                          init_checkpoint=FLAGS.init_checkpoint,
                          evaluate_fn=(lambda model: evaluate_splits(model, task, dev,
                                                                     regression))
                          if dev else None)
        result = {}
        if FLAGS.do_train:
            result = trainer.train()
        if FLAGS.do_eval:
            final = trainer.evaluate()
            best_path = os.path.join(FLAGS.output_dir, "best", "best.json")
            best = None
            if os.path.exists(best_path):
                with open(best_path) as f:
                    best = json.load(f)
            write_json(os.path.join(FLAGS.output_dir, "eval_results.json"),
                       {"task": task, "step": trainer.step, "final": final,
                        "best": best and {k: best[k] for k in ("metric", "value", "step",
                                                               "eval")}})
            result["eval"] = final
        if FLAGS.do_predict:
            write_predictions(trainer.model, task, test_path, labels, regression,
                              FLAGS.output_dir)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(lambda argv: sys.exit(main(argv)))
