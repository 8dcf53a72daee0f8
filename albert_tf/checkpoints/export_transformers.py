"""This project's models → Hugging Face `save_pretrained` directories.

    python -m albert_tf.checkpoints.convert --to transformers --input CKPT_OR_FINETUNED_DIR \
        --output_dir DIR [--albert_config_file F] [--spm_model_file M | --vocab_file V]

Writes DIR/config.json (with `architectures`), DIR/model.safetensors, and, with a
vocabulary, DIR/spiece.model + tokenizer_config.json + tokenizer.json, which transformers'
`Albert*.from_pretrained(DIR)` and `AutoTokenizer.from_pretrained(DIR)` load with no
missing or unexpected keys; tokenizer.json (data_pipeline.tokenization.tokenizer_json) makes
the fast tokenizer give our ids, which transformers' own conversion of spiece.model does
not. A WordPiece model (a fine-tuned directory holding vocab.txt,
or `--vocab_file`) gets DIR/vocab.txt + a tokenizer_config.json naming `BertTokenizer`,
the layout of the Chinese ALBERTs on the Hugging Face hub (AlbertModel weights read with a
BertTokenizer): `AutoTokenizer.from_pretrained(DIR)` loads it and gives our ids.

  a fine-tuned model directory  its kind's class and config keys (the kind's
                                `TransformersHead`: AlbertForSequenceClassification with
                                id2label and problem_type, AlbertForMultipleChoice,
                                AlbertForQuestionAnswering and AlbertForTokenClassification,
                                neither with a pooler: not written)
  a pretraining checkpoint      → AlbertForPreTraining (MLM decoder tied to the embeddings);
                                with the masked-LM head but no SOP head (every Model Garden
                                and TF-Hub v2 import) → AlbertForMaskedLM, whose class has
                                no pooler (reported not written)
  an encoder checkpoint         → AlbertModel

Names go through the official TF1 names (`official_name_map`, then
`transformers.official_to_transformers`), the same table the import uses backwards.
"""

from __future__ import annotations

import os
import shutil

import numpy as np


def _our_model(input_path: str, albert_config_file=None):
    """(model, TaskInfo or None, the fine-tuned directory's TokenizerSpec or None, absent)
    from a fine-tuned model directory or a checkpoint: the pretraining model when the
    checkpoint has the masked-LM head, with or without the SOP head (Model Garden's
    pretrainer has none, so no Model Garden or TF-Hub v2 import does), else the encoder.
    `absent`: the pretraining model's heads the checkpoint does not hold, at random
    initialization in `model` and never exported."""
    from albert_tf.checkpoints.export_encoder import checkpoint_config
    from albert_tf.checkpoints.finetuned import load_finetuned
    from albert_tf.checkpoints.loading import load_checkpoint
    from albert_tf.checkpoints.task_info import is_finetuned_dir
    from albert_tf.modeling.encoder import AlbertEncoder
    from albert_tf.modeling.models import AlbertPretrainer

    if is_finetuned_dir(input_path):
        model, task = load_finetuned(input_path)
        return model, task, task.tokenizer(), ()
    config, _ = checkpoint_config(input_path, albert_config_file)
    model = AlbertPretrainer(config)
    model.build()
    report = load_checkpoint(model, input_path)
    absent = tuple(h for h in ("mlm_head", "sop_head") if h in report.missing)
    if "mlm_head" in absent:
        model = AlbertEncoder(config)
        model.build()
        load_checkpoint(model, input_path)
        absent = ()
    return model, None, None, absent


def chosen_vocabulary(found, given=None):
    """The TokenizerSpec to ship: the `given` one (the command line's), else the fine-tuned
    directory's `found`; None when neither."""
    return given if given is not None else found


def transformers_files(model, task, absent=()) -> tuple[dict, dict]:
    """(config.json dict, state dict of numpy arrays) of `model` (the task model of the
    TaskInfo `task`, or a bare model when None) for Hugging Face. `absent`: heads of a
    pretraining model its checkpoint does not hold (`_our_model`): without the SOP head it
    is AlbertForMaskedLM, which has no pooler either."""
    from albert_tf.checkpoints.official import official_name_map
    from albert_tf.checkpoints.own import CheckpointError
    from albert_tf.checkpoints.transformers import (
        config_to_transformers,
        official_to_transformers,
    )
    from albert_tf.modeling.encoder import AlbertEncoder

    head, head_config = None, {}
    if task is not None:
        try:  # (the kind's class, and its config keys: a one-line refusal otherwise)
            head = task.task_kind.transformers_head()
            head_config = head.config_out(task.details)
        except ValueError as e:
            raise CheckpointError(str(e)) from None
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    skipped = set(absent) | set(not_written_to_transformers(model, task, absent))
    if head and not head.pooler:
        skipped.add("pooler")  # AlbertForQuestionAnswering, AlbertForTokenClassification
    official = {}
    for name, entry in official_name_map(model).items():
        if entry.component in skipped:
            continue
        value = entry.variable.numpy().astype(np.float32)
        official[name] = value.T if entry.transpose else value
    heads = not isinstance(model, AlbertEncoder)
    config = config_to_transformers(encoder.config)
    if task is None:
        bare = "AlbertForMaskedLM" if "sop_head" in absent else "AlbertForPreTraining"
        config["architectures"] = [bare if heads else "AlbertModel"]
    else:
        config["architectures"] = [head.architecture]
        config.update(head_config)
    return config, official_to_transformers(official)


