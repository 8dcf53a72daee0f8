"""run_embedding.py's flags, generated from `EmbeddingSettings` on top of the fine-tuning
flags; its pair files read from the flags (data_pipeline.classification.pair_files, each
error naming the flag, the file and the line) and its up-front checks."""

from __future__ import annotations

import dataclasses

from absl import flags

from albert_tf.runners.export_flags import define_export_format_flags
from albert_tf.runners.finetuning_flags import check_finetuning_flags, define_finetuning_flags
from data_pipeline.cli import define_flags_from, setting

FLAGS = flags.FLAGS

OBJECTIVES = ("cosine", "contrastive")  # albert_tf.training.embedding_task.OBJECTIVES
POOLINGS = ("pooler", "cls", "mean", "max")  # albert_tf.modeling.pooling.POOLINGS (no TF here)
FORMATS = ("auto", "tsv", "csv", "jsonl", "sts-b", "mrpc", "afqmc")  # pair_files.PAIR_FORMATS


@dataclasses.dataclass(frozen=True)
class EmbeddingSettings:
    """run_embedding.py's own settings: the objective, the pooling, the pair files, the
    evaluation, the export."""

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
    num_runs: int = setting(
        1,
        "Train with seeds seed, seed+1, ... (OUTPUT_DIR/run_i); eval_results.json reports "
        "median, min, max and std of the Spearman.",
        minimum=1,
    )
    export_dir: str | None = setting(
        None,
        "When done, export the best checkpoint (by Spearman; the last without --eval_file) "
        "as an encoder SavedModel EXPORT_DIR/N: raw strings → embeddings (--pooling, "
        "--normalize), similarity(text_a, text_b) = cosine. With --num_runs, one per run.",
    )


def define_embedding_flags() -> None:
    """The flags of run_embedding.py: the fine-tuning flags with sentence-transformers'
    STS-B defaults (learning rate 2e-5, 4 epochs, 128 tokens), its own, the export
    formats."""
    define_finetuning_flags(learning_rate=2e-5, max_seq_length=128, num_train_epochs=4.0)
    define_flags_from(EmbeddingSettings, FLAGS)
    define_export_format_flags()
    flags.mark_flags_as_required(["output_dir"])


def check_embedding_flags() -> None:
    """Up-front checks: something to do, the files it needs, what does not apply, the
    ranges, the export directory."""
    if not (FLAGS.do_train or FLAGS.eval_file):
        raise ValueError("nothing to do: give --do_train with --train_file, and/or --eval_file")
    if FLAGS.do_train and not FLAGS.train_file:
        raise ValueError("--do_train needs --train_file (the training pairs)")
    if FLAGS.recipe:
        raise ValueError(
            f"--recipe={FLAGS.recipe}: the ALBERT paper gives no sentence-embedding "
            "hyper-parameters; give --learning_rate, --train_batch_size, --num_train_epochs"
        )
    if FLAGS["length_buckets"].present:
        raise ValueError(
            "--length_buckets: run_embedding.py pads every sentence to --max_seq_length "
            "(both sides of a pair in one batch); it has no length buckets"
        )
    if FLAGS.objective == "contrastive" and FLAGS.train_batch_size < 2:
        raise ValueError(
            f"--train_batch_size={FLAGS.train_batch_size}: the contrastive objective's "
            "negatives are the batch's other pairs; give 2 or more"
        )
    check_finetuning_flags(FLAGS.do_train)
    if FLAGS.export_dir:  # a file in the way is found now, not after training
        from albert_tf.runners.finetuning_flags import tokenizer_spec_from_flags
        from albert_tf.serving.export_dir import check_export_dir
        from albert_tf.serving.resolve import on_device_refusal

        check_export_dir(FLAGS.export_dir)
        if "tflite" in FLAGS.export_format:
            on_device_refusal("encoder", tokenizer_spec_from_flags(), "--export_format tflite")


def training_pairs():
    """The --train_file's pairs (`pair_files.TextPairs`) for --objective: scored pairs
    (cosine) or positive pairs (contrastive). Errors name --train_file, the file, the line."""
    from data_pipeline.classification import pair_files

    try:
        if FLAGS.objective == "cosine":
            return pair_files.scored_pairs(
                FLAGS.train_file, FLAGS.train_format, FLAGS.text_a_column, FLAGS.text_b_column,
                FLAGS.score_column, FLAGS.max_score,
            )  # fmt: skip
        return pair_files.positive_pairs(
            FLAGS.train_file, FLAGS.train_format, FLAGS.text_a_column, FLAGS.text_b_column,
            FLAGS.label_column, FLAGS.positive_label, FLAGS.max_score,
        )  # fmt: skip
    except (ValueError, OSError) as e:
        raise ValueError(f"--train_file: {e}") from None


def evaluation_pairs():
    """The --eval_file's scored pairs (columns sentence1, sentence2, score); errors name
    --eval_file, the file, the line."""
    from data_pipeline.classification import pair_files

    try:
        return pair_files.scored_pairs(
            FLAGS.eval_file, FLAGS.eval_format, max_score=FLAGS.max_score, split="dev"
        )
    except (ValueError, OSError) as e:
        raise ValueError(f"--eval_file: {e}") from None


def pair_features(pairs, tokenizer):
    """`pair_files.TextPairs` → `sentence_similarity.SentencePairs` (each side packed alone,
    `[CLS] s [SEP]`, --max_seq_length). Scores are put on STS-B's 0-5 scale (× 5 /
    --max_score): the cosine objective regresses on score / 5 (embedding_losses.sts_labels),
    so its label is score / max_score in [0, 1]; the Spearman is unchanged by the scale."""
    import numpy as np

    from albert_tf.training.embedding_losses import STS_MAX_SCORE
    from albert_tf.training.sentence_similarity import SentencePairs, single_sentence_features

    length = FLAGS.max_seq_length
    scores = np.asarray(pairs.scores, np.float64) * (STS_MAX_SCORE / FLAGS.max_score)
    return SentencePairs(
        single_sentence_features(pairs.texts_a, tokenizer, length),
        single_sentence_features(pairs.texts_b, tokenizer, length),
        scores.astype(np.float32),
    )
