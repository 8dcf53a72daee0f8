"""A fine-tuned model directory: everything needed to rebuild a task model and feed it text.

A runner's `--export_dir` writes one, so does `albert_tf.checkpoints.convert` from a Hugging
Face task model, and the serving export (`albert_tf.serving.export`) reads it,
so a deployed model can never pair the weights with another vocabulary, casing, label order
or sequence length than the ones it was trained with:

    DIR/albert_config.json   the encoder's hyper-parameters
    DIR/ckpt-N.*, checkpoint the task model (encoder + head), `albert_tf.save_checkpoint`
    DIR/spm.model            the SentencePiece model the task data was tokenized with
    DIR/task.json            {"kind", "task_name", "labels", "regression", "num_choices",
                              "max_seq_length", "do_lower_case", ...}

The directory is written under a temporary name and renamed when complete: a crash never
leaves a half-written one, and an existing directory is never overwritten. On URLs (no
directory rename on object stores) it is built locally and copied up, task.json last: a
directory without task.json is not a fine-tuned model directory to its readers.
"""

from __future__ import annotations

import json
import os
import shutil

from data_pipeline.io import filesystem

TASK_FILE = "task.json"
SPM_FILE = "spm.model"
VOCAB_FILE = "vocab.txt"  # a WordPiece vocabulary, instead of SPM_FILE
KINDS = ("classifier", "multiple_choice", "squad")


def save_finetuned(
    model, directory: str, task: dict, spm_model_file: str | None, vocab_file: str | None = None
) -> str:
    """Writes `model` (AlbertClassifier, AlbertMultipleChoice, AlbertQuestionAnswering) and
    `task` (see the module
    docstring; `kind` is required) as a fine-tuned model directory, with its vocabulary:
    the SentencePiece model or (`vocab_file`) the WordPiece vocab.txt. Returns `directory`.

    Raises FileExistsError when `directory` exists and is not empty.
    """
    from albert_tf.checkpoints import save_checkpoint

    if task.get("kind") not in KINDS:
        raise ValueError(f"task kind {task.get('kind')!r} is not one of {', '.join(KINDS)}")
    if filesystem.isdir(directory) and filesystem.listdir(directory):
        raise FileExistsError(
            f"export directory {directory} exists and is not empty; give a new one"
        )
    if vocab_file and not filesystem.exists(vocab_file):
        raise FileNotFoundError(f"WordPiece vocabulary not found: {vocab_file}")
    if not vocab_file and not filesystem.exists(spm_model_file):
        raise FileNotFoundError(f"SentencePiece model not found: {spm_model_file}")
    if filesystem.is_url(directory):  # no directory rename: built locally, task.json last
        with filesystem.staged_directory(directory, last=(TASK_FILE,)) as tmp:
            save_checkpoint(model, tmp)
            write_task_files(tmp, task, spm_model_file, vocab_file)
        return directory
    tmp = directory.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    save_checkpoint(model, tmp)
    write_task_files(tmp, task, spm_model_file, vocab_file)
    if os.path.isdir(directory):
        os.rmdir(directory)  # empty (checked above)
    os.replace(tmp, directory)
    return directory


def write_task_files(
    directory: str, task: dict, spm_model_file: str | None, vocab_file: str | None = None
) -> None:
    """task.json (and the vocabulary as spm.model, or a WordPiece `vocab_file` as vocab.txt,
    when given) into `directory`, which holds the task model's checkpoint: what makes a
    checkpoint directory a fine-tuned model directory. Without a vocabulary, exports need
    --spm_model_file."""
    from data_pipeline.io.atomic import write_json

    if vocab_file:
        filesystem.copy(vocab_file, os.path.join(directory, VOCAB_FILE))
        write_json(os.path.join(directory, TASK_FILE), dict(task, vocab_file=VOCAB_FILE))
        return
    if spm_model_file:
        filesystem.copy(spm_model_file, os.path.join(directory, SPM_FILE))
    write_json(os.path.join(directory, TASK_FILE), dict(task, spm_model=SPM_FILE))


def task_model(task: dict, config):
    """The (unbuilt) model of `task`'s kind for `config`: AlbertQuestionAnswering (with
    squad_head "albert": AlbertQuestionAnsweringV2), AlbertMultipleChoice, or
    AlbertClassifier with one output per label (one for regression); dropout 0, for
    inference and conversion."""
    from albert_tf.modeling.models import (
        AlbertClassifier,
        AlbertMultipleChoice,
        AlbertQuestionAnswering,
        AlbertQuestionAnsweringV2,
    )

    if task["kind"] == "squad" and task.get("squad_head") == "albert":
        return AlbertQuestionAnsweringV2(
            config, task.get("start_n_top", 5), task.get("end_n_top", 5), dropout=0.0
        )
    if task["kind"] == "squad":
        return AlbertQuestionAnswering(config)
    if task["kind"] == "multiple_choice":
        return AlbertMultipleChoice(config, dropout=0.0)
    return AlbertClassifier(
        config, 1 if task.get("regression") else len(task["labels"]), dropout=0.0
    )


def read_task(directory: str) -> dict:
    """task.json of a fine-tuned model directory, with `spm_model` (or, for a WordPiece
    model, `vocab_file`) made a full path."""
    path = os.path.join(directory, TASK_FILE)
    if not filesystem.exists(path):
        raise FileNotFoundError(
            f"{path} not found: {directory} is not a fine-tuned model "
            f"directory (a runner's --export_dir writes one)"
        )
    with filesystem.open(path) as f:
        task = json.load(f)
    if "vocab_file" in task:
        task["vocab_file"] = os.path.join(directory, task["vocab_file"])
        return task
    task["spm_model"] = os.path.join(directory, task.get("spm_model", SPM_FILE))
    return task


def load_finetuned(directory: str):
    """(model, task): the task model rebuilt from a fine-tuned model directory, weights
    restored (a missing head is an error, not a random head), and its task.json."""
    from albert_tf.checkpoints import CheckpointError, load_checkpoint
    from albert_tf.modeling.config import AlbertConfig

    task = read_task(directory)
    config = AlbertConfig.from_json_file(os.path.join(directory, "albert_config.json"))
    model = task_model(task, config)
    model.build()
    report = load_checkpoint(model, directory)
    if report.missing:
        raise CheckpointError(f"{directory}: the checkpoint lacks {', '.join(report.missing)}")
    return model, task
