"""Pretrain ALBERT (MLM + SOP) on the TFRecords of data_pipeline.pretraining.create_pretraining_data.

    python run_pretraining.py --input_file 'data/pretrain/*.tfrecord' --output_dir out/run \\
        --albert_config_file albert_config.json --train_batch_size 4096 \\
        --num_train_steps 125000 --num_warmup_steps 3125 --learning_rate 0.00176 \\
        [--strategy tpu --tpu NAME] [--dtype bfloat16] [--jit_compile] [--flagfile F]

A thin runner: flags → frozen configs (written to OUTPUT_DIR/run_config.json) → the trainer
of albert_tf/training.py. Re-running the same command resumes from the last checkpoint.
Exit status 143 after a SIGTERM (preemption) checkpoint.
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
    shared_flags.define_trainer_flags(learning_rate=0.00176, optimizer="lamb",
                                      num_train_steps=125000, num_warmup_steps=3125,
                                      steps_per_loop=1000, save_checkpoints_steps=5000)
    flags.DEFINE_string("input_file", None, "Training TFRecords: comma-separated globs.")
    flags.DEFINE_string("eval_input_file", None, "Evaluation TFRecords (held-out documents).")
    flags.DEFINE_integer("max_seq_length", 512, "As the records were written.")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "As the records were written.")
    flags.DEFINE_integer("train_batch_size", 4096, "Global batch size of one update.")
    flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation batch size.")
    flags.DEFINE_bool("dynamic_masking", False,
                      "Records written with --dynamic_masking: draw masks each epoch.")
    flags.DEFINE_string("spm_model_file", None,
                        "SentencePiece model (needed for --dynamic_masking and --export_dir).")
    flags.DEFINE_string("export_dir", None, "When done, export the encoder as a SavedModel "
                        "that embeds raw text (albert_tf.serving.export: embed, encode, tokenize) "
                        "as EXPORT_DIR/N.")
    flags.DEFINE_bool("do_lower_case", True, "--export_dir: the casing of the vocabulary.")
    flags.mark_flags_as_required(["input_file", "output_dir"])


def _meta_data(files):
    """meta_data.json beside the first record file, if any."""
    path = os.path.join(os.path.dirname(files[0]), "meta_data.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return None


def check_records(files, max_seq_length, max_predictions_per_seq, dynamic):
    """The first record of every file has the flagged lengths (a clear error naming the
    file instead of a parse error deep in tf.data)."""
    import tensorflow as tf
    from data_pipeline.records import read_records
    for path in files:
        try:
            first = next(read_records(path), None)
        except ValueError as e:
            raise ValueError(str(e)) from None
        if first is None:
            continue
        feature = tf.train.Example.FromString(first).features.feature
        wanted = {"input_ids": max_seq_length}
        if not dynamic:
            wanted["masked_lm_positions"] = max_predictions_per_seq
        for name, length in wanted.items():
            if name not in feature:
                raise ValueError(f"{path}: records have no {name!r} feature"
                                 + (" (written with --dynamic_masking? then pass it here)"
                                    if name.startswith("masked_lm") else ""))
            got = len(feature[name].int64_list.value)
            if got != length:
                flag = "max_seq_length" if name == "input_ids" else "max_predictions_per_seq"
                raise ValueError(f"{path}: {name} has length {got}, but --{flag}={length}")


def find_corrupt(files):
    """After a DataLossError: the file and record that fail their CRC."""
    from data_pipeline.records import read_records
    for path in files:
        try:
            for _ in read_records(path):
                pass
        except ValueError as e:
            return str(e)
    return None


def main(argv):
    del argv
    from absl import logging
    logging.set_verbosity(logging.WARNING)  # TF's INFO lines would drown the progress
    import tensorflow as tf
    from albert_tf.training import (PretrainingTask, Preempted, Trainer, make_strategy,
                                    task_output_dir)
    from data_pipeline.atomic import write_json
    from data_pipeline.documents import expand_input_files
    from data_pipeline.pretraining.input_pipeline import pretraining_dataset

    try:
        albert_config = shared_flags.albert_config_from_flags()
        trainer_config = shared_flags.trainer_config_from_flags()
        files = expand_input_files(FLAGS.input_file)
        eval_files = expand_input_files(FLAGS.eval_input_file) if FLAGS.eval_input_file \
            else None
        check_records(files + (eval_files or []), FLAGS.max_seq_length,
                      FLAGS.max_predictions_per_seq, FLAGS.dynamic_masking)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    meta = _meta_data(files)
    sop_weight = 0.0 if meta and meta.get("sentence_order") == "none" else 1.0
    masker = None
    if FLAGS.export_dir and not FLAGS.spm_model_file:
        print("error: --export_dir needs --spm_model_file", file=sys.stderr)
        return 1
    if FLAGS.dynamic_masking:
        if not FLAGS.spm_model_file:
            print("error: --dynamic_masking needs --spm_model_file", file=sys.stderr)
            return 1
        from data_pipeline.pretraining.masking import NgramMasker
        from data_pipeline.tokenization import AlbertTokenizer
        settings = (meta or {}).get("settings", {})
        options = {k: settings[k] for k in ("masked_lm_prob", "ngram", "favor_shorter_ngram",
                                            "do_whole_word_mask") if k in settings}
        tokenizer = AlbertTokenizer(FLAGS.spm_model_file)
        masker = NgramMasker.from_tokenizer(
            tokenizer, max_predictions_per_seq=FLAGS.max_predictions_per_seq, **options)

    strategy = make_strategy(FLAGS.strategy, FLAGS.tpu, FLAGS.num_gpus)
    replicas = strategy.num_replicas_in_sync
    try:
        micro = shared_flags.micro_batch_size(FLAGS.train_batch_size,
                                              trainer_config.grad_accum_steps, replicas)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    def dataset_fn(patterns, global_batch, training):
        def fn(ctx):
            return pretraining_dataset(
                patterns, ctx.get_per_replica_batch_size(global_batch), FLAGS.max_seq_length,
                FLAGS.max_predictions_per_seq, is_training=training, input_context=ctx,
                seed=FLAGS.seed, dynamic_masker=masker,
                special_ids=(tokenizer.cls_id, tokenizer.sep_id) if masker else (2, 3))
        return fn

    out_dir = task_output_dir(strategy, trainer_config.output_dir)  # non-chief: its own
    os.makedirs(out_dir, exist_ok=True)
    write_json(os.path.join(out_dir, "run_config.json"), {
        "runner": "run_pretraining", "flags": FLAGS.flag_values_dict(),
        "albert_config": albert_config.to_dict(),
        "trainer_config": dataclasses.asdict(trainer_config), "replicas": replicas,
        "input_files": files, "data_meta": {k: meta[k] for k in (
            "instances", "sentence_order", "dynamic_masking", "spm_sha256") if k in meta}
        if meta else None, "sop_weight": sop_weight})
    task = PretrainingTask(albert_config, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
                           sop_weight)
    try:
        trainer = Trainer(task, trainer_config, strategy,
                          dataset_fn(files, micro, True),
                          dataset_fn(eval_files, FLAGS.eval_batch_size, False)
                          if eval_files else None,
                          init_checkpoint=FLAGS.init_checkpoint)
        result = trainer.train()
    except Preempted as e:
        print(str(e), file=sys.stderr)
        return 143
    except tf.errors.DataLossError:
        where = find_corrupt(files + (eval_files or []))
        print(f"error: corrupt input record: {where or 'see the TensorFlow error above'}",
              file=sys.stderr)
        return 1
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    write_json(os.path.join(out_dir, "final_metrics.json"), result)
    print(json.dumps(result))
    if FLAGS.export_dir and out_dir == trainer_config.output_dir:  # the chief exports
        from albert_tf.serving.export import export
        version = export("encoder", os.path.join(out_dir, "checkpoints"), FLAGS.export_dir,
                         albert_config=albert_config, spm_model_file=FLAGS.spm_model_file,
                         max_seq_length=FLAGS.max_seq_length,
                         do_lower_case=FLAGS.do_lower_case)
        print(f"SavedModel: {version}", flush=True)
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(lambda argv: sys.exit(main(argv)))
