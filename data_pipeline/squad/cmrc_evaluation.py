"""Score Chinese span-QA predictions with the CMRC 2018 metric (`run_squad.py
--eval_metric cmrc2018`), as the official script (ymcui/cmrc2018,
squad-style-data/cmrc2018_evaluate.py) defines it.

Why not SQuAD's scoring: SQuAD's F1 counts whitespace-separated words, so a Chinese answer
(no spaces) is one word and F1 equals EM. CMRC 2018 scores on a "mixed segmentation":

  - both strings lowercased and stripped;
  - every CJK character (U+4E00-U+9FA5, the script's range) is a segment of its own;
  - the text between them (English words, numbers) is cut into words by
    `nltk.word_tokenize` in the official script (`_words` below);
  - for F1, the punctuation characters of the script's list (`PUNCTUATION`: a few ASCII
    symbols and the Chinese full-width marks) are dropped first: they are no segment and
    do not end a run of non-CJK characters ("1:30" is the one word "130").

EM: 1 when, with that punctuation removed (and no segmentation), the prediction equals
one of the gold answers. F1: for each gold answer, the longest common *contiguous* run of
segments between prediction and answer, precision = its length / prediction segments,
recall = / answer segments; the best over the gold answers. A question without a
prediction scores 0 and is counted in `skip`. Reported ×100 as the script:
{"exact_match" (its EM), "f1" (F1), "average" ((EM + F1) / 2), "total", "skip"}.

One approximation: `nltk.word_tokenize` (Penn Treebank rules; not a dependency here, and
it needs a downloaded model) is replaced by `_words`: whitespace-separated words, each cut
into numbers with inner "," or "." ("1,000", "3.5"), English clitics ("do" "n't", "it"
"'s"), runs of letters and digits, and single other characters (punctuation). It agrees
with nltk on the words, numbers, clitics and punctuation of Chinese answers; it differs on
abbreviations with periods ("u.s." is four segments here, one in nltk) and on nltk's
rewriting of straight double quotes into `` and ''. EM does not segment: it is exact.
Also as the script: the list holds "……" as one two-character entry, which no single
character equals, so "…" is kept.

CLI:
  python -m data_pipeline.squad.cmrc_evaluation DATA.json PREDICTIONS.json
prints one JSON object on stdout. Bad input exits 2 with "error: ..." on stderr.
"""

from __future__ import annotations

import json
import re
import sys

# The official list (its "……" is one two-character entry: see the module docstring).
PUNCTUATION = frozenset("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")
_CJK = re.compile("[\u4e00-\u9fa5]")
_WORD = re.compile(r"\d+(?:[.,]\d+)+|\w+(?=n't\b)|n't\b|'(?:s|m|d|ll|re|ve)\b|\w+|\S")


def _words(text: str) -> list[str]:
    """The words of a run of non-CJK text (`nltk.word_tokenize`'s role; module docstring)."""
    return _WORD.findall(text)


def mixed_segmentation(text: str, remove_punctuation: bool = False) -> list[str]:
    """Segments of `text`: each CJK character alone, the runs between them cut into words
    (`_words`); with `remove_punctuation`, `PUNCTUATION` characters are dropped first
    (otherwise each is a segment of its own)."""
    segments, run = [], []
    for char in text.lower().strip():
        if remove_punctuation and char in PUNCTUATION:
            continue
        if _CJK.match(char) or char in PUNCTUATION:
            segments.extend(_words("".join(run)))
            run = []
            segments.append(char)
        else:
            run.append(char)
    segments.extend(_words("".join(run)))
    return segments


def without_punctuation(text: str) -> str:
    """`text` lowercased, stripped, its `PUNCTUATION` characters removed (what EM compares)."""
    return "".join(c for c in text.lower().strip() if c not in PUNCTUATION)


def longest_common_run(a: list, b: list) -> int:
    """Length of the longest contiguous run of items common to `a` and `b`."""
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def f1_score(answers: list[str], prediction: str) -> float:
    """The best F1 (0-1) of `prediction` over the gold `answers` (module docstring)."""
    predicted = mixed_segmentation(prediction, remove_punctuation=True)
    best = 0.0
    for answer in answers:
        gold = mixed_segmentation(answer, remove_punctuation=True)
        common = longest_common_run(gold, predicted)
        if common:
            precision, recall = common / len(predicted), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def exact_match(answers: list[str], prediction: str) -> int:
    """1 when `prediction` equals a gold answer once punctuation is removed, else 0."""
    predicted = without_punctuation(prediction)
    return int(any(without_punctuation(a) == predicted for a in answers))


def evaluate(dataset_json: dict, predictions: dict) -> dict:
    """{"exact_match", "f1", "average", "total", "skip"} of `predictions` ({question id:
    answer text}) on a SQuAD-format file's content; missing predictions score 0 (a line
    each on stderr, as the script). A question without gold answers is a ValueError."""
    em = f1 = 0.0
    total = skip = 0
    for article in dataset_json["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                qid = str(qa["id"]).strip()
                answers = [a["text"] for a in qa["answers"]]
                if not answers:
                    raise ValueError(f"question {qid} has no gold answers: CMRC 2018 needs them")
                if qid not in predictions:
                    print(f"Unanswered question: {qid}", file=sys.stderr)
                    skip += 1
                    continue
                f1 += f1_score(answers, str(predictions[qid]))
                em += exact_match(answers, str(predictions[qid]))
    if total == 0:
        raise ValueError("the dataset has no questions")
    em, f1 = 100.0 * em / total, 100.0 * f1 / total
    return {"exact_match": em, "f1": f1, "average": (em + f1) / 2, "total": total, "skip": skip}


def main(argv=None) -> int:
    import argparse

    from data_pipeline.squad.evaluation import InputError, _load_dataset, _load_mapping

    parser = argparse.ArgumentParser(
        prog="python -m data_pipeline.squad.cmrc_evaluation",
        description="Score Chinese span-QA predictions with the CMRC 2018 metric.",
    )
    parser.add_argument("data_file", help="SQuAD-format dataset JSON (e.g. cmrc2018_dev.json)")
    parser.add_argument("pred_file", help="JSON object: question id -> predicted answer text")
    args = parser.parse_args(argv)
    try:
        dataset_json = _load_dataset(args.data_file)
        predictions = _load_mapping(args.pred_file, "string", lambda v: isinstance(v, str))
        try:
            result = evaluate(dataset_json, predictions)
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise InputError(f"{args.data_file}: malformed SQuAD-format data: {e!r}") from e
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
