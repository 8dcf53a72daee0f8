"""The settings a pretraining run reads its records with, from the records' own description.

create_pretraining_data writes `meta_data.json` beside the shards: sequence length,
predictions per sequence, dynamic masking, sentence order, the tokenizer (kind:
SentencePiece or WordPiece, file name, sha256) and the masking options. That file is the
source of truth: `pretraining_data` reads it (every directory's, when the shards lie in
several) and returns the settings. A setting the caller gives as well (a runner's flag)
may only repeat it: a contradiction is a ValueError of one line naming the file. Records
without meta_data.json (the official tool's) are described by their first record (lengths)
and the caller (dynamic masking).

The first record of every file is checked against the settings too, so that a shard of
another length is named here rather than failing as a parse error inside tf.data.
"""

from __future__ import annotations

import dataclasses
import json
import os

from data_pipeline.io import filesystem
from data_pipeline.pretraining.create_pretraining_data import META_FILE
from data_pipeline.records import read_records

# The settings a caller may give and the records must agree with; the records' own
# feature lengths show the first two.
LENGTHS = ("max_seq_length", "max_predictions_per_seq")
CHECKED = LENGTHS + ("dynamic_masking", "do_lower_case")
# meta_data.json "settings" that configure dynamic masking as the writer masked.
MASKING_OPTIONS = ("masked_lm_prob", "ngram", "favor_shorter_ngram", "do_whole_word_mask")
# Summarized into a run's run_config.json.
SUMMARY = (
    "instances",
    "sentence_order",
    "dynamic_masking",
    "spm_sha256",
    "tokenizer",
    "zh_whole_word_mask",
)
DEFAULT_MAX_PREDICTIONS = 20  # dynamic masking of records that do not say (official value)


@dataclasses.dataclass(frozen=True)
class PretrainingData:
    """How to read pretraining records.

    max_seq_length, max_predictions_per_seq: feature lengths ([S], [P] per record).
    dynamic_masking: the records carry no masks; the input pipeline draws them.
    do_lower_case: the casing the records were tokenized with (None: not known).
    sentence_order: "sop", "nsp" or "none" (no sentence-order loss).
    masking: NgramMasker options the records were written with (dynamic masking).
    spm_sha256: the SentencePiece model the records were written with (None: not known
      or WordPiece).
    tokenizer: {kind, sha256, file?} of the tokenizer the records were written with (None:
      not known; records of before WordPiece have spm_sha256 only).
    meta_file: the meta_data.json these come from (None: the records alone).
    summary: the parts of meta_data.json a run records in its run_config.json.
    """

    max_seq_length: int
    max_predictions_per_seq: int
    dynamic_masking: bool
    do_lower_case: bool | None = None
    sentence_order: str = "sop"
    masking: dict = dataclasses.field(default_factory=dict)
    spm_sha256: str | None = None
    tokenizer: dict | None = None
    meta_file: str | None = None
    summary: dict | None = None

    @property
    def sop_weight(self) -> float:
        """Weight of the sentence-order loss: 0 for records written without pairs."""
        return 0.0 if self.sentence_order == "none" else 1.0

    def check_vocabulary(self, tokenizer, flag: str = "--spm_model_file") -> None:
        """ValueError unless `tokenizer` is the one the records were written with, same
        kind and same file bytes (masks drawn or text exported with another vocabulary
        are wrong)."""
        from data_pipeline.tokenization.spec import tokenizer_kind

        if not self.tokenizer:
            return
        names = {"sentencepiece": "SentencePiece model", "wordpiece": "WordPiece vocab.txt"}
        kind, sha = self.tokenizer.get("kind", "sentencepiece"), self.tokenizer.get("sha256")
        given = tokenizer_kind(tokenizer)
        if kind != given:
            raise ValueError(
                f"{self.meta_file}: the records were written with a {names.get(kind, kind)}, "
                f"but {flag} is a {names[given]}"
            )
        if sha and tokenizer.checksum != sha:
            raise ValueError(
                f"{self.meta_file}: the records were written with a "
                f"{names[given]} of sha256 {sha[:16]}..., "
                f"but {flag} has sha256 {tokenizer.checksum[:16]}..."
            )


def read_meta_data(directory: str) -> tuple[str, dict] | None:
    """(path, content) of `directory`/meta_data.json, or None when there is none."""
    path = os.path.join(directory, META_FILE)
    if not filesystem.exists(path):
        return None
    try:
        with filesystem.open(path) as f:
            return path, json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None


