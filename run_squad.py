"""Fine-tune ALBERT for extractive question answering: SQuAD v1.1 and v2.0 in one runner.

    python run_squad.py --train_file train-v2.0.json --predict_file dev-v2.0.json \\
        --version_2_with_negative --spm_model_file 30k-clean.model \\
        --albert_config_file albert_config.json --init_checkpoint out/encoder \\
        --output_dir out/squad2 --do_train --do_predict --do_eval \\
        --tune_threshold_on heldout-v2.0.json

Features (data_pipeline.squad.features): `[CLS] question [SEP] context window [SEP]`,
`--max_seq_length` 384, `--doc_stride` 128, `--max_query_length` 64, answers mapped to
tokens at the character level through ALBERT's normalization; cached as TFRecords in
OUTPUT_DIR/cache. Training and prediction batches are grouped by length and padded to
their bucket (`--length_buckets`; `--pad_to_max_seq_length` or `--strategy tpu`: all of
max_seq_length). Head (`--squad_head`): v2.0 defaults to the official ALBERT head (a beam
of start × end log-probabilities plus an answer-class logit that decides "no answer",
`--start_n_top`/`--end_n_top`); v1.1 to start/end logits (`bert`, which for v2.0 scores
"no answer" with the [CLS] logits; data_pipeline.squad.postprocess). Outputs: predictions.json,
nbest_predictions.json, and for v2.0 null_odds.json. `--do_eval` scores the predictions
exactly as the official evaluation script of the version (data_pipeline.squad.evaluation) into
eval_results.json; for v2.0 at `--null_score_diff_threshold`, and at a threshold tuned on
`--tune_threshold_on` (a separate file) — never tuned silently on the evaluated set.
A v2.0 file (a question marked `is_impossible`, or one to train or score without answers)
without --version_2_with_negative is an error; a v1.1 file in v2.0 mode is fine.
Chinese span QA (CMRC 2018): `--vocab_file vocab.txt --eval_metric cmrc2018` (answers
located through BERT's basic tokenizer, data_pipeline.squad.wordpiece_offsets; the CMRC
2018 script's EM and F1, data_pipeline.squad.cmrc_evaluation; README "Chinese").
`--recipe paper` sets the ALBERT paper's hyper-parameters for the version
(albert_tf.training.recipes) on every flag not given, and prints each with its source.
"""

from __future__ import annotations

import json
import os

from absl import flags

from albert_tf.runners import finetuning_flags as ff
from albert_tf.runners import squad_flags as sf
from albert_tf.runners.recipe_flags import apply_recipe
from albert_tf.runners.run_setup import run_entry, run_main
from albert_tf.runners.squad_flags import define_squad_flags as define_flags

FLAGS = flags.FLAGS


def main(argv):
    from absl import logging

    logging.set_verbosity(logging.WARNING)
    return run_main(_main, argv)


def _predict(model, features, threshold, strategy):
    """(predictions, nbest, null_odds) of `features` with the flags' settings."""
    from albert_tf.runners.predictions import squad_answers

    return squad_answers(
        model, features, threshold, strategy, batch_size=FLAGS.predict_batch_size,
        length_buckets=ff.length_buckets_from_flags(),
        beam=sf.squad_head_from_flags() == "albert", n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length,
        version_2_with_negative=FLAGS.version_2_with_negative,
    )  # fmt: skip


