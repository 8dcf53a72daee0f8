"""`TaskKind`: what one task family contributes to a fine-tuned model directory: its own
task.json fields (a frozen dataclass), how its Keras model is built from the config, and
its rules. Each family is one module of this package holding one `KIND`; the registry is
`albert_tf.checkpoints.task_kinds.KINDS`."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable

# What a field's declared type accepts from JSON (bools are not ints here: JSON `true` for
# a length is a mistake, not 1).
_SCALARS = {
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "tuple[str, ...]": lambda v: (
        isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)
    ),
    "tuple[float, ...]": lambda v: (
        isinstance(v, (list, tuple))
        and all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in v)
    ),
}


def json_value(name: str, annotation: str, value):
    """`value` (from JSON) checked against the field's declared type ("int", "str | None",
    "tuple[str, ...]", ...), lists made tuples; ValueError naming the field otherwise."""
    options = [a.strip() for a in annotation.split("|")]
    if value is None and "None" in options:
        return None
    for option in options:
        check = _SCALARS.get(option)
        if check and check(value):
            if option == "tuple[str, ...]":
                return tuple(value)
            if option == "tuple[float, ...]":
                return tuple(float(x) for x in value)
            if option in ("int", "float"):
                return int(value) if option == "int" else float(value)
            return value
    raise ValueError(f"field {name!r} must be {annotation}, not {value!r}")


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """One task family.

    name: its task.json `kind` ("classifier", ...); title: how messages name it.
    fields: the frozen dataclass of its own task.json fields (each with a default).
    build_model: (AlbertConfig, fields) → the unbuilt Keras model, dropout 0 (inference,
      conversion, serving).
    check: fields → None, or ValueError with a one-line reason (e.g. labels missing).
    finetuned: whether a fine-tuned model directory may hold it (the encoder export is a
      kind of its own, but never a task.json of its own).
    on_device_wordpiece: whether its on-device (LiteRT) file may be written for a WordPiece
      vocabulary (SQuAD's runner windows text with the SentencePiece model the file
      carries, so SQuAD's may not).
    transformers_class: the Hugging Face head class of `convert --to transformers`.
    on_device: whether any on-device (LiteRT) file of it is written.
    transformers_pooler: whether that class has the pooler (AlbertForQuestionAnswering and
      AlbertForTokenClassification do not: none is written, none is expected).
    from_task: (TaskInfo of another kind's directory, its path) → this kind's TaskInfo, or
      ValueError: a kind exported from another kind's directory (zero-shot from an NLI
      classifier); None: only from its own.
    """

    name: str
    title: str
    fields: type
    build_model: Callable
    check: Callable = lambda fields: None
    finetuned: bool = True
    on_device_wordpiece: bool = True
    transformers_class: str | None = None
    on_device: bool = True
    transformers_pooler: bool = True
    from_task: Callable | None = None

    def fields_from_json(self, data: dict):
        """The kind's fields from task.json's keys (absent: the default); ValueError with a
        one-line reason for a value of the wrong type."""
        hints = {f.name: _type_text(f.type) for f in dataclasses.fields(self.fields)}
        values = {name: json_value(name, hints[name], data[name]) for name in hints if name in data}
        made = self.fields(**values)
        self.check(made)
        return made

    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.fields))

    def on_device_refusal(self, wordpiece: bool) -> str | None:
        """Why no on-device file of this kind is written for the tokenizer (a WordPiece
        vocabulary or not), or None: the one rule every exporter and runner consults."""
        if not self.on_device:
            return f"no on-device {self.title} file is written yet; export the savedmodel format"
        if wordpiece and not self.on_device_wordpiece:
            return (
                f"on-device {self.title} files of WordPiece models are not written (their "
                "runner windows text with the SentencePiece model the file carries); export "
                "the savedmodel format"
            )
        return None


def _type_text(annotation) -> str:
    """A field's declared type as text ("float", "str | None"), whether the module that
    declared it postpones annotations (a string already) or not (a type)."""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def fields_to_json(fields) -> dict:
    """The kind's fields as task.json keys (tuples as lists)."""
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(fields).items()
    }
