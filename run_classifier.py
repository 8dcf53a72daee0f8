"""Fine-tune ALBERT for sentence (pair) classification and regression: GLUE and Chinese tasks.

    python run_classifier.py --task_name mrpc --data_dir glue/MRPC --output_dir out/mrpc \\
        --spm_model_file 30k-clean.model --albert_config_file albert_config.json \\
        --init_checkpoint out/encoder --do_train --do_eval --do_predict \\
        --max_seq_length 128 --train_batch_size 32 --learning_rate 2e-5 --num_train_epochs 3

Tasks: cola, sst-2, mrpc, sts-b (regression), qqp, mnli (dev = matched and mismatched),
qnli, rte, wnli, chnsenticorp, afqmc. Task files are read by data_pipeline.classification.data
and converted once into cached TFRecords (`OUTPUT_DIR/cache`, rebuilt when the file, the
vocabulary or the settings change). Training runs on the shared trainer; evaluation
computes the task's GLUE metrics (data_pipeline.classification.metrics) on the dev set every
`--eval_every` steps and at the end, keeping the best checkpoint by the task's metric
(MCC for CoLA, Pearson/Spearman mean for STS-B, F1/accuracy mean for MRPC and QQP,
accuracy otherwise); final figures go to eval_results.json. `--do_predict` writes the GLUE
submission file (`index<TAB>prediction`) and a JSONL with probabilities for the test set.
`--export_dir` writes a SavedModel that takes raw text (albert_tf.serving.export), versioned.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from absl import app, flags

from albert_tf.runners import flags as shared_flags

FLAGS = flags.FLAGS


def define_flags():
    shared_flags.define_finetuning_flags(
        learning_rate=3e-5, max_seq_length=512, num_train_epochs=3.0,
        export_help="When done, export a SavedModel that takes raw text as EXPORT_DIR/N "
        "(next version; albert_tf.serving.export), with the fine-tuned checkpoint, vocabulary and "
        "task.json in N/assets.extra/finetuned. With --num_runs, one per run.")
    flags.DEFINE_string("task_name", None, "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, "
                        "wnli, chnsenticorp, afqmc.")
    flags.DEFINE_string("data_dir", None, "The task's directory (its train/dev/test files).")
    flags.DEFINE_bool("do_train", False, "Fine-tune on the train split.")
    flags.DEFINE_bool("do_eval", False, "Evaluate on the dev split(s).")
    flags.DEFINE_bool("do_predict", False, "Predict the test split.")
    flags.DEFINE_integer("eval_batch_size", 8, "Evaluation/prediction batch size.")
    flags.DEFINE_float("classifier_dropout", 0.1, "Dropout on the pooled output.")
    # The user's own data and multiple choice.
    flags.DEFINE_string("train_file", None, "csv/tsv/jsonl/race tasks: the training file "
                        "(default DATA_DIR/train.EXT).")
    flags.DEFINE_string("dev_file", None, "... the dev file (default DATA_DIR/dev.EXT).")
    flags.DEFINE_string("test_file", None, "... the test file (default DATA_DIR/test.EXT).")
    flags.DEFINE_string("text_a_column", "text_a", "csv/tsv/jsonl: first text column.")
    flags.DEFINE_string("text_b_column", None, "csv/tsv/jsonl: second text column, if any.")
    flags.DEFINE_string("label_column", "label", "csv/tsv/jsonl: label column.")
    flags.DEFINE_bool("regression", False, "csv/tsv/jsonl: the label is a number (MSE).")
    flags.DEFINE_integer("num_choices", 4, "race/multiple_choice_jsonl: choices per question.")
    flags.DEFINE_integer("max_train_examples", 0, "Fine-tune on this many training examples "
                         "at most, drawn at random with --seed (0: all): learning curves, "
                         "low-resource comparisons.")
    flags.DEFINE_integer("num_runs", 1, "Fine-tune with seeds seed, seed+1, ...; "
                         "eval_results.json reports median, min, max and std.")
    flags.mark_flags_as_required(["task_name", "output_dir", "spm_model_file"])


FILE_TASKS = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "race": "json",
              "multiple_choice_jsonl": "jsonl"}
CHOICE_TASKS = ("race", "multiple_choice_jsonl")


def _source(task, split):
    """The file holding `split` of `task`."""
    from data_pipeline.classification import data as classifier_data
    if task not in FILE_TASKS:
        if not FLAGS.data_dir:
            raise ValueError(f"--data_dir is needed for task {task}")
        return classifier_data.task_file(FLAGS.data_dir, task, split)
    given = getattr(FLAGS, f"{split.split('_')[0]}_file")
    if given:
        return given
    if not FLAGS.data_dir:
        raise ValueError(f"give --{split}_file or --data_dir for task {task}")
    return os.path.join(FLAGS.data_dir, f"{split}.{FILE_TASKS[task]}")


def _read(task, split, path):
    from data_pipeline.classification import data as cd
    if task == "race":
        return cd.read_race(path)
    if task == "multiple_choice_jsonl":
        return cd.read_multiple_choice_jsonl(path)
    if task in ("csv", "tsv"):
        return cd.read_delimited(path, FLAGS.text_a_column, FLAGS.text_b_column,
                                 FLAGS.label_column, "," if task == "csv" else "\t",
                                 FLAGS.regression)
    if task == "jsonl":
        return cd.read_jsonl(path, FLAGS.text_a_column, FLAGS.text_b_column,
                             FLAGS.label_column, FLAGS.regression)
    return cd.read_task(FLAGS.data_dir, task, split)


def _features(tokenizer, task, split, cache_dir, labels):
    from data_pipeline.classification.features import convert_examples, convert_multiple_choice
    from data_pipeline.records import cached_features, fingerprint
    source = _source(task, split)
    if not os.path.exists(source):
        raise FileNotFoundError(f"{task} {split} file not found: {source}")
    choices = FLAGS.num_choices if task in CHOICE_TASKS else None
    subset = FLAGS.max_train_examples if split == "train" else 0
    key = fingerprint(source, tokenizer, task=task, split=split, labels=labels,
                      max_seq_length=FLAGS.max_seq_length, num_choices=choices,
                      columns=[FLAGS.text_a_column, FLAGS.text_b_column, FLAGS.label_column],
                      **({"subset": subset, "subset_seed": FLAGS.seed} if subset else {}))

    info = {"truncated": 0}

    def build():
        examples = _read(task, split, source)
        if subset and subset < len(examples):
            import numpy as np
            info["subset_of"] = len(examples)
            keep = np.random.default_rng(FLAGS.seed).choice(len(examples), subset,
                                                            replace=False)
            examples = [examples[i] for i in sorted(keep)]
        if choices:
            return convert_multiple_choice(examples, tokenizer, FLAGS.max_seq_length, choices,
                                           info)
        return convert_examples(examples, tokenizer, FLAGS.max_seq_length, labels, info)

    path, count, reused = cached_features(os.path.join(cache_dir, f"{task}-{split}"), key,
                                          build, info)
    of = f" (drawn from {info['subset_of']:,})" if info.get("subset_of") else ""
    print(f"{task} {split}: {count:,} examples{of}, {info.get('truncated', 0):,} "
          f"{'sequences' if choices else 'examples'} truncated to max_seq_length="
          f"{FLAGS.max_seq_length} ({'cached' if reused else 'converted'}: {path})",
          flush=True)
    return path, count


def _labels(task, regression):
    """Label names: the task's, or discovered from the user's train (else dev) file."""
    from data_pipeline.classification import data as classifier_data
    if regression or task in CHOICE_TASKS:
        return None
    if task not in FILE_TASKS:
        return classifier_data.label_names(task)
    for split in ("train", "dev"):
        path = _source(task, split)
        if os.path.exists(path):
            return classifier_data.discover_labels(_read(task, split, path))
    raise FileNotFoundError(f"no train or dev file to discover the labels of {task} from")


def predict(model, record_path, regression, choices=None):
    """Logits for every record of `record_path`, in file order: [N, labels or choices]."""
    import numpy as np
    import tensorflow as tf
    from data_pipeline.classification.features import classifier_dataset
    forward = getattr(model, "_albert_predict", None)
    if forward is None:  # one traced function per model, also for the last short batch
        forward = tf.function(lambda b: model(b, training=False)["logits"],
                              reduce_retracing=True)
        model._albert_predict = forward
    logits, order = [], []
    for batch in classifier_dataset(record_path, FLAGS.eval_batch_size, FLAGS.max_seq_length,
                                    regression=regression, num_choices=choices,
                                    drop_remainder=False):
        logits.append(forward({k: batch[k] for k in ("input_ids", "input_mask",
                                                     "segment_ids")}).numpy())
        order.append(batch["example_index"].numpy())
    logits, order = np.concatenate(logits), np.concatenate(order)
    out = np.empty_like(logits)
    out[order] = logits
    return out


def evaluate_splits(model, task, dev, regression, choices=None):
    """{metric: value} over every dev split (mnli: matched and mismatched, prefixed)."""
    import numpy as np
    from data_pipeline.classification import metrics
    from data_pipeline.records import read_records
    import tensorflow as tf
    result = {}
    for split, path in dev.items():
        logits = predict(model, path, regression, choices)
        labels = np.array([tf.train.Example.FromString(r).features.feature["label_ids"]
                           .__getattribute__("float_list" if regression else "int64_list")
                           .value[0] for r in read_records(path)])
        predictions = logits[:, 0] if regression else logits.argmax(-1)
        values = metrics.task_metrics(task if task not in FILE_TASKS else
                                      ("sts-b" if regression else "accuracy"),
                                      predictions, labels)
        prefix = "" if len(dev) == 1 else f"{split}/"
        result.update({prefix + k: v for k, v in values.items()})
    if len(dev) > 1:  # mnli: rank by the matched set
        first = next(iter(dev))
        for k in list(result):
            if k.startswith(first + "/"):
                result[k[len(first) + 1:]] = result[k]
    return result


def write_predictions(model, task, test_path, labels, regression, out_dir, choices=None):
    import numpy as np
    examples = _read(task, "test", _source(task, "test"))
    logits = predict(model, test_path, regression, choices)
    if choices:
        labels = [chr(ord("A") + i) for i in range(choices)]
    name = {"mnli": "MNLI-m", "sts-b": "STS-B", "sst-2": "SST-2"}.get(task, task.upper())
    tsv = os.path.join(out_dir, f"{name}.tsv")
    jsonl = os.path.join(out_dir, f"{task}_test_predictions.jsonl")
    with open(tsv + ".tmp", "w") as f, open(jsonl + ".tmp", "w") as g:
        f.write("index\tprediction\n")
        for e, row in zip(examples, logits):
            split_prefix = e.guid.split("-", 1)
            index = split_prefix[1] if split_prefix[0] in ("train", "dev", "test") else e.guid
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
    from data_pipeline.classification import data as classifier_data
    from data_pipeline.tokenization import AlbertTokenizer

    task = FLAGS.task_name.lower()
    try:
        if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
            raise ValueError("nothing to do: give --do_train, --do_eval and/or --do_predict")
        albert_config = shared_flags.albert_config_from_flags()
        regression = (FLAGS.regression if task in FILE_TASKS
                      else classifier_data.is_regression(task))
        choices = FLAGS.num_choices if task in CHOICE_TASKS else None
        labels = _labels(task, regression)
        tokenizer = AlbertTokenizer(FLAGS.spm_model_file, FLAGS.do_lower_case)
        cache_dir = os.path.join(FLAGS.output_dir, "cache")
        train_path, train_count = (_features(tokenizer, task, "train", cache_dir, labels)
                                   if FLAGS.do_train else (None, 0))
        dev_splits = ([s for s in classifier_data.splits(task) if s.startswith("dev")]
                      if task not in FILE_TASKS else ["dev"])
        dev = {s: _features(tokenizer, task, s, cache_dir, labels)[0] for s in dev_splits} \
            if (FLAGS.do_eval or FLAGS.do_train) else {}
        test_path = _features(tokenizer, task, "test", cache_dir, labels)[0] \
            if FLAGS.do_predict else None
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    steps, warmup = shared_flags.finetuning_schedule(train_count)
    runs = max(1, FLAGS.num_runs)
    results = []
    for run in range(runs):
        seed = FLAGS.seed + run
        out_dir = FLAGS.output_dir if runs == 1 else os.path.join(FLAGS.output_dir,
                                                                   f"run_{run}")
        try:
            trainer_config = dataclasses.replace(
                shared_flags.trainer_config_from_flags(output_dir=out_dir,
                                                       num_train_steps=steps,
                                                       num_warmup_steps=warmup), seed=seed)
            result = _run_once(task, albert_config, trainer_config, labels, regression,
                               choices, train_path, train_count, dev, test_path, out_dir)
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        results.append(result)
    if runs > 1 and FLAGS.do_eval:
        from data_pipeline.atomic import write_json
        summary = _spread([r["eval"] for r in results])
        write_json(os.path.join(FLAGS.output_dir, "eval_results.json"),
                   {"task": task, "runs": runs, "seeds": [FLAGS.seed + i for i in range(runs)],
                    "summary": summary, "per_run": [r["eval"] for r in results]})
        print("over %d seeds: " % runs + ", ".join(
            f"{k} median {v['median']:.4f} (min {v['min']:.4f}, max {v['max']:.4f})"
            for k, v in summary.items()), flush=True)
    print(json.dumps(results[-1] if runs == 1 else results, default=str))
    return 0


def _is_pair(record_path: str, sample: int = 1000) -> bool:
    """Whether the task's sequences have a second segment (sentence pairs)."""
    import itertools
    import tensorflow as tf
    from data_pipeline.records import read_records
    return any(1 in tf.train.Example.FromString(r).features.feature["segment_ids"]
               .int64_list.value for r in itertools.islice(read_records(record_path), sample))


