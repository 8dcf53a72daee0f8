"""The project's CPU-pretrained model, as the quality experiments start from it.

experiments/sop_vs_nsp.py (`--only sop`) writes it: an ALBERT of 4 layers sharing one block,
H=256, E=64, max_position_embeddings 128, an 8k uncased SentencePiece vocabulary trained on
the shared English corpus, pretrained with SOP and n-gram MLM. Every experiment that takes
`--pretrained_dir` fine-tunes from it with these runner flags, so "from the CPU-pretrained
model" means the same weights, vocabulary and config in each of them.

experiments/pretrained_zh.py writes the Chinese model in the same layout with a WordPiece
vocab.txt in place of spm8k.model; `pretrained_flags` gives the vocabulary flag of whichever
file the directory holds.
"""

from __future__ import annotations

import json
import os


def pretrained_flags(pretrained_dir: str) -> list[str]:
    """The runner flags (config, vocabulary, initial checkpoint) of the model in
    `pretrained_dir`; a one-line error when it is not there yet."""
    init = os.path.join(pretrained_dir, "run_sop", "checkpoints")
    if not os.path.exists(os.path.join(init, "checkpoint")):
        raise SystemExit(
            f"--pretrained_dir {pretrained_dir}: no run_sop/checkpoints; run "
            f"`python -m experiments.sop_vs_nsp --only sop --output_dir {pretrained_dir}` "
            f"(Chinese: `python -m experiments.pretrained_zh --output_dir {pretrained_dir}`) first"
        )
    vocab = os.path.join(pretrained_dir, "vocab.txt")
    spm = os.path.join(pretrained_dir, "spm8k.model")
    if os.path.exists(vocab) and os.path.exists(spm):
        raise SystemExit(f"--pretrained_dir {pretrained_dir}: both vocab.txt and spm8k.model")
    return [
        f"--albert_config_file={os.path.join(pretrained_dir, 'albert_config.json')}",
        f"--vocab_file={vocab}" if os.path.exists(vocab) else f"--spm_model_file={spm}",
        f"--init_checkpoint={init}",
    ]


def pretrained_step(pretrained_dir: str) -> int | None:
    """The step the pretrained model reached (its final_metrics.json), for the report."""
    path = os.path.join(pretrained_dir, "run_sop", "final_metrics.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f).get("step")
