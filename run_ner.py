"""Fine-tune ALBERT for token classification (named entities, any tag scheme).

    python run_ner.py --data_dir ner/conll2003 --output_dir out/ner \\
        --spm_model_file 30k-clean.model --albert_config_file albert_config.json \\
        --init_checkpoint out/encoder --do_train --do_eval --do_predict \\
        --max_seq_length 128 --train_batch_size 32 --learning_rate 5e-5 --num_train_epochs 3

Files (data_pipeline.tagging.data): CoNLL columns (token first, tag last, blank line between
sentences, -DOCSTART- skipped), one character a line (Chinese), or JSON lines with `tokens`
and `tags`; DATA_DIR/{train,dev,test}.txt (or .jsonl) unless --train_file/--dev_file/
--test_file. The label list is discovered from the training file; a tag outside it in the
dev or test file is a one-line error naming file:line. Each word is tokenized alone, its
label on its first piece; a sentence longer than --max_seq_length is cut into windows
every --doc_stride pieces, each word predicted from the window where it has most context
(cached as TFRecords in OUTPUT_DIR/cache). Loss: the mean cross-entropy over the words'
first pieces. Evaluation: entity precision/recall/F1 (micro, macro, per type) as seqeval
computes them, read with --tag_scheme (auto: detected from the labels), and token
accuracy; every --eval_every steps and at the end, the best checkpoint by micro F1;
eval_results.json (with --num_runs: over seeds). --do_predict writes
OUTPUT_DIR/predictions.conll (`token gold predicted`, conlleval's input). --export_dir
writes a SavedModel that tags raw text (albert_tf.serving.export), versioned. No ALBERT
source publishes NER hyper-parameters, so --recipe is refused.
"""

from __future__ import annotations

import json
import os

from absl import flags

from albert_tf.runners import finetuning_flags as ff
from albert_tf.runners import ner_flags as nf
from albert_tf.runners.ner_flags import define_ner_flags as define_flags
from albert_tf.runners.run_setup import run_entry, run_main

FLAGS = flags.FLAGS


def main(argv):
    return run_main(_main, argv)


def _main() -> int:
    from absl import logging

    from albert_tf.runners.trainer_flags import trainer_config_from_flags
    from data_pipeline.classification.metrics import seeds_report
    from data_pipeline.io.atomic import write_json
    from data_pipeline.tagging.data import check_labels, discover_labels, read_tagged
    from data_pipeline.tagging.features import tagging_features

    logging.set_verbosity(logging.WARNING)
    nf.check_recipe(FLAGS.recipe)
    # Everything is checked before the first write (the feature cache in OUTPUT_DIR/cache).
    inputs = ff.finetuning_inputs_from_flags(nf.check_ner_flags)
    files = {s: nf.ner_file(s) for s in ("train", "dev", "test")}
    wanted = ["train"] * FLAGS.do_train + ["dev"] * FLAGS.do_eval + ["test"] * FLAGS.do_predict
    sentences = {"train": read_tagged(files["train"])}
    labels = discover_labels(sentences["train"], files["train"])
    for split in [s for s in wanted if s != "train"]:
        sentences[split] = read_tagged(files[split])
        check_labels(sentences[split], labels, files[split])
    scheme = nf.resolve_tag_scheme(FLAGS.tag_scheme, labels)
    weights = nf.class_weights_from_flags(labels, sentences["train"])  # --class_weights
    identity = ff.checked_identity(
        "run_ner", "ner", inputs, labels, files["train"], max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride,
    )  # fmt: skip
    cache = os.path.join(FLAGS.output_dir, "cache")
    features = {}
    for split in wanted:
        features[split] = tagging_features(
            files[split], split, inputs.tokenizer, cache, labels, FLAGS.max_seq_length,
            FLAGS.doc_stride,
        )  # fmt: skip
        print(features[split].describe(), flush=True)
    train = features.get("train")
    steps, warmup = ff.finetuning_schedule(train.count if train else 0)
    seeds = [FLAGS.seed + i for i in range(FLAGS.num_runs)]
    results = []
    for i, seed in enumerate(seeds):  # one output directory per seed with --num_runs
        output_dir = (
            FLAGS.output_dir if len(seeds) == 1 else os.path.join(FLAGS.output_dir, f"run_{i}")
        )
        trainer_config = trainer_config_from_flags(
            output_dir=output_dir, num_train_steps=steps, num_warmup_steps=warmup, seed=seed
        )
        results.append(
            _run_once(
                inputs, trainer_config, identity, labels, scheme, sentences, features, weights
            )
        )
    if len(seeds) > 1 and FLAGS.do_eval:
        report, line = seeds_report("ner", seeds, [r["eval"] for r in results])
        write_json(os.path.join(FLAGS.output_dir, "eval_results.json"), report)
        print(line, flush=True)
    print(json.dumps(results[-1] if len(seeds) == 1 else results, default=str))
    return 0


