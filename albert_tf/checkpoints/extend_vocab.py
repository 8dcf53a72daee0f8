"""Adds domain words to a released vocabulary without pretraining from scratch.

    albert-extend-vocab --init_checkpoint CKPT (--spm_model_file M | --vocab_file V) \\
        --new_pieces WORDS.txt --output_dir NEW_DIR

`WORDS.txt` holds one word a line (`##rest` adds a WordPiece continuation). `NEW_DIR` (new
or empty) gets the extended tokenizer (spm.model or vocab.txt: the new pieces at ids V ..
V+n-1, every old id unchanged, see `data_pipeline.tokenization.extension`), `ckpt-1` with
`albert_config.json` (vocab_size V+n) and `tokenizer.json` (kind and sha256 of the new
file): fine-tuning from `NEW_DIR` then requires the new tokenizer, and every export
(`albert_tf.serving.export`, `convert --to transformers / keras_hub`) takes the directory
and the file like any other checkpoint and vocabulary. A fine-tuned model directory
(task.json; its own vocabulary is the default tokenizer) gives a fine-tuned model
directory: the task model grown, task.json naming the new vocabulary beside it.

A checkpoint keeps what the source holds (encoder, masked-LM head, sentence-order head).
Two tables grow, every old row unchanged: the word embedding [V, E] → [V+n, E] (ALBERT's
factorization makes a new word cost E values) and the masked-LM output bias [V] → [V+n].
Row v of each new piece is the mean of the rows of the old pieces the OLD tokenizer split
the word into, and so is its bias: the MLM logit of a token, transform(h) · e_v + b_v, is
affine in (e_v, b_v), so the new token's logit is exactly the mean of its old pieces'
logits at every position — the model starts out scoring the word as it scored its parts,
neither favoured nor suppressed (a zero bias would put it wherever 0 falls among the
trained biases, unrelated to the word).

Everything is checked before anything is written (one line naming the flag, file and
line: a word already in the vocabulary, an empty or too long list, a checkpoint whose
vocab_size is not the tokenizer's, a checkpoint that records another tokenizer); the
output is written to a temporary directory, checked, then copied into `NEW_DIR` under its
lock, the checkpoint state file and task.json last.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile

from data_pipeline.cli import setting
from data_pipeline.command import Command

# (TensorFlow and the checkpoint modules are imported inside the functions: --help and a
# bad command line come first)


@dataclasses.dataclass(frozen=True)
class ExtendVocabSettings:
    """Which model and tokenizer, which new words, and where the extended pair goes."""

    init_checkpoint: str | None = setting(
        None, "The model: a checkpoint directory or prefix load_checkpoint accepts."
    )
    albert_config_file: str | None = setting(
        None, "albert_config.json; by default found beside the checkpoint."
    )
    spm_model_file: str | None = setting(
        None, "The model's SentencePiece model (default: a fine-tuned directory's own)."
    )
    vocab_file: str | None = setting(None, "The model's WordPiece vocab.txt (instead).")
    do_lower_case: bool = setting(True, "The tokenizer lowercases (as the model was trained).")
    new_pieces: str | None = setting(
        None, "A text file, one new word a line (at most 10,000; `##rest`: a continuation)."
    )
    output_dir: str | None = setting(None, "A new directory for the tokenizer and checkpoint.")


COMMAND = Command(
    "albert-extend-vocab",
    __doc__,
    (ExtendVocabSettings,),
    required=("init_checkpoint", "new_pieces", "output_dir"),
)


def extended_vocabulary(settings, task=None):
    """(the old tokenizer's TokenizerSpec, the `ExtendedVocabulary`) of `settings`: the
    tokenizer (the flags', else the fine-tuned directory's of `task`, a TaskInfo) read and
    each word checked (one-line errors naming flag, file and line)."""
    from data_pipeline.tokenization.extension import EXTENDERS, read_new_pieces
    from data_pipeline.tokenization.spec import TokenizerSpec

    spec = TokenizerSpec.optional(
        settings.spm_model_file, settings.vocab_file, do_lower_case=settings.do_lower_case
    )
    if spec is None and task is not None:
        spec = task.tokenizer()
    if spec is None:
        spec = TokenizerSpec.from_files()  # (the one-line error: neither flag given)
    tokenizer = spec.build()
    words = read_new_pieces(settings.new_pieces)
    vocabulary = EXTENDERS[spec.kind](tokenizer, words, settings.new_pieces)
    return spec, vocabulary


def _check_model(settings, spec, vocabulary, prefix, config, config_source) -> None:
    """ValueError (one line) when the checkpoint is not the tokenizer's: another
    vocab_size, or another tokenizer recorded beside it."""
    from albert_tf.checkpoints.tokenizer_record import check_tokenizer, file_record

    given = f"{spec.flag}={spec.path}"
    if config.vocab_size != vocabulary.old_size:
        raise ValueError(
            f"--init_checkpoint={settings.init_checkpoint} has vocab_size "
            f"{config.vocab_size} ({config_source}), but {given} has {vocabulary.old_size} "
            f"entries: give the model's own tokenizer"
        )
    check_tokenizer(prefix, file_record(spec.path, spec.kind), given)


def grown(old, sources) -> object:
    """`old` [V, ...] with one row appended per entry of `sources` (old row ids; the row
    is their mean, computed in float64, cast back): [V + len(sources), ...]."""
    import numpy as np

    old = np.asarray(old)
    rows = [old[list(ids)].astype(np.float64).mean(axis=0) for ids in sources]
    return np.concatenate([old, np.stack(rows).astype(old.dtype)], axis=0)


def grown_model(old_model, new_model, vocabulary) -> None:
    """Assigns `old_model`'s weights to `new_model` (the same model class, built, its
    config's vocab_size `vocabulary.new_size`): the word embedding and, when the model has
    a masked-LM head, its output bias grown by `grown`, every other weight copied."""
    sources = [p.old_ids for p in vocabulary.pieces]
    tables = [old_model.encoder.embeddings.word_embeddings]
    if getattr(old_model, "mlm_head", None) is not None:
        tables.append(old_model.mlm_head.output_bias)
    grows = {id(t) for t in tables}
    for old, new in zip(old_model.weights, new_model.weights, strict=True):
        value = old.numpy()
        new.assign(grown(value, sources) if id(old) in grows else value)


def _write_model(prefix, task, config, vocabulary, directory: str) -> tuple[str, list[str]]:
    """The model at `prefix` grown by `vocabulary` as `directory`/ckpt-1 +
    albert_config.json: a fine-tuned directory's task model (`task`, a TaskInfo), else the
    pretraining model, written as far as the source held it. Returns (the prefix, the
    components written)."""
    from albert_tf.checkpoints import load_checkpoint, save_checkpoint
    from albert_tf.checkpoints.finetuned import load_finetuned
    from albert_tf.checkpoints.own import head_attributes
    from albert_tf.modeling.models import AlbertPretrainer

    new_config = config.replace(vocab_size=vocabulary.new_size)
    if task is not None:
        old_model, _ = load_finetuned(task.directory, task)
        new_model, components = task.model(new_config), None
    else:
        old_model, new_model = AlbertPretrainer(config), AlbertPretrainer(new_config)
        components = load_checkpoint(old_model, prefix).restored
    new_model.build()
    grown_model(old_model, new_model, vocabulary)
    written = save_checkpoint(new_model, directory, new_config, components=components)
    return written, components or ["encoder", *head_attributes(new_model)]


def extend_vocab(settings) -> dict:
    """The command's work (settings: `COMMAND`'s value); returns a summary. Raises
    ValueError / OSError (one line) with nothing written."""
    from albert_tf.checkpoints.export_encoder import checkpoint_config
    from albert_tf.checkpoints.finetuned import write_task_files
    from albert_tf.checkpoints.fresh_output import check_fresh_output
    from albert_tf.checkpoints.own import resolve_checkpoint
    from albert_tf.checkpoints.task_info import TaskInfo, is_finetuned_dir
    from albert_tf.checkpoints.tokenizer_record import file_record, write_tokenizer_record
    from data_pipeline.io import filesystem
    from data_pipeline.io.locks import output_lock

    source = settings.init_checkpoint
    task = TaskInfo.read(source) if is_finetuned_dir(source) else None
    spec, vocabulary = extended_vocabulary(settings, task)
    prefix = resolve_checkpoint(source)
    config, config_source = checkpoint_config(prefix, settings.albert_config_file)
    _check_model(settings, spec, vocabulary, prefix, config, config_source)
    check_fresh_output(settings.output_dir)
    output_dir = os.fspath(settings.output_dir)
    tmp = tempfile.mkdtemp(prefix="albert-extend-vocab-")
    try:
        new_file = os.path.join(tmp, "new", spec.file_name)
        os.makedirs(os.path.dirname(new_file))
        with open(new_file, "wb") as f:
            f.write(vocabulary.content)
        new_spec = spec.with_path(new_file)
        vocabulary.check(new_spec.build(), settings.new_pieces)
        out = os.path.join(tmp, "out")
        written, components = _write_model(prefix, task, config, vocabulary, out)
        record = file_record(new_file, spec.kind, source=f"{spec.path} + {settings.new_pieces}")
        if task is not None:  # a fine-tuned directory: task.json and its own vocabulary
            write_task_files(out, task, new_spec)
        else:  # a checkpoint: the vocabulary beside it, recorded in tokenizer.json
            filesystem.copy(new_file, os.path.join(out, spec.file_name))
            write_tokenizer_record(out, record)
        with output_lock(output_dir, "albert-extend-vocab"):
            check_fresh_output(output_dir)
            # The state file and task.json last: until they are in place, no reader
            # takes the directory for a checkpoint or a fine-tuned model.
            filesystem.copy_tree(out, output_dir, last=("checkpoint", "task.json"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "checkpoint": os.path.join(output_dir, os.path.basename(written)),
        "tokenizer": os.path.join(output_dir, spec.file_name),
        "sha256": record["sha256"],
        "old_size": vocabulary.old_size,
        "new_size": vocabulary.new_size,
        "components": components,
    }


def main(argv=None) -> int:
    """The console command `albert-extend-vocab`: parse once (--help: before TensorFlow),
    extend; the exit code (2: a bad command line; 1: one `error:` line)."""
    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    try:
        done = extend_vocab(s)
    except (OSError, ValueError) as e:  # CheckpointError, ConfigError, OutputLocked
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(
        f"wrote {done['checkpoint']} ({', '.join(done['components'])}; vocab_size "
        f"{done['old_size']} → {done['new_size']}) and {done['tokenizer']} "
        f"(sha256 {done['sha256'][:16]}...)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