def _main() -> int:
    from albert_tf.runners.export_flags import export_trained_from_flags
    from albert_tf.runners.lora_flags import exported_model, lora_task
    from albert_tf.runners.squad_inputs import squad_sets_from_flags
    from albert_tf.runners.trainer_flags import setup_run_from_flags, trainer_config_from_flags
    from albert_tf.training import SquadTask, SquadV2Task, Trainer
    from data_pipeline.io.atomic import write_json
    from data_pipeline.squad import scoring
    from data_pipeline.squad.postprocess import write_predictions

    v2 = FLAGS.version_2_with_negative
    version = "2.0" if v2 else "1.1"
    # --recipe: sets what the user did not give, first. The head's dropout is no flag.
    head = sf.squad_head_from_flags()
    apply_recipe(f"squad_v{version}", {"classifier_dropout": sf.HEAD_DROPOUT[head]})
    # Everything is checked before the first write (the feature cache in OUTPUT_DIR/cache).
    inputs = ff.finetuning_inputs_from_flags(sf.check_squad_flags)
    identity = ff.checked_identity(
        "run_squad", f"squad v{version}, {head} head", inputs, None, FLAGS.train_file,
        max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length,
    )  # fmt: skip
    train, predict_set, tune_set = squad_sets_from_flags(inputs.tokenizer)
    steps, warmup = ff.finetuning_schedule(train.count if train else 0)
    trainer_config = trainer_config_from_flags(num_train_steps=steps, num_warmup_steps=warmup)
    recorded = dict(version=version, squad_head=head, train_features=train.count if train else 0)
    buckets = ff.length_buckets_from_flags()
    albert_config = inputs.albert_config
    run = setup_run_from_flags(
        "run_squad", trainer_config, albert_config, FLAGS.do_train, buckets, identity, **recorded
    )

    def train_fn(ctx):  # (without --do_train the trainer only builds the model)
        batch = ctx.get_per_replica_batch_size(run.micro_batch)
        return (train or predict_set).dataset(
            batch, is_training=True, seed=trainer_config.seed, input_context=ctx,
            length_buckets=buckets,
        )  # fmt: skip

    def evaluate_fn(model):
        predictions = _predict(model, predict_set, FLAGS.null_score_diff_threshold, run.strategy)[0]
        dataset = scoring.read_dataset(FLAGS.predict_file)
        return scoring.score(dataset, predictions, version, FLAGS.eval_metric)

    if head == "albert":
        task = SquadV2Task(albert_config, FLAGS.start_n_top, FLAGS.end_n_top)
    else:
        task = SquadTask(albert_config)
    task = lora_task(task, trainer_config.seed)  # --lora_rank
    trainer = Trainer(
        task, trainer_config, run.strategy, train_fn, init_checkpoint=FLAGS.init_checkpoint,
        evaluate_fn=evaluate_fn if predict_set and FLAGS.do_eval else None,
    )  # fmt: skip
    if not FLAGS.do_train:
        trainer.check_trained("--do_predict/--do_eval without --do_train")
    else:
        trainer.train()
    threshold = FLAGS.null_score_diff_threshold
    if predict_set:  # (written before they are scored)
        predictions, nbest, null_odds = _predict(
            trainer.model, predict_set, threshold, run.strategy
        )
        path = write_predictions(run.output_dir, predictions, nbest, null_odds if v2 else None)
        print(f"predictions: {path}", flush=True)
    if predict_set and FLAGS.do_eval:
        # (held-out file, its nbest, its null_odds) to tune the v2.0 threshold on
        tune_on = None
        if tune_set is not None:
            tuned = _predict(trainer.model, tune_set, threshold, run.strategy)
            tune_on = (tune_set.source, *tuned[1:])
        scores = scoring.evaluation_report(
            FLAGS.predict_file, predictions, nbest, null_odds, v2, threshold, tune_on,
            FLAGS.eval_metric,
        )  # fmt: skip
        report = {"predict_file": FLAGS.predict_file, "version": version, "step": trainer.step}
        report["metric"] = FLAGS.eval_metric
        report.update(scores)
        threshold = report.get("tuned_threshold", {}).get("threshold", threshold)
        write_json(os.path.join(run.output_dir, "eval_results.json"), report)
        print(json.dumps(report), flush=True)
    if FLAGS.export_dir:  # (v2.0: with the tuned threshold when there is one)
        from albert_tf.checkpoints.task_info import TaskInfo

        serving = TaskInfo.build(
            "squad", version_2_with_negative=v2, do_lower_case=FLAGS.do_lower_case,
            max_seq_length=(train or predict_set).max_seq_length, doc_stride=FLAGS.doc_stride,
            max_query_length=FLAGS.max_query_length, max_answer_length=FLAGS.max_answer_length,
            n_best_size=FLAGS.n_best_size, null_score_diff_threshold=threshold, squad_head=head,
            start_n_top=FLAGS.start_n_top, end_n_top=FLAGS.end_n_top, step=trainer.step,
        )  # fmt: skip
        model = exported_model(task, trainer.model)  # LoRA: merged into the kernels
        export_trained_from_flags(model, FLAGS.export_dir, serving, inputs.tokenizer_spec)
    return 0


def entry():
    """The console script `albert-squad`: `python run_squad.py`."""
    run_entry(__doc__, define_flags, main)


if __name__ == "__main__":
    entry()
