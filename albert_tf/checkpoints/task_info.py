"""task.json, typed: `TaskInfo` is the one owner of a fine-tuned model directory's task file
(build, write, read, validate). Every reader gets attributes, never string keys.

    DIR/task.json   {"kind", "max_seq_length", "do_lower_case", "spm_model" | "vocab_file",
                     "step", "source", ...the kind's own fields}

The fields every kind has live here; each kind's own fields, model and rules live in its
module of `albert_tf.checkpoints.task_kinds` (found through its registry, `KINDS`), so a new
task family never edits this file. Errors are one line naming the file and the field.

The vocabulary is named by a plain file name inside the directory ("spm.model",
"vocab.txt"): an absolute path, "../x", a sub-directory or a link leading outside the
directory is refused, so a model directory cannot make an export read another file.
"""

from __future__ import annotations

import dataclasses
import json
import os

from albert_tf.checkpoints.task_kinds import KINDS, TaskKind, task_kind
from albert_tf.checkpoints.task_kinds.kind import fields_to_json, json_value
from data_pipeline.io import filesystem
from data_pipeline.tokenization.spec import SENTENCEPIECE, WORDPIECE, TokenizerSpec

TASK_FILE = "task.json"
# task.json's key for the vocabulary file of each tokenizer kind.
VOCABULARY_KEY = {SENTENCEPIECE: "spm_model", WORDPIECE: "vocab_file"}
# The fields every kind has (besides `kind` and the vocabulary), with their JSON types.
COMMON = {
    "max_seq_length": "int | None",
    "do_lower_case": "bool",
    "step": "int | None",
    "source": "str | None",
}


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """What a fine-tuned model predicts and how it reads text.

    kind: a registered task kind ("classifier", "multiple_choice", "squad", "encoder").
    details: that kind's own fields (`TaskKind.fields`: e.g. `ClassifierFields.labels`).
    max_seq_length: the sequence length it was trained with (None: not recorded).
    do_lower_case: the tokenizer's casing.
    vocabulary: the vocabulary's file name inside the directory, None without one;
      tokenizer_kind: "sentencepiece" or "wordpiece".
    step: the training step of the weights; source: where they came from ("transformers").
    directory: the directory it was read from (not written; resolves `vocabulary`).
    """

    kind: str
    details: object
    max_seq_length: int | None = None
    do_lower_case: bool = True
    vocabulary: str | None = None
    tokenizer_kind: str = SENTENCEPIECE
    step: int | None = None
    source: str | None = None
    directory: str | None = dataclasses.field(default=None, compare=False)

    # --- building ---------------------------------------------------------------------

    @classmethod
    def build(cls, kind: str, **values) -> TaskInfo:
        """The one builder (runners, convert, tests): `kind` plus common and kind fields
        by name; None means "not given" (the default). ValueError naming a bad field."""
        given = {k: v for k, v in values.items() if v is not None}
        return cls.from_json(dict(given, kind=kind), TASK_FILE)

    @classmethod
    def from_json(cls, data, where: str, directory: str | None = None) -> TaskInfo:
        """The TaskInfo of task.json's content `data`; ValueError "{where}: ..." (one line)
        for anything that is not a task.json of a registered kind."""
        try:
            return cls._from_json(data, directory)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: {e}") from None

    @classmethod
    def _from_json(cls, data, directory):
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, not {type(data).__name__}")
        kind = task_kind(data.get("kind"))
        vocab_keys = [k for k in VOCABULARY_KEY.values() if data.get(k) is not None]
        if len(vocab_keys) > 1:
            raise ValueError("give one of 'spm_model' and 'vocab_file', not both")
        # Keys of another kind are tolerated: older versions wrote a classifier's
        # "num_choices": null and a multiple-choice model's "regression": false.
        known = {"kind", *COMMON, *VOCABULARY_KEY.values()}
        known.update(name for k in KINDS.values() for name in k.field_names())
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        common = {k: json_value(k, t, data[k]) for k, t in COMMON.items() if k in data}
        if common.get("max_seq_length") is not None and common["max_seq_length"] < 1:
            raise ValueError(f"field 'max_seq_length' must be ≥ 1, not {data['max_seq_length']}")
        vocabulary, tokenizer_kind = None, SENTENCEPIECE
        if vocab_keys:
            (key,) = vocab_keys
            vocabulary = _plain_file_name(key, json_value(key, "str", data[key]), directory)
            tokenizer_kind = WORDPIECE if key == "vocab_file" else SENTENCEPIECE
        return cls(
            kind=kind.name,
            details=kind.fields_from_json(data),
            vocabulary=vocabulary,
            tokenizer_kind=tokenizer_kind,
            directory=directory,
            **common,
        )

    def with_tokenizer(self, tokenizer: TokenizerSpec | None) -> TaskInfo:
        """The same task with `tokenizer`'s vocabulary under its file name in the
        directory (spm.model or vocab.txt); None: no vocabulary."""
        if tokenizer is None:
            return dataclasses.replace(self, vocabulary=None, tokenizer_kind=SENTENCEPIECE)
        return dataclasses.replace(
            self, vocabulary=tokenizer.file_name, tokenizer_kind=tokenizer.kind
        )

    def with_details(self, **overrides) -> TaskInfo:
        """The same task with some of its kind fields replaced (None: kept), checked."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if not given:
            return self
        data = dict(fields_to_json(self.details), **given)
        return dataclasses.replace(self, details=self.task_kind.fields_from_json(data))

    # --- what it means ----------------------------------------------------------------

    @property
    def task_kind(self) -> TaskKind:
        """The kind's registry entry: its model and rules."""
        return KINDS[self.kind]

    def model(self, config):
        """The kind's unbuilt Keras model for `config` (dropout 0: inference)."""
        return self.task_kind.build_model(config, self.details)

    def tokenizer(self) -> TokenizerSpec | None:
        """The directory's vocabulary as a TokenizerSpec with the task's casing, or None
        when the task names none or its file is absent."""
        if not (self.vocabulary and self.directory):
            return None
        path = os.path.join(self.directory, self.vocabulary)
        if not filesystem.exists(path):
            return None
        return TokenizerSpec(self.tokenizer_kind, path, self.do_lower_case)

    # --- the file ---------------------------------------------------------------------

    def to_json(self) -> dict:
        """task.json's content (fields left unset are not written)."""
        out = {"kind": self.kind, **fields_to_json(self.details)}
        for name in COMMON:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.vocabulary:
            out[VOCABULARY_KEY[self.tokenizer_kind]] = self.vocabulary
        return out

    def write(self, directory: str) -> str:
        """Writes `directory/task.json` atomically; returns its path."""
        from data_pipeline.io.atomic import write_json

        path = os.path.join(directory, TASK_FILE)
        write_json(path, self.to_json())
        return path

    @classmethod
    def read(cls, directory: str) -> TaskInfo:
        """task.json of the fine-tuned model directory `directory`: FileNotFoundError when
        it has none, ValueError (one line naming the file and the field) when invalid."""
        path = os.path.join(directory, TASK_FILE)
        if not filesystem.exists(path):
            raise FileNotFoundError(
                f"{path} not found: {directory} is not a fine-tuned model "
                f"directory (a runner's --export_dir writes one)"
            )
        with filesystem.open(path) as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
        return cls.from_json(data, path, directory)


def is_finetuned_dir(path: str) -> bool:
    """Whether `path` is a fine-tuned model directory (it holds task.json)."""
    return filesystem.exists(os.path.join(path, TASK_FILE))


def _plain_file_name(key: str, name: str, directory: str | None) -> str:
    """`name` when it is a plain file name inside the directory; ValueError otherwise (an
    absolute path, '..', a sub-directory, or a link leading outside the directory)."""
    plain = (
        name
        and name not in (".", "..")
        and "/" not in name
        and "\\" not in name
        and not os.path.isabs(name)
    )
    if not plain:
        raise ValueError(
            f"field {key!r} is {name!r}: it must be a plain file name inside the directory"
        )
    if directory and not filesystem.is_url(directory):
        path = os.path.join(directory, name)
        inside = os.path.realpath(directory)
        if os.path.islink(path) and os.path.dirname(os.path.realpath(path)) != inside:
            raise ValueError(
                f"field {key!r} is {name!r}, a link to {os.path.realpath(path)} outside the "
                "directory: it must be a file inside the directory"
            )
    return name
