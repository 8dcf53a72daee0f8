"""run_embedding.py's settings (`EmbeddingSettings`: the objective, the pooling, the pair
files, the evaluation) and the pairs read from its files (data_pipeline.classification.
pair_files; every error names the flag, file:line). No TensorFlow here: `--help` first."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting

OBJECTIVES = ("cosine", "contrastive")  # (embedding_task imports them from here)
POOLINGS = ("pooler", "cls", "mean", "max")  # albert_tf.modeling.pooling.POOLINGS (no TF here)
FORMATS = ("auto", "tsv", "csv", "jsonl", "sts-b", "mrpc", "afqmc")  # pair_files.PAIR_FORMATS


@dataclasses.dataclass(frozen=True)
class EmbeddingSettings:
    """The objective, the pooling, the pair files, the evaluation."""

    objective: str = setting(
        "cosine",
        "cosine: regress cos(u, v) on score / --max_score (scored pairs, e.g. STS-B train); "
        "contrastive: in-batch negatives over positive pairs (MRPC / AFQMC positives, "
        "paraphrases).",
        choices=OBJECTIVES,
    )
    pooling: str = setting(
        "mean",
        "The sentence embedding trained and exported: mean / max over the real tokens, cls "
        "= h_[CLS], pooler = tanh(dense(h_[CLS])).",
        choices=POOLINGS,
    )
    normalize: bool = setting(
        True,
        "The export's embeddings are L2-normalized (dot product = cosine). Training and "
        "the Spearman evaluation use cosines, so they do not change with it.",
    )
    do_train: bool = setting(False, "Train on --train_file.")
    train_file: str | None = setting(None, "The training pairs (see --train_format).")
    train_format: str = setting(
        "auto",
        "sts-b / mrpc / afqmc (the benchmark files' own layouts), tsv / csv / jsonl (a header "
        "row or JSON keys naming the columns), auto: by extension (.jsonl, .csv, else tsv).",
        choices=FORMATS,
    )
    text_a_column: str = setting("sentence1", "tsv/csv/jsonl: the first sentence's column.")
    text_b_column: str = setting("sentence2", "tsv/csv/jsonl: the second sentence's column.")
    score_column: str = setting("score", "cosine, tsv/csv/jsonl: the gold score's column.")
    label_column: str | None = setting(
        None,
        "contrastive, tsv/csv/jsonl: keep the rows whose label is --positive_label (none: "
        "every row is a positive pair).",
    )
    positive_label: str = setting("1", "contrastive: the label of a positive pair.")
    max_score: float = setting(
        5.0,
        "The highest gold score (STS-B: 5); cosine labels are score / max_score in [0, 1].",
        above=0,
    )
    eval_file: str | None = setting(
        None,
        "STS-B-style scored pairs (sts-b, or tsv/csv/jsonl with columns sentence1, "
        "sentence2, score in [0, --max_score]): Spearman of the cosine before training, "
        "every --eval_every steps and at the end; the best checkpoint follows it.",
    )
    eval_format: str = setting("auto", "The --eval_file's format.", choices=FORMATS)
    eval_batch_size: int = setting(64, "Sentences embedded per evaluation batch.", minimum=1)
    do_predict: bool = setting(
        False,
        "Write each --predict_file pair's cosine similarity to OUTPUT_DIR/similarities.jsonl "
        "(one line a pair, with its gold score when the file has a score column: then "
        "scored too, test_results.json).",
    )
    predict_file: str | None = setting(
        None,
        "The pairs to predict (tsv/csv/jsonl with columns --text_a_column, --text_b_column "
        "and, if it has one, --score_column; sts-b files as tsv).",
    )
    predict_format: str = setting("auto", "The --predict_file's format.", choices=FORMATS)


def training_pairs(s):
    """The --train_file's pairs (`pair_files.TextPairs`) for --objective: scored pairs
    (cosine) or positive pairs (contrastive). Errors name --train_file, the file, the line."""
    from data_pipeline.classification import pair_files

    try:
        if s.objective == "cosine":
            columns = (s.text_a_column, s.text_b_column, s.score_column)
            return pair_files.scored_pairs(s.train_file, s.train_format, *columns, s.max_score)
        columns = (s.text_a_column, s.text_b_column, s.label_column, s.positive_label)
        return pair_files.positive_pairs(s.train_file, s.train_format, *columns, s.max_score)
    except (ValueError, OSError) as e:
        raise ValueError(f"--train_file: {e}") from None


def predicted_pairs(s):
    """The --predict_file's pairs, scored when it has a --score_column (pair_files.
    prediction_pairs); errors name --predict_file, the file, the line."""
    from data_pipeline.classification import pair_files

    columns = (s.text_a_column, s.text_b_column, s.score_column)
    try:
        return pair_files.prediction_pairs(
            s.predict_file, s.predict_format, *columns, max_score=s.max_score
        )
    except (ValueError, OSError) as e:
        raise ValueError(f"--predict_file: {e}") from None


def evaluation_pairs(s):
    """The --eval_file's scored pairs (columns sentence1, sentence2, score); errors name
    --eval_file, the file, the line."""
    from data_pipeline.classification import pair_files

    try:
        return pair_files.scored_pairs(
            s.eval_file, s.eval_format, max_score=s.max_score, split="dev"
        )
    except (ValueError, OSError) as e:
        raise ValueError(f"--eval_file: {e}") from None
