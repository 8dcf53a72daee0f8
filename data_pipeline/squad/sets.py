"""What run_squad.py trains, predicts and tunes on: the SQuAD files of its settings read once
(checked against --version_2_with_negative) and turned into cached windowed features
(data_pipeline.squad.feature_records; OUTPUT_DIR/cache)."""

from __future__ import annotations

import os
from typing import NamedTuple


class SquadSets(NamedTuple):
    """The SquadFeatures of --train_file (with --do_train), --predict_file (with
    --do_predict or --do_eval) and --tune_threshold_on; None where not used."""

    train: object
    predict: object
    tune: object


def squad_sets(s, tokenizer) -> SquadSets:
    """Reads the files the settings `s` name and builds (or reuses) their features with
    `tokenizer`, printing one line about each."""
    from data_pipeline.squad.examples import read_squad_files
    from data_pipeline.squad.feature_records import squad_features

    predicting = s.do_predict or s.do_eval
    files = [
        (s.train_file if s.do_train else None, True),
        (s.predict_file if predicting else None, s.do_eval),
        (s.tune_threshold_on, True),
    ]
    questions = read_squad_files(files, s.version_2_with_negative)
    cache = os.path.join(s.output_dir, "cache")
    windows = (s.max_seq_length, s.doc_stride, s.max_query_length)

    def features(path, is_training):
        found = squad_features(
            path, tokenizer, cache, *windows, is_training, examples=questions[path]
        )
        print(found.describe(), flush=True)
        return found

    return SquadSets(
        features(s.train_file, True) if s.do_train else None,
        features(s.predict_file, False) if predicting else None,
        features(s.tune_threshold_on, False) if s.tune_threshold_on else None,
    )