def _first_record(path: str):
    """The features of the first record of `path` (None: an empty file)."""
    import tensorflow as tf

    first = next(read_records(path), None)
    return None if first is None else tf.train.Example.FromString(first).features.feature


def _say(key: str, value) -> str:
    if isinstance(value, bool):
        return f"--{'' if value else 'no'}{key}"
    return f"--{key}={value}"


def pretraining_data(files: list[str], **given) -> PretrainingData:
    """The settings of the records `files` (module docstring). `given`: settings of
    CHECKED the caller has (None: not given); each must agree with every meta_data.json
    beside the files and with the files' first records."""
    unknown = set(given) - set(CHECKED)
    if unknown:
        raise TypeError(f"unknown settings {sorted(unknown)}; expected some of {CHECKED}")
    metas = []
    for directory in dict.fromkeys(os.path.dirname(f) for f in files):
        found = read_meta_data(directory)
        if found:
            metas.append(found)
    # The value each setting must have, and who says so (for the error messages).
    want = {k: (v, _say(k, v)) for k, v in given.items() if v is not None}
    for path, meta in metas:
        settings = {**meta.get("settings", {}), **meta}
        for key in CHECKED:
            if key not in settings:
                continue
            value = settings[key]
            if key not in want:
                want[key] = (value, f"{path} says {key}={value}")
            elif want[key][0] != value:
                if key in LENGTHS:  # records carry their lengths: name one that differs
                    _check_records(files, want)
                raise ValueError(f"{path}: {key}={value}, but {want[key][1]}")
    _check_records(files, want)
    lengths = _lengths_of_first(files, want)
    main = metas[0][1] if metas else {}
    settings = main.get("settings", {})
    return PretrainingData(
        max_seq_length=lengths["max_seq_length"],
        max_predictions_per_seq=lengths["max_predictions_per_seq"],
        dynamic_masking=want.get("dynamic_masking", (False,))[0],
        do_lower_case=want.get("do_lower_case", (None,))[0],
        sentence_order=main.get("sentence_order", "sop"),
        masking={k: settings[k] for k in MASKING_OPTIONS if k in settings},
        spm_sha256=main.get("spm_sha256"),
        tokenizer=main.get("tokenizer")
        or (
            {"kind": "sentencepiece", "sha256": main["spm_sha256"]}
            if "spm_sha256" in main
            else None
        ),
        meta_file=metas[0][0] if metas else None,
        summary={k: main[k] for k in SUMMARY if k in main} if metas else None,
    )


def _lengths_of_first(files, want) -> dict:
    """max_seq_length and max_predictions_per_seq: as wanted, else the first record's."""
    out = {k: want[k][0] for k in LENGTHS if k in want}
    if len(out) < 2:
        feature = next((f for f in map(_first_record, files) if f is not None), None)
        if feature is None:
            raise ValueError(
                f"no record in {files[0]}{' ...' if len(files) > 1 else ''} "
                f"to read max_seq_length from (and no {META_FILE})"
            )
        out.setdefault("max_seq_length", len(feature["input_ids"].int64_list.value))
        out.setdefault(
            "max_predictions_per_seq",
            len(feature["masked_lm_positions"].int64_list.value)
            if "masked_lm_positions" in feature
            else DEFAULT_MAX_PREDICTIONS,
        )
    return out


def _check_records(files: list[str], want: dict) -> None:
    """The first record of every file has the wanted lengths (a ValueError naming the file
    and who wants the length otherwise)."""
    dynamic = want.get("dynamic_masking", (False,))[0]
    names = {"input_ids": "max_seq_length"}
    if not dynamic:
        names["masked_lm_positions"] = "max_predictions_per_seq"
    for path in files:
        feature = _first_record(path)
        if feature is None:
            continue
        for name, key in names.items():
            if name not in feature:
                raise ValueError(
                    f"{path}: records have no {name!r} feature"
                    + (
                        " (written with --dynamic_masking? then pass it here)"
                        if name.startswith("masked_lm")
                        else ""
                    )
                )
            got = len(feature[name].int64_list.value)
            if key in want and got != want[key][0]:
                raise ValueError(f"{path}: {name} has length {got}, but {want[key][1]}")


def find_corrupt(files: list[str]) -> str | None:
    """After a DataLossError: the file and record that fail their CRC (None: none does)."""
    for path in files:
        try:
            for _ in read_records(path):
                pass
        except ValueError as e:
            return str(e)
    return None