def not_written_to_transformers(model, task, absent=()) -> list[str]:
    """The parts of a bare pretraining model Hugging Face's class for it cannot hold: a
    masked-LM-only model (no SOP head) is AlbertForMaskedLM, which has no pooler."""
    return ["pooler"] if task is None and "sop_head" in absent else []


def write_weights(directory: str, config: dict, state: dict) -> None:
    """config.json and model.safetensors of `transformers_files` into `directory`, each
    written under a temporary name and renamed."""
    from safetensors.numpy import save_file

    from data_pipeline.io.atomic import write_json

    tmp = os.path.join(directory, f".model.safetensors.tmp{os.getpid()}")
    save_file(state, tmp, metadata={"format": "pt"})
    os.replace(tmp, os.path.join(directory, "model.safetensors"))
    write_json(os.path.join(directory, "config.json"), config, indent=2)


def export_transformers(
    input_path: str,
    output_dir: str,
    albert_config_file: str | None = None,
    tokenizer=None,
    command: str | None = None,
) -> dict:
    """Writes the Hugging Face directory (see the module docstring) under `output_dir`'s
    lock, each file atomically, its model card (README.md) last; returns a report
    {architecture, tensors, vocabulary}. `tokenizer` (a TokenizerSpec): the vocabulary to
    ship, else the fine-tuned directory's; `command`: the one the card names."""
    from albert_tf.checkpoints.fresh_output import check_fresh_output
    from albert_tf.checkpoints.model_card import write_converted_card
    from data_pipeline.io.atomic import write_json, write_text
    from data_pipeline.io.locks import output_lock

    model, task, found, absent = _our_model(input_path, albert_config_file)
    vocabulary = chosen_vocabulary(found, tokenizer)
    wordpiece = vocabulary is not None and vocabulary.is_wordpiece
    if wordpiece:
        from data_pipeline.tokenization.wordpiece import read_vocab

        read_vocab(vocabulary.path)  # a BERT vocab.txt, or a one-line error naming the file
    config, state = transformers_files(model, task, absent)
    lower = True if task is None else task.do_lower_case
    shipped = None if vocabulary is None else ("vocab.txt" if wordpiece else "spiece.model")
    with output_lock(output_dir, "albert_tf.checkpoints.convert --to transformers"):
        check_fresh_output(output_dir)
        write_weights(output_dir, config, state)
        if shipped:
            tmp = os.path.join(output_dir, f".{shipped}.tmp")
            shutil.copyfile(vocabulary.path, tmp)
            os.replace(tmp, os.path.join(output_dir, shipped))
            accents = vocabulary.keep_accents
            write_json(
                os.path.join(output_dir, "tokenizer_config.json"),
                _tokenizer_config(wordpiece, lower, config["max_position_embeddings"], accents),
                indent=2,
            )
            if not wordpiece:
                fast = _fast_tokenizer(vocabulary.path, lower, accents)
                if fast:
                    write_text(os.path.join(output_dir, "tokenizer.json"), fast)
                    shipped += " + tokenizer.json"
                else:
                    shipped += " (no tokenizer.json: not a Unigram SentencePiece model)"
        architecture = config["architectures"][0]
        written = f"A Hugging Face transformers directory ({architecture})"
        write_converted_card(output_dir, input_path, written, command)
    return {
        "architecture": config["architectures"][0],
        "tensors": len(state),
        "vocabulary": shipped,
        "output_dir": output_dir,
        "not_written": not_written_to_transformers(model, task, absent),
    }


def _fast_tokenizer(spm_path: str, lower: bool, keep_accents: bool) -> str | None:
    """tokenizer.json for the SentencePiece model at `spm_path` (data_pipeline.tokenization.
    tokenizer_json: transformers' fast tokenizer then gives our ids, where its own conversion
    of spiece.model does not); None for a file that is not a Unigram SentencePiece model
    (transformers converts spiece.model itself then, if it can)."""
    from data_pipeline.io.filesystem import read_bytes
    from data_pipeline.tokenization.tokenizer_json import is_unigram, tokenizer_json

    model = read_bytes(spm_path)  # (local or gs:// / s3:// / hdfs://, as every path)
    return tokenizer_json(model, lower, keep_accents) if is_unigram(model) else None


def _tokenizer_config(wordpiece: bool, lower: bool, positions: int, keep_accents=False) -> dict:
    """tokenizer_config.json: AlbertTokenizer (spiece.model) with ALBERT's normalization,
    or BertTokenizer (vocab.txt) with BERT's basic tokenization: CJK characters apart,
    accents stripped exactly when lowercasing (strip_accents None), as `WordPieceTokenizer`.
    model_max_length is the model's positions, so that transformers' pipelines truncate (or
    window, given a stride) a longer text instead of failing in the position embeddings."""
    if wordpiece:
        return {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": lower,
            "tokenize_chinese_chars": True,
            "strip_accents": None,
            "model_max_length": positions,
        }
    return {
        "tokenizer_class": "AlbertTokenizer",
        "do_lower_case": lower,
        "keep_accents": keep_accents,
        "remove_space": True,
        "model_max_length": positions,
    }
