"""Fine-tune ALBERT for extractive question answering: SQuAD v1.1 and v2.0 in one runner.

    python run_squad.py --train_file train-v2.0.json --predict_file dev-v2.0.json \\
        --version_2_with_negative --spm_model_file 30k-clean.model \\
        --albert_config_file albert_config.json --init_checkpoint out/encoder \\
        --output_dir out/squad2 --do_train --do_predict --do_eval \\
        --tune_threshold_on heldout-v2.0.json

Features (data_pipeline.squad.data): `[CLS] question [SEP] context window [SEP]`,
`--max_seq_length` 384, `--doc_stride` 128, `--max_query_length` 64, answers mapped to
tokens at the character level through ALBERT's normalization; cached as TFRecords in
OUTPUT_DIR/cache. Head: start/end logits; v2.0 scores "no answer" BERT-style with the
[CLS] logits (data_pipeline.squad.postprocess). Outputs: predictions.json,
nbest_predictions.json, and for v2.0 null_odds.json. `--do_eval` scores the predictions
exactly as the official evaluation script of the version (data_pipeline.squad.evaluation) into
eval_results.json; for v2.0 at `--null_score_diff_threshold`, and at a threshold tuned on
`--tune_threshold_on` (a separate file) — never tuned silently on the evaluated set.
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
        learning_rate=5e-5, max_seq_length=384, num_train_epochs=2.0,
        export_help="When done, export a SavedModel that answers questions from raw text "
        "as EXPORT_DIR/N (albert_tf.serving.export; v2.0 with the tuned threshold when "
        "--tune_threshold_on is given).")
    flags.DEFINE_string("train_file", None, "SQuAD-format JSON to train on.")
    flags.DEFINE_string("predict_file", None, "SQuAD-format JSON to predict (and score).")
    flags.DEFINE_bool("do_train", False, "Fine-tune on --train_file.")
    flags.DEFINE_bool("do_predict", False, "Write predictions for --predict_file.")
    flags.DEFINE_bool("do_eval", False, "Score the predictions of --predict_file (EM, F1).")
    flags.DEFINE_bool("version_2_with_negative", False, "SQuAD v2.0: unanswerable questions.")
    flags.DEFINE_integer("doc_stride", 128, "Context tokens between window starts.")
    flags.DEFINE_integer("max_query_length", 64, "Question tokens kept.")
    flags.DEFINE_integer("predict_batch_size", 32, "Prediction batch size.")
    flags.DEFINE_integer("n_best_size", 20, "Start and end candidates per window.")
    flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in tokens.")
    flags.DEFINE_float("null_score_diff_threshold", 0.0,
                       "v2.0: predict no answer when null score - best span score > this.")
    flags.DEFINE_string("tune_threshold_on", None,
                        "v2.0: a separate SQuAD v2.0 file; the threshold maximizing F1 on "
                        "it is reported and applied to --predict_file as well.")
    flags.mark_flags_as_required(["output_dir", "spm_model_file"])


def _features(tokenizer, path, cache_dir, is_training):
    from data_pipeline.records import cached_features, fingerprint
    from data_pipeline.squad.data import convert_squad_examples, read_squad
    if not os.path.exists(path):
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    key = fingerprint(path, tokenizer, kind="squad", is_training=is_training,
                      max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
                      max_query_length=FLAGS.max_query_length)
    examples = read_squad(path)
    info = {}
    name = os.path.splitext(os.path.basename(path))[0] + ("-train" if is_training else "")
    record_path, count, reused = cached_features(
        os.path.join(cache_dir, name), key,
        lambda: convert_squad_examples(examples, tokenizer, FLAGS.max_seq_length,
                                       FLAGS.doc_stride, FLAGS.max_query_length,
                                       is_training, info), info)
    print(f"{path}: {len(examples):,} questions -> {count:,} features "
          f"({'cached' if reused else 'converted'}: {record_path}); "
          + ", ".join(f"{k} {v:,}" for k, v in sorted(info.items())
                      if k not in ("features", "examples")), flush=True)
    return examples, record_path, count


def predict(model, examples, record_path, version_2, threshold):
    """(predictions, nbest, null_odds) for the features in `record_path`."""
    import numpy as np
    import tensorflow as tf
    from data_pipeline.squad.data import squad_dataset
    from data_pipeline.squad.postprocess import postprocess
    forward = getattr(model, "_albert_predict", None)
    if forward is None:
        forward = tf.function(lambda b: model(b, training=False), reduce_retracing=True)
        model._albert_predict = forward
    keys = ("input_ids", "input_mask", "segment_ids", "qa_index", "context_mask",
            "max_context", "token_start_char", "token_end_char")
    starts, ends, meta = [], [], {k: [] for k in keys[3:]}
    for batch in squad_dataset(record_path, FLAGS.predict_batch_size, FLAGS.max_seq_length,
                               drop_remainder=False, keys=keys):
        out = forward({k: batch[k] for k in keys[:3]})
        starts.append(out["start_logits"].numpy())
        ends.append(out["end_logits"].numpy())
        for k in meta:
            meta[k].append(batch[k].numpy())
    features = {k: np.concatenate(v) for k, v in meta.items()}
    return postprocess(examples, features, np.concatenate(starts), np.concatenate(ends),
                       FLAGS.n_best_size, FLAGS.max_answer_length, version_2, threshold)


def score(model, examples, record_path, data_path, version_2, threshold):
    """Official-definition scores of `data_path` at `threshold` (+ the raw outputs)."""
    from data_pipeline.squad import evaluation as squad_eval
    predictions, nbest, null_odds = predict(model, examples, record_path, version_2,
                                            threshold)
    with open(data_path, encoding="utf-8") as f:
        dataset = json.load(f)
    result = squad_eval.evaluate(dataset, predictions,
                                 version="2.0" if version_2 else "1.1")
    return result, (predictions, nbest, null_odds, dataset)


def _write(out_dir, name, obj):
    from data_pipeline.atomic import write_json
    write_json(os.path.join(out_dir, name), obj)


def main(argv):
    del argv
    from absl import logging
    logging.set_verbosity(logging.WARNING)
    from data_pipeline.tokenization import AlbertTokenizer
    v2 = FLAGS.version_2_with_negative
    try:
        if not (FLAGS.do_train or FLAGS.do_predict or FLAGS.do_eval):
            raise ValueError("nothing to do: give --do_train, --do_predict and/or --do_eval")
        if FLAGS.do_train and not FLAGS.train_file:
            raise ValueError("--do_train needs --train_file")
        if (FLAGS.do_predict or FLAGS.do_eval) and not FLAGS.predict_file:
            raise ValueError("--do_predict/--do_eval need --predict_file")
        if FLAGS.tune_threshold_on and not v2:
            raise ValueError("--tune_threshold_on is for SQuAD v2.0 "
                             "(--version_2_with_negative)")
        albert_config = shared_flags.albert_config_from_flags()
        tokenizer = AlbertTokenizer(FLAGS.spm_model_file, FLAGS.do_lower_case)
        cache_dir = os.path.join(FLAGS.output_dir, "cache")
        train_path, train_count = None, 0
        if FLAGS.do_train:
            _, train_path, train_count = _features(tokenizer, FLAGS.train_file, cache_dir,
                                                   True)
        predict_set = (_features(tokenizer, FLAGS.predict_file, cache_dir, False)
                       if FLAGS.predict_file and (FLAGS.do_predict or FLAGS.do_eval)
                       else None)
        tune_set = (_features(tokenizer, FLAGS.tune_threshold_on, cache_dir, False)
                    if FLAGS.tune_threshold_on else None)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    from albert_tf.training import SquadTask, Trainer, make_strategy
    from data_pipeline.atomic import write_json
    from data_pipeline.squad.data import squad_dataset
    steps, warmup = shared_flags.finetuning_schedule(train_count)
    trainer_config = shared_flags.trainer_config_from_flags(
        output_dir=FLAGS.output_dir, num_train_steps=steps, num_warmup_steps=warmup)
    strategy = make_strategy(FLAGS.strategy, FLAGS.tpu, FLAGS.num_gpus)
    # Only training reads the train pipeline; otherwise the trainer just builds it (one
    # example per replica), and --train_batch_size need not suit the replicas.
    try:
        micro = shared_flags.micro_batch_size(
            FLAGS.train_batch_size, trainer_config.grad_accum_steps,
            strategy.num_replicas_in_sync) if FLAGS.do_train else strategy.num_replicas_in_sync
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    write_json(os.path.join(FLAGS.output_dir, "run_config.json"), {
        "runner": "run_squad", "flags": FLAGS.flag_values_dict(),
        "albert_config": albert_config.to_dict(), "version": "2.0" if v2 else "1.1",
        "trainer_config": dataclasses.asdict(trainer_config), "train_features": train_count,
        "replicas": strategy.num_replicas_in_sync})

    def train_fn(ctx):  # (without --do_train the trainer only builds the model)
        return squad_dataset(train_path or predict_set[1],
                             ctx.get_per_replica_batch_size(micro),
                             FLAGS.max_seq_length, is_training=True,
                             seed=trainer_config.seed, input_context=ctx)

    def evaluate_fn(model):
        examples, record_path, _ = predict_set
        return score(model, examples, record_path, FLAGS.predict_file, v2,
                     FLAGS.null_score_diff_threshold)[0]

    try:
        trainer = Trainer(SquadTask(albert_config), trainer_config, strategy,
                          train_fn, init_checkpoint=FLAGS.init_checkpoint,
                          evaluate_fn=evaluate_fn if predict_set and FLAGS.do_eval else None)
        if not FLAGS.do_train:
            trainer.check_trained("--do_predict/--do_eval without --do_train")
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if FLAGS.do_train:
        trainer.train()
    threshold = FLAGS.null_score_diff_threshold
    if predict_set is None:
        return _export(trainer, tokenizer, threshold)
    examples, record_path, _ = predict_set
    result, (predictions, nbest, null_odds, dataset) = score(
        trainer.model, examples, record_path, FLAGS.predict_file, v2,
        FLAGS.null_score_diff_threshold)
    _write(FLAGS.output_dir, "predictions.json", predictions)
    _write(FLAGS.output_dir, "nbest_predictions.json", nbest)
    if v2:
        _write(FLAGS.output_dir, "null_odds.json", null_odds)
    print(f"predictions: {os.path.join(FLAGS.output_dir, 'predictions.json')}", flush=True)
    if not FLAGS.do_eval:
        return _export(trainer, tokenizer, threshold)
    report = {"predict_file": FLAGS.predict_file, "version": "2.0" if v2 else "1.1",
              "step": trainer.step}
    if not v2:
        report["scores"] = result
    else:
        report["at_threshold"] = {"threshold": FLAGS.null_score_diff_threshold, **result}
        report["scores"] = result
        if tune_set:
            from data_pipeline.squad import evaluation as squad_eval
            from data_pipeline.squad.postprocess import predictions_at_threshold
            t_examples, t_path, _ = tune_set
            _, (_, t_nbest, t_odds, t_data) = score(trainer.model, t_examples, t_path,
                                                    FLAGS.tune_threshold_on, True,
                                                    FLAGS.null_score_diff_threshold)
            best = squad_eval.best_threshold(
                t_data, predictions_at_threshold(t_nbest, t_odds, float("inf")), t_odds)
            threshold = best["best_f1_thresh"]  # (the export uses it)
            nothing = squad_eval.evaluate(t_data, {q: "" for q in t_odds}, version="2.0")
            if best["best_f1"] <= nothing["f1"]:
                # Answering nothing was best. The official search then returns 0.0, which
                # means "answer nothing" for probabilities in [0, 1] but not for null
                # odds (which can be negative): stay below every odds seen instead.
                threshold = min(t_odds.values()) - 1.0
            tuned = squad_eval.evaluate(
                dataset, predictions_at_threshold(nbest, null_odds, threshold),
                version="2.0")
            report["tuned_threshold"] = {"tuned_on": FLAGS.tune_threshold_on,
                                         "threshold": threshold,
                                         "tuning_set_f1": best["best_f1"], **tuned}
        # What the official ALBERT reported: the best threshold on the evaluated set itself.
        # Optimistic by construction; kept apart and labelled as such.
        oracle = squad_eval.best_threshold(
            dataset, predictions_at_threshold(nbest, null_odds, float("inf")), null_odds)
        report["oracle_threshold_on_this_set"] = oracle
    _write(FLAGS.output_dir, "eval_results.json", report)
    print(json.dumps(report), flush=True)
    return _export(trainer, tokenizer, threshold)


def _export(trainer, tokenizer, threshold) -> int:
    if not FLAGS.export_dir:
        return 0
    from albert_tf.serving.export import export_trained
    version = export_trained(trainer.model, FLAGS.export_dir, {
        "kind": "squad", "version_2_with_negative": FLAGS.version_2_with_negative,
        "max_seq_length": FLAGS.max_seq_length, "doc_stride": FLAGS.doc_stride,
        "max_query_length": FLAGS.max_query_length, "do_lower_case": FLAGS.do_lower_case,
        "max_answer_length": FLAGS.max_answer_length, "n_best_size": FLAGS.n_best_size,
        "null_score_diff_threshold": threshold, "step": trainer.step},
        FLAGS.spm_model_file)
    print(f"SavedModel: {version}", flush=True)
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(lambda argv: sys.exit(main(argv)))
