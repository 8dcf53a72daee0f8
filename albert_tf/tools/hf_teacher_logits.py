"""A `--teacher_logits_file` from a Hugging Face sequence classifier: distillation from any
model saved with `save_pretrained` (BERT, RoBERTa, DeBERTa, ... or an ALBERT of this
project converted with `convert --to transformers`).

    python -m albert_tf.tools.hf_teacher_logits --model DIR --input_file texts.txt \\
        --output_file teacher.jsonl [--text_pair] [--max_seq_length 128] [--batch_size 32]

Input: UTF-8, one example a line (`text_a<TAB>text_b` with --text_pair), the format of
--distill_unlabelled_file: the training texts (e.g. `tail -n +2 train.tsv | cut -f1` of a
single-sentence GLUE task) and any unlabelled ones. Output
(`data_pipeline.classification.teacher_logits`): line 1 the model's labels in its output
order (config.id2label; they must be the task's), then per input line its "text" (and
"text_pair") and the model's "logits", so labelled and unlabelled examples alike are found
by their text. The model tokenizes with its own tokenizer (the student's vocabulary does
not matter) and runs in evaluation mode on the CPU.

Needs torch and transformers, which this project does not depend on (`pip install torch
transformers`); the file is the only thing run_classifier reads.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from data_pipeline.cli import setting
from data_pipeline.command import Command


@dataclasses.dataclass(frozen=True)
class TeacherLogitsSettings:
    """The teacher model, the texts and the file to write."""

    model: str | None = setting(None, "A save_pretrained directory (or Hub name) of a classifier.")
    input_file: str | None = setting(None, "UTF-8 text, one example a line.")
    output_file: str | None = setting(None, "The JSON-lines file to write.")
    text_pair: bool = setting(False, "A line is text_a<TAB>text_b.")
    max_seq_length: int = setting(128, "Tokens per example (truncated beyond).", minimum=2)
    batch_size: int = setting(32, "Examples per forward pass.", minimum=1)


COMMAND = Command(
    "hf_teacher_logits",
    __doc__,
    (TeacherLogitsSettings,),
    required=("model", "input_file", "output_file"),
)


def read_texts(path: str, pairs: bool) -> list[tuple[str, str | None]]:
    """(text_a, text_b or None) per non-empty line; ValueError naming file:line for a pair
    line without exactly one tab."""
    from data_pipeline.io.text_lines import numbered_lines

    out = []
    for n, line in numbered_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t")
        if pairs and len(parts) != 2:
            raise ValueError(f"{path}:{n}: {len(parts)} tab-separated text(s), not two")
        out.append((parts[0], parts[1]) if pairs else (line, None))
    return out


def write_teacher_logits(s) -> int:
    """Writes `s.output_file`; returns the number of examples."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from data_pipeline.io.atomic import write_text

    texts = read_texts(s.input_file, s.text_pair)
    tokenizer = AutoTokenizer.from_pretrained(s.model)
    model = AutoModelForSequenceClassification.from_pretrained(s.model).eval()
    id2label = model.config.id2label
    lines = [json.dumps({"labels": [id2label[i] for i in range(len(id2label))]})]
    for start in range(0, len(texts), s.batch_size):
        batch = texts[start : start + s.batch_size]
        a, b = [t[0] for t in batch], [t[1] for t in batch] if s.text_pair else None
        encoded = tokenizer(
            a, b, padding=True, truncation=True, max_length=s.max_seq_length, return_tensors="pt"
        )
        with torch.no_grad():
            logits = model(**encoded).logits.float().numpy()
        for (text, pair), row in zip(batch, logits):
            line = {"text": text, **({"text_pair": pair} if s.text_pair else {})}
            lines.append(json.dumps({**line, "logits": row.tolist()}, ensure_ascii=False))
    write_text(s.output_file, "\n".join(lines) + "\n")
    return len(texts)


def main(argv=None) -> int:
    """Parse once, write; exit 2 for a bad command line, 1 with one `error:` line."""
    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    try:
        count = write_teacher_logits(s)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {s.output_file}: {count} examples' logits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
