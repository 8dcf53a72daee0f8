"""run_squad.py's flags, generated from `SquadSettings` on top of the fine-tuning flags,
its head (--squad_head's default per version) and its up-front checks."""

from __future__ import annotations

import dataclasses

from absl import flags

from albert_tf.runners.export_flags import define_export_format_flags
from albert_tf.runners.finetuning_flags import (
    check_finetuning_flags,
    define_finetuning_flags,
    tokenizer_spec_from_flags,
)
from albert_tf.runners.lora_flags import define_lora_flags, lora_settings_from_flags
from data_pipeline.cli import define_flags_from, setting

FLAGS = flags.FLAGS

# What a recipe's classifier_dropout is for each head (no flag sets it).
HEAD_DROPOUT = {
    "albert": "the albert head's answer-class dropout, fixed at 0.1",
    "bert": "the bert head has no dropout layer (as the official v1.1 head)",
}


@dataclasses.dataclass(frozen=True)
class SquadSettings:
    """run_squad.py's own settings: files, what to do, the head, windows and answers."""

    train_file: str | None = setting(None, "SQuAD-format JSON to train on.")
    predict_file: str | None = setting(None, "SQuAD-format JSON to predict (and score).")
    do_train: bool = setting(False, "Fine-tune on --train_file.")
    do_predict: bool = setting(False, "Write predictions for --predict_file.")
    do_eval: bool = setting(False, "Score the predictions of --predict_file (EM, F1).")
    version_2_with_negative: bool = setting(False, "SQuAD v2.0: unanswerable questions.")
    eval_metric: str = setting(
        "squad",
        "--do_eval: squad, the official SQuAD v1.1/v2.0 script (F1 over whitespace words: "
        "on Chinese text it equals EM); cmrc2018, the CMRC 2018 script's EM and F1 (each "
        "CJK character a segment; data_pipeline.squad.cmrc_evaluation).",
        choices=("squad", "cmrc2018"),
    )
    squad_head: str | None = setting(
        None,
        "albert: the official ALBERT v2.0 head (start/end beam + answer-class logit; the "
        "default for v2.0); bert: start/end logits with the [CLS] null score (the default "
        "for v1.1, the official v1.1 head).",
        choices=("albert", "bert"),
    )
    start_n_top: int = setting(5, "--squad_head albert: starts in the beam.")
    end_n_top: int = setting(5, "--squad_head albert: ends per start in the beam.")
    doc_stride: int = setting(128, "Context tokens between window starts.", minimum=1)
    max_query_length: int = setting(64, "Question tokens kept.", minimum=1)
    predict_batch_size: int = setting(32, "Prediction batch size.", minimum=1)
    n_best_size: int = setting(20, "Start and end candidates per window.", minimum=1)
    max_answer_length: int = setting(30, "Longest answer, in tokens.", minimum=1)
    null_score_diff_threshold: float = setting(
        0.0, "v2.0: predict no answer when null score - best span score > this."
    )
    tune_threshold_on: str | None = setting(
        None,
        "v2.0: a separate SQuAD v2.0 file; the threshold maximizing F1 on it is reported "
        "and applied to --predict_file as well.",
    )
    export_dir: str | None = setting(
        None,
        "When done, export a SavedModel that answers questions from raw text as "
        "EXPORT_DIR/N (albert_tf.serving.export; v2.0 with the tuned threshold when "
        "--tune_threshold_on is given).",
    )


def define_squad_flags() -> None:
    """The flags of run_squad.py (the fine-tuning flags with its defaults, its own, the
    export formats)."""
    define_finetuning_flags(learning_rate=5e-5, max_seq_length=384, num_train_epochs=2.0)
    define_flags_from(SquadSettings, FLAGS)
    define_lora_flags()
    define_export_format_flags()
    flags.mark_flags_as_required(["output_dir"])


def squad_head_from_flags() -> str:
    """--squad_head, defaulting to the official code's: albert for v2.0, bert for v1.1."""
    if FLAGS.squad_head:
        return FLAGS.squad_head
    return "albert" if FLAGS.version_2_with_negative else "bert"


def check_squad_flags() -> None:
    """run_squad.py's up-front checks: what to do and on which files, every range
    (`check_finetuning_flags`), room for the context, and what can be exported."""
    if not (FLAGS.do_train or FLAGS.do_predict or FLAGS.do_eval):
        raise ValueError("nothing to do: give --do_train, --do_predict and/or --do_eval")
    if FLAGS.eval_metric == "cmrc2018" and FLAGS.version_2_with_negative:
        raise ValueError(
            "--eval_metric cmrc2018 scores answerable questions only (CMRC 2018 has no "
            "unanswerable ones); drop --version_2_with_negative or use --eval_metric squad"
        )
    if FLAGS.do_train and not FLAGS.train_file:
        raise ValueError("--do_train needs --train_file")
    if (FLAGS.do_predict or FLAGS.do_eval) and not FLAGS.predict_file:
        raise ValueError("--do_predict/--do_eval need --predict_file")
    if FLAGS.tune_threshold_on and not FLAGS.version_2_with_negative:
        raise ValueError("--tune_threshold_on is for SQuAD v2.0 (--version_2_with_negative)")
    check_finetuning_flags(FLAGS.do_train)
    lora_settings_from_flags()  # (--lora_targets, --lora_rank without --init_checkpoint)
    if FLAGS.max_seq_length < FLAGS.max_query_length + 4:
        raise ValueError(
            f"--max_seq_length={FLAGS.max_seq_length} leaves no room for context after "
            f"--max_query_length={FLAGS.max_query_length} (needs at least max_query_length + 4)"
        )
    # What SQuAD LiteRT files can hold: the task kind's one rule.
    spec = tokenizer_spec_from_flags()
    if FLAGS.export_dir and "tflite" in FLAGS.export_format:
        from albert_tf.checkpoints.task_kinds import task_kind

        reason = task_kind("squad").on_device_refusal(spec.is_wordpiece)
        if reason:
            raise ValueError(f"--export_format tflite with {spec.flag}={spec.path}: {reason}")
