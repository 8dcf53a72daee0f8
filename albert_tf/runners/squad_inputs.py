"""What run_squad.py trains, predicts and tunes on: the SQuAD files of its flags read once
(checked against --version_2_with_negative) and turned into cached windowed features
(data_pipeline.squad.feature_records; OUTPUT_DIR/cache)."""

from __future__ import annotations

import os
from typing import NamedTuple

from absl import flags

FLAGS = flags.FLAGS


class SquadSets(NamedTuple):
    """The SquadFeatures of --train_file (with --do_train), --predict_file (with
    --do_predict or --do_eval) and --tune_threshold_on; None where not used."""

    train: object
    predict: object
    tune: object


def squad_sets_from_flags(tokenizer) -> SquadSets:
    """Reads the files the flags name and builds (or reuses) their features with
    `tokenizer`, printing one line about each."""
    from data_pipeline.squad.examples import read_squad_files
    from data_pipeline.squad.feature_records import squad_features

    predicting = FLAGS.do_predict or FLAGS.do_eval
    files = [
        (FLAGS.train_file if FLAGS.do_train else None, True),
        (FLAGS.predict_file if predicting else None, FLAGS.do_eval),
        (FLAGS.tune_threshold_on, True),
    ]
    questions = read_squad_files(files, FLAGS.version_2_with_negative)
    cache = os.path.join(FLAGS.output_dir, "cache")
    windows = (FLAGS.max_seq_length, FLAGS.doc_stride, FLAGS.max_query_length)

    def features(path, is_training):
        found = squad_features(
            path, tokenizer, cache, *windows, is_training, examples=questions[path]
        )
        print(found.describe(), flush=True)
        return found

    return SquadSets(
        features(FLAGS.train_file, True) if FLAGS.do_train else None,
        features(FLAGS.predict_file, False) if predicting else None,
        features(FLAGS.tune_threshold_on, False) if FLAGS.tune_threshold_on else None,
    )
