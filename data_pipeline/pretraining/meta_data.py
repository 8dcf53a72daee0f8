"""meta_data.json, the records' own description: what the writer puts in (`job_meta_data`)
and the settings a pretraining run reads its records with (`pretraining_data`).

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

from data_pipeline import documents as documents_lib
from data_pipeline.io import filesystem
from data_pipeline.pretraining import chinese_words
from data_pipeline.pretraining.data_config import FORMAT_VERSION, META_FILE, DataConfig
from data_pipeline.pretraining.instances import InstanceStats
from data_pipeline.records import feature_lengths, read_records
from data_pipeline.tokenization.spec import SENTENCEPIECE

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


def job_meta_data(
    config: DataConfig,
    files: list[str],
    shard_stats: list[dict],
    tokenizer_sha256: str,
    vocab_size: int,
) -> dict:
    """The writer's side: meta_data.json of a complete job: the settings and the sums of
    every shard's statistics (`shard_stats` in shard order). Deterministic: no times, no
    worker counts.
    "tokenizer" says which tokenizer wrote the ids ({kind, file (base name), sha256});
    SentencePiece jobs also keep the older "spm_model_file" and "spm_sha256".
    "zh_whole_word_mask" (only when on) is the segmenter's identity (`chinese_words`).
    A ValueError when no instances were made (an empty dataset must not look finished)."""
    read = documents_lib.ReadStats()
    made = InstanceStats()
    for s in shard_stats:
        read.add(documents_lib.ReadStats(**s["read"]))
        made.add(InstanceStats(**s["instances_detail"]))
    units = sum(made.ngrams)
    labels = sum(made.labels)
    masked = made.masked_tokens
    settings = config.settings()
    for key in ("output_dir", "input_file"):
        settings.pop(key)
    meta = {
        "format_version": FORMAT_VERSION,
        "instances": made.instances,
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "dynamic_masking": config.dynamic_masking,
        "sentence_order": config.sentence_order,
        "features": feature_lengths(
            config.max_seq_length, config.max_predictions_per_seq, config.dynamic_masking
        ),
        "shards": [{"file": s["shard"], "instances": s["instances"]} for s in shard_stats],
        "tokenizer": {
            "kind": config.tokenizer.kind,
            "file": os.path.basename(config.tokenizer.path),
            "sha256": tokenizer_sha256,
        },
        "vocab_size": vocab_size,
        "settings": settings,
        "input": {"files": files, **dataclasses.asdict(read)},
        "documents": {
            "documents": made.documents,
            "sentences": made.sentences,
            "empty_sentences": made.empty_sentences,
            "long_sentences_split": made.long_sentences_split,
        },
        "instance_creation": {
            "target_draws": made.target_draws,
            "short_targets": made.short_targets,
            "short_target_fraction": made.short_targets / max(made.target_draws, 1),
            "short_target_instances": made.short_target_instances,
            "single_sentence_chunks_split": made.single_sentence_chunks_split,
            "single_sentence_chunks_dropped": made.single_sentence_chunks_dropped,
            "nsp_random_segments": made.nsp_random_segments,
            "truncated_tokens": made.truncated_tokens,
            "tokens": made.instance_tokens,
        },
        "sentence_order_labels": {
            "0": made.labels[0],
            "1": made.labels[1],
            "fraction_1": made.labels[1] / max(labels, 1),
        },
    }
    if config.tokenizer.kind == SENTENCEPIECE:
        meta["spm_model_file"] = os.path.basename(config.tokenizer.path)
        meta["spm_sha256"] = tokenizer_sha256
    if config.zh_whole_word_mask:
        meta["zh_whole_word_mask"] = chinese_words.identity()
    if not config.dynamic_masking:
        meta["masking"] = {
            "masked_tokens": masked,
            "masked_fraction": masked / max(made.instance_tokens, 1),
            "ngram_units": {str(i + 1): c for i, c in enumerate(made.ngrams)},
            "ngram_fraction": [c / max(units, 1) for c in made.ngrams],
            "replacements": {
                "mask": made.replacements[0],
                "random": made.replacements[1],
                "unchanged": made.replacements[2],
            },
            "replacement_fraction": [c / max(masked, 1) for c in made.replacements],
        }
    if meta["instances"] == 0:
        raise ValueError(
            f"no instances were made: {len(files)} input file(s) "
            f"({meta['input']['empty_files']} empty or blank) held "
            f"{meta['documents']['documents']} document(s) with text; no {META_FILE} written"
        )
    return meta


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


def largest_token_id(path: str, records: int = 64) -> int | None:
    """The largest token id (input_ids, masked_lm_ids) of the first `records` records of
    `path` (None: an empty file): what a model's vocabulary must cover when no
    meta_data.json says which vocabulary wrote them."""
    import itertools

    import tensorflow as tf

    largest = None
    for raw in itertools.islice(read_records(path), records):
        feature = tf.train.Example.FromString(raw).features.feature
        for name in ("input_ids", "masked_lm_ids"):
            if name in feature and feature[name].int64_list.value:
                top = max(feature[name].int64_list.value)
                largest = top if largest is None else max(largest, top)
    return largest


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
