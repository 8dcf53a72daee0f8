"""A fine-tuned model directory: everything needed to rebuild a task model and feed it text.

A runner's `--export_dir` writes one, so does `albert_tf.checkpoints.convert` from a Hugging
Face task model, and the serving export (`albert_tf.serving.export`) reads it,
so a deployed model can never pair the weights with another vocabulary, casing, label order
or sequence length than the ones it was trained with:

    DIR/albert_config.json   the encoder's hyper-parameters
    DIR/ckpt-N.*, checkpoint the task model (encoder + head), `albert_tf.save_checkpoint`
    DIR/spm.model            the SentencePiece model the task data was tokenized with (or
                             DIR/vocab.txt, a WordPiece vocabulary)
    DIR/task.json            `albert_tf.checkpoints.task_info.TaskInfo`: the kind, its
                             labels or settings, max_seq_length, casing, the vocabulary

The directory is written under a temporary name and renamed when complete: a crash never
leaves a half-written one, and an existing directory is never overwritten. On URLs (no
directory rename on object stores) it is built locally and copied up, task.json last: a
directory without task.json is not a fine-tuned model directory to its readers.
"""

from __future__ import annotations

import os
import shutil

from albert_tf.checkpoints.task_info import TASK_FILE, TaskInfo
from albert_tf.checkpoints.task_kinds import FINETUNED_KINDS
from data_pipeline.io import filesystem
from data_pipeline.tokenization.spec import FILE_NAME, SENTENCEPIECE, WORDPIECE, TokenizerSpec

SPM_FILE = FILE_NAME[SENTENCEPIECE]
VOCAB_FILE = FILE_NAME[WORDPIECE]  # a WordPiece vocabulary, instead of SPM_FILE
CONFIG_FILE = "albert_config.json"


def save_finetuned(model, directory: str, task: TaskInfo, tokenizer: TokenizerSpec | None) -> str:
    """Writes `model` (the task model of `task.kind`) and `task` as a fine-tuned model
    directory, with the vocabulary of `tokenizer` (SentencePiece model or WordPiece
    vocab.txt, copied under its file name). Returns `directory`.

    Raises FileExistsError when `directory` exists and is not empty.
    """
    from albert_tf.checkpoints import save_checkpoint

    if not task.task_kind.finetuned:
        raise ValueError(f"task kind {task.kind!r} is not one of {', '.join(FINETUNED_KINDS)}")
    if filesystem.isdir(directory) and filesystem.listdir(directory):
        raise FileExistsError(
            f"export directory {directory} exists and is not empty; give a new one"
        )
    if tokenizer is not None and not filesystem.exists(tokenizer.path):
        what = "WordPiece vocabulary" if tokenizer.is_wordpiece else "SentencePiece model"
        raise FileNotFoundError(f"{what} not found: {tokenizer.path}")
    if filesystem.is_url(directory):  # no directory rename: built locally, task.json last
        with filesystem.staged_directory(directory, last=(TASK_FILE,)) as tmp:
            save_checkpoint(model, tmp)
            write_task_files(tmp, task, tokenizer)
        return directory
    tmp = directory.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    save_checkpoint(model, tmp)
    write_task_files(tmp, task, tokenizer)
    if os.path.isdir(directory):
        os.rmdir(directory)  # empty (checked above)
    os.replace(tmp, directory)
    return directory


def write_task_files(directory: str, task: TaskInfo, tokenizer: TokenizerSpec | None) -> None:
    """task.json and the vocabulary of `tokenizer` (when given, copied as spm.model or
    vocab.txt) into `directory`, which holds the task model's checkpoint: what makes a
    checkpoint directory a fine-tuned model directory. Without a vocabulary, exports need
    --spm_model_file or --vocab_file."""
    if tokenizer is not None:
        filesystem.copy(tokenizer.path, os.path.join(directory, tokenizer.file_name))
    task.with_tokenizer(tokenizer).write(directory)


def make_servable(directory: str, task: TaskInfo, tokenizer: TokenizerSpec | None, config) -> None:
    """Turns `directory`, which holds the whole task model's checkpoint as a run writes it
    (a run's best/), into a fine-tuned model directory: `config` (an AlbertConfig) as
    albert_config.json, then `write_task_files` (task.json last but the vocabulary: a
    reader sees task.json only beside the rest)."""
    from data_pipeline.io.atomic import write_text

    write_text(os.path.join(directory, CONFIG_FILE), config.to_json_string())
    write_task_files(directory, task, tokenizer)


def load_finetuned(directory: str, task: TaskInfo | None = None):
    """(model, task): the task model rebuilt from a fine-tuned model directory, weights
    restored (a missing head is an error, not a random head), and its TaskInfo (`task`,
    when the caller has read it already, else read here)."""
    from albert_tf.checkpoints import CheckpointError, load_checkpoint
    from albert_tf.modeling.config import AlbertConfig

    task = TaskInfo.read(directory) if task is None else task
    config = AlbertConfig.from_json_file(os.path.join(directory, CONFIG_FILE))
    model = task.model(config)
    model.build()
    report = load_checkpoint(model, directory)
    if report.missing:
        raise CheckpointError(f"{directory}: the checkpoint lacks {', '.join(report.missing)}")
    return model, task