def _run_once(
    inputs, trainer_config, identity, labels, scheme, sentences, features, weights
) -> dict:
    """One fine-tuning run (one seed, into trainer_config.output_dir) with the tag
    `weights` (None: unweighted); what it did."""
    from albert_tf.runners.lora_flags import exported_model, lora_task
    from albert_tf.runners.ner_predictions import ner_scores, predicted_tags
    from albert_tf.runners.trainer_flags import setup_run_from_flags
    from albert_tf.training import Trainer
    from albert_tf.training.token_classification import TokenClassificationTask
    from data_pipeline.io.atomic import write_json
    from data_pipeline.tagging.predictions import write_conll

    albert_config, buckets = inputs.albert_config, ff.length_buckets_from_flags()
    train, dev, test = (features.get(s) for s in ("train", "dev", "test"))
    run = setup_run_from_flags(
        "run_ner", trainer_config, albert_config, FLAGS.do_train, buckets, identity,
        labels=labels, tag_scheme=scheme, train_features=train.count if train else 0,
        class_weights=list(weights) if weights else None,
    )  # fmt: skip
    task = TokenClassificationTask(
        albert_config, len(labels), FLAGS.classifier_dropout, class_weights=weights
    )
    task = lora_task(task, trainer_config.seed)  # --lora_rank
    source = train or dev or test  # without --do_train the trainer only builds its pipeline

    def train_fn(ctx):
        batch = ctx.get_per_replica_batch_size(run.micro_batch)
        return source.dataset(
            batch, is_training=True, seed=trainer_config.seed, input_context=ctx,
            length_buckets=buckets,
        )  # fmt: skip

    def tags(model, split):
        return predicted_tags(
            model, features[split], sentences[split], labels, FLAGS.eval_batch_size, buckets,
            run.strategy,
        )  # fmt: skip

    per_type = {}  # of the last evaluation

    def evaluate(model):
        flat, per_type["dev"] = ner_scores(sentences["dev"], tags(model, "dev"), scheme)
        return flat

    trainer = Trainer(
        task, trainer_config, run.strategy, train_fn, init_checkpoint=FLAGS.init_checkpoint,
        evaluate_fn=evaluate if dev else None,
    )  # fmt: skip
    if not FLAGS.do_train:
        trainer.check_trained("--do_eval/--do_predict without --do_train")
    result = trainer.train() if FLAGS.do_train else {}
    if FLAGS.do_eval:
        result["eval"] = result.get("eval") or trainer.evaluate()  # (train() evaluates last)
        report = {"task": "ner", "tag_scheme": scheme, "labels": labels}
        report.update(seed=trainer_config.seed, step=trainer.step, final=result["eval"])
        report.update(per_type=per_type["dev"], best=trainer.best_record())
        write_json(os.path.join(run.output_dir, "eval_results.json"), report)
    if FLAGS.do_predict:
        path = os.path.join(run.output_dir, "predictions.conll")
        write_conll(path, sentences["test"], tags(trainer.model, "test"))
        print(f"predictions: {path}", flush=True)
    if FLAGS.export_dir:
        model = exported_model(task, trainer.model)  # LoRA: merged into the kernels
        result["exported"] = _export(
            model, trainer.step, inputs, labels, scheme, trainer_config.output_dir
        )
    return result


def _export(model, step, inputs, labels, scheme, output_dir) -> list[str]:
    """--export_dir (with --num_runs: EXPORT_DIR/run_i/N): the SavedModel / LiteRT files of
    the trained `model` (at `step`) with its task.json (kind token_classifier)."""
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.runners.export_flags import export_trained_from_flags

    export_dir = FLAGS.export_dir
    if output_dir != FLAGS.output_dir:
        export_dir = os.path.join(export_dir, os.path.basename(output_dir))
    info = TaskInfo.build(
        kind=nf.KIND, task_name="ner", labels=list(labels), max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride, do_lower_case=FLAGS.do_lower_case, scheme=scheme,
        step=step,
    )  # fmt: skip
    return export_trained_from_flags(model, export_dir, info, inputs.tokenizer_spec)


def entry():
    """The console script `albert-ner`: `python run_ner.py`."""
    run_entry(__doc__, define_flags, main)


if __name__ == "__main__":
    entry()