def _spread(evals: list[dict]) -> dict:
    """Median, min, max and standard deviation of every metric over runs (users cannot
    reproduce single-run numbers: report the spread)."""
    import numpy as np
    return {k: {"median": float(np.median([e[k] for e in evals])),
                "min": float(np.min([e[k] for e in evals])),
                "max": float(np.max([e[k] for e in evals])),
                "std": float(np.std([e[k] for e in evals]))} for k in evals[0]}


def _run_once(task, albert_config, trainer_config, labels, regression, choices, train_path,
              train_count, dev, test_path, out_dir) -> dict:
    from albert_tf.training import ClassificationTask, Trainer, make_strategy
    from data_pipeline.atomic import write_json
    from data_pipeline.classification import metrics
    from data_pipeline.classification.features import classifier_dataset
    strategy = make_strategy(FLAGS.strategy, FLAGS.tpu, FLAGS.num_gpus)
    # Only training reads the train pipeline; otherwise the trainer just builds it (one
    # example per replica), and --train_batch_size need not suit the replicas.
    micro = shared_flags.micro_batch_size(
        FLAGS.train_batch_size, trainer_config.grad_accum_steps,
        strategy.num_replicas_in_sync) if FLAGS.do_train else strategy.num_replicas_in_sync
    os.makedirs(out_dir, exist_ok=True)
    write_json(os.path.join(out_dir, "run_config.json"), {
        "runner": "run_classifier", "flags": FLAGS.flag_values_dict(),
        "albert_config": albert_config.to_dict(),
        "trainer_config": dataclasses.asdict(trainer_config), "labels": labels,
        "train_examples": train_count, "replicas": strategy.num_replicas_in_sync})
    task_obj = ClassificationTask(albert_config,
                                  num_labels=1 if regression else len(labels or [0, 1]),
                                  num_choices=choices, dropout=FLAGS.classifier_dropout)
    task_obj.best_metric = ("corr" if regression else "accuracy") if task in FILE_TASKS \
        else metrics.primary_metric(task)

    def train_fn(ctx):
        return classifier_dataset(train_path or next(iter(dev.values())),
                                  ctx.get_per_replica_batch_size(micro), FLAGS.max_seq_length,
                                  regression=regression, num_choices=choices,
                                  is_training=True, seed=trainer_config.seed,
                                  input_context=ctx)

    trainer = Trainer(task_obj, trainer_config, strategy, train_fn,
                      init_checkpoint=FLAGS.init_checkpoint,
                      evaluate_fn=(lambda model: evaluate_splits(model, task, dev,
                                                                 regression, choices))
                      if dev else None)
    if not FLAGS.do_train:
        trainer.check_trained("--do_eval/--do_predict without --do_train")
    result = {}
    if FLAGS.do_train:
        result = trainer.train()
    if FLAGS.do_eval:
        final = trainer.evaluate()
        best_path = os.path.join(out_dir, "best", "best.json")
        best = None
        if os.path.exists(best_path):
            with open(best_path) as f:
                best = json.load(f)
        write_json(os.path.join(out_dir, "eval_results.json"),
                   {"task": task, "seed": trainer_config.seed, "step": trainer.step,
                    "final": final,
                    "best": best and {k: best[k] for k in ("metric", "value", "step", "eval")}})
        result["eval"] = final
    if FLAGS.do_predict:
        write_predictions(trainer.model, task, test_path, labels, regression, out_dir,
                          choices)
    if FLAGS.export_dir:
        from albert_tf.serving.export import export_trained
        export_dir = (FLAGS.export_dir if out_dir == FLAGS.output_dir else
                      os.path.join(FLAGS.export_dir, os.path.basename(out_dir)))
        version = export_trained(trainer.model, export_dir, {
            "kind": "multiple_choice" if choices else "classifier", "task_name": task,
            "text_pair": bool(choices) or _is_pair(train_path or next(iter(dev.values()))),
            "labels": labels, "regression": bool(regression), "num_choices": choices,
            "max_seq_length": FLAGS.max_seq_length, "do_lower_case": FLAGS.do_lower_case,
            "step": trainer.step}, FLAGS.spm_model_file)
        print(f"SavedModel: {version} (fine-tuned checkpoint in "
              f"{os.path.join(version, 'assets.extra', 'finetuned')})", flush=True)
        result["export_dir"] = version
    return result


if __name__ == "__main__":
    define_flags()
    app.run(lambda argv: sys.exit(main(argv)))
