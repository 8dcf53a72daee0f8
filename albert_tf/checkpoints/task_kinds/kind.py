"""`TaskKind`: what one task family contributes: its own task.json fields (a frozen
dataclass), how its Keras model is built from the config, its rules, and one hook per
consumer that would otherwise branch on its name (Hugging Face config in and out, KerasHub,
plain checkpoints, on-device files, the export command's options), with the hooks' shared
pieces. Each family is one module of this package holding one `KIND`; the registry is
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


def any_vocabulary(kind, wordpiece: bool) -> str | None:
    """On-device rule: files of either vocabulary are written."""
    return None


def sentencepiece_only(kind, wordpiece: bool) -> str | None:
    """On-device rule of kinds whose runner windows text with the SentencePiece model the
    file carries (SQuAD, token classification): no file of a WordPiece model."""
    if not wordpiece:
        return None
    return (
        f"on-device {kind.title} files of WordPiece models are not written (their runner "
        "windows text with the SentencePiece model the file carries); export the savedmodel "
        "format"
    )


def no_on_device(kind, wordpiece: bool) -> str | None:
    """On-device rule of a kind with no on-device file."""
    return f"no on-device {kind.title} file is written yet; export the savedmodel format"


@dataclasses.dataclass(frozen=True)
class TransformersHead:
    """A kind's Hugging Face class (`convert --to transformers` writes it, the import reads
    it back). architecture: config.json's `architectures` entry; pooler: whether that class
    has the pooler (AlbertForQuestionAnswering and AlbertForTokenClassification do not:
    none is written, none is expected); config_out: the kind's fields → its config.json
    keys (label maps, problem_type), or ValueError (one line) for fields the class cannot
    hold; task_in: a config.json dict → the kind's task.json fields (labels, ...)."""

    architecture: str
    pooler: bool = True
    config_out: Callable = lambda fields: {}
    task_in: Callable = lambda hf: {}


def config_labels(hf: dict) -> list[str]:
    """A Hugging Face config's labels in id order (`id2label`; absent: LABEL_0.. of
    num_labels, default 2, as transformers names them)."""
    id2label = hf.get("id2label") or {str(i): f"LABEL_{i}" for i in range(hf.get("num_labels", 2))}
    return [id2label[k] for k in sorted(id2label, key=int)]


def label_maps(labels) -> dict:
    """config.json's id2label and label2id of `labels` (in the head's output order)."""
    return {
        "id2label": {str(i): label for i, label in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
    }


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """One task family: its fields and model, and one hook per consumer, so that shared
    code asks the kind instead of branching on its name.

    name: its task.json `kind` ("classifier", ...); title: how messages name it.
    fields: the frozen dataclass of its own task.json fields (each with a default).
    build_model: (AlbertConfig, fields) → the unbuilt Keras model, dropout 0 (inference,
      conversion, serving).
    check: fields → None, or ValueError with a one-line reason (e.g. labels missing).
    any_checkpoint: None when only a fine-tuned model directory holds the kind; else the
      kind is served from any checkpoint (the encoder, fill-mask) and this checks what
      the checkpoint restored: (components restored, its path) → None or ValueError.
    on_device: (kind, wordpiece) → why no on-device (LiteRT) file of it is written for that
      vocabulary, or None (`any_vocabulary`, `sentencepiece_only`, `no_on_device`).
    transformers: its `TransformersHead`, None when Hugging Face has no class for it.
    keras_hub: (keras_hub, backbone, model, task, vocabulary) → (the preset to save, the
      heads not written), None when KerasHub has nothing for it.
    export_options: its fields the export command (`albert_tf.serving.export`) may set.
    from_task: (TaskInfo of another kind's directory, its path) → this kind's TaskInfo, or
      ValueError: a kind exported from another kind's directory (zero-shot from an NLI
      classifier); None: only from its own.
    pipeline_tag: its Hugging Face task name, as a model card's `pipeline_tag` and
      model-index `task.type` ("text-classification", ...).
    """

    name: str
    title: str
    fields: type
    build_model: Callable
    check: Callable = lambda fields: None
    any_checkpoint: Callable | None = None
    on_device: Callable = any_vocabulary
    transformers: TransformersHead | None = None
    keras_hub: Callable | None = None
    export_options: tuple[str, ...] = ()
    from_task: Callable | None = None
    pipeline_tag: str | None = None

    def __post_init__(self):
        unknown = sorted(set(self.export_options) - set(self.field_names()))
        if unknown:
            raise ValueError(f"{self.name}: export option {unknown[0]!r} is not one of its fields")

    @property
    def finetuned(self) -> bool:
        """Whether a fine-tuned model directory (task.json) may hold it."""
        return self.any_checkpoint is None

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
        return self.on_device(self, wordpiece)

    def transformers_head(self) -> TransformersHead:
        """Its Hugging Face class; ValueError (one line naming the kind) when it has none."""
        if self.transformers is None:
            raise ValueError(f"the {self.title} kind has no Hugging Face class")
        return self.transformers

    def keras_hub_preset(self, keras_hub, backbone, model, task, vocabulary):
        """(preset, heads not written) of the `keras_hub` hook; ValueError (one line naming
        the kind) when KerasHub has nothing for it."""
        if self.keras_hub is None:
            raise ValueError(f"the {self.title} kind has no KerasHub preset")
        return self.keras_hub(keras_hub, backbone, model, task, vocabulary)


def backbone_only(*heads: str) -> Callable:
    """The `keras_hub` hook of a kind KerasHub has no task model for: the backbone alone,
    `heads` reported not written."""
    return lambda keras_hub, backbone, model, task, vocabulary: (backbone, list(heads))


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
