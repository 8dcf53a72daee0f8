"""run_ner.py's data settings (`NerSettings`: the files, what to do, the tag scheme) and the
rules reading them: each split's file (its flag, else DATA_DIR/SPLIT.txt or .jsonl), the
tag scheme the metrics read entities with, the tags' counts (--class_weights auto)."""

from __future__ import annotations

import dataclasses

from data_pipeline.cli import setting
from data_pipeline.io import filesystem

TAG_SCHEMES = ("auto", "none", "IOB2", "IOE2", "IOBES", "BMES", "BILOU")
SPLIT_FLAGS = {"train": "train_file", "dev": "dev_file", "test": "test_file"}


@dataclasses.dataclass(frozen=True)
class NerSettings:
    """The files, what to do, windows, the tag scheme."""

    data_dir: str | None = setting(
        None, "A directory with train/dev/test files (.txt CoNLL columns, or .jsonl)."
    )
    train_file: str | None = setting(
        None,
        "Training file (default DATA_DIR/train.txt, else train.jsonl); the label list is "
        "discovered from it (also for --do_eval/--do_predict alone).",
    )
    dev_file: str | None = setting(None, "Dev file (default DATA_DIR/dev.txt or dev.jsonl).")
    test_file: str | None = setting(None, "Test file (default DATA_DIR/test.txt or test.jsonl).")
    do_train: bool = setting(False, "Fine-tune on the training file.")
    do_eval: bool = setting(False, "Evaluate on the dev file (entity P/R/F1, token accuracy).")
    do_predict: bool = setting(
        False, "Tag the test file into OUTPUT_DIR/predictions.conll (token gold predicted)."
    )
    tag_scheme: str = setting(
        "auto",
        "How entities are read from tags for the metrics: auto (the strict scheme the "
        "labels are written in, data_pipeline.tagging.metrics.detect_scheme; none when they "
        "fit none), none (seqeval's default, lenient, conlleval-compatible), or a strict "
        "scheme.",
        choices=TAG_SCHEMES,
    )
    eval_batch_size: int = setting(32, "Evaluation/prediction batch size.", minimum=1)
    classifier_dropout: float = setting(
        0.1,
        "Dropout on the sequence output before the token head.",
        minimum=0,
        below=1,
        sweepable=True,
    )


def ner_file(s, split: str) -> str | None:
    """The file of `split` (train, dev, test): its setting, else DATA_DIR/SPLIT.txt, else
    DATA_DIR/SPLIT.jsonl when only that exists (None: neither setting nor --data_dir)."""
    given = getattr(s, SPLIT_FLAGS[split])
    if given or not s.data_dir:
        return given
    txt = filesystem.join(s.data_dir, f"{split}.txt")
    jsonl = filesystem.join(s.data_dir, f"{split}.jsonl")
    return jsonl if not filesystem.exists(txt) and filesystem.exists(jsonl) else txt


def resolve_tag_scheme(choice: str, labels: list[str]) -> str | None:
    """The scheme the metrics read entities with (None: seqeval's default mode) for the
    label list: `choice` (--tag_scheme), `auto` detected from the labels. A strict scheme
    the labels are not written in is a ValueError naming the flag."""
    from data_pipeline.tagging.metrics import detect_scheme, entities

    if choice not in TAG_SCHEMES:
        raise ValueError(f"--tag_scheme={choice}: expected one of {', '.join(TAG_SCHEMES)}")
    if choice == "auto":
        return detect_scheme(labels)
    if choice == "none":
        return None
    try:
        entities([labels], choice)
    except ValueError as e:
        raise ValueError(f"--tag_scheme={choice}: the training labels: {e}") from None
    return choice


def tag_counts(labels, sentences) -> list[int]:
    """How often each tag of `labels` tags a training word (--class_weights auto)."""
    index = {tag: i for i, tag in enumerate(labels)}
    found = [0] * len(labels)
    for sentence in sentences:
        for tag in sentence.tags:
            found[index[tag]] += 1
    return found
