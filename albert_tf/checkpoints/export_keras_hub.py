"""This project's models → KerasHub preset directories.

    python -m albert_tf.checkpoints.convert --to keras_hub --input CKPT_OR_FINETUNED_DIR \
        --output_dir DIR [--spm_model_file M]

Writes a preset that `keras_hub.models.AlbertBackbone.from_preset(DIR)` loads (and, for a
fine-tuned classifier, `keras_hub.models.AlbertTextClassifier.from_preset(DIR)` with its
head and a preprocessor at the model's sequence length); the SentencePiece model travels
in it as the tokenizer's vocabulary. Needs keras-hub installed (not a dependency of this
project: only this export uses it).

The route: the backbone's Hugging Face directory of `export_transformers` (the one name
mapping), read by KerasHub's own Hugging Face loader, then the task kind's `keras_hub` hook
(albert_tf.checkpoints.task_kinds: a classifier's AlbertTextClassifier gets its head) and
KerasHub's `save_to_preset`. A pretraining checkpoint's masked-LM head (with or without
the SOP head: Model Garden and TF-Hub v2 imports have none) becomes KerasHub's
AlbertMaskedLM (`masked_lm`). What has no KerasHub counterpart is not written and is named
in the report: the SOP head (KerasHub has none), multiple choice, SQuAD and
token-classification heads (no ALBERT task models for them), and activations other than
the tanh GELU (KerasHub's AlbertBackbone has no option).

WordPiece models (vocab.txt: a fine-tuned directory holding one, or `--vocab_file`) are
refused: KerasHub's AlbertTokenizer reads SentencePiece models only, and its BertTokenizer
lowercases by NFKC case folding ("，" → ",", "２" → "2"), not as BERT's basic tokenizer, so
a preset would feed the model other ids than it was trained on (85% of ChnSentiCorp's dev
lines differ with a Chinese vocab.txt). `--to transformers` writes such models with
Hugging Face's BertTokenizer, which tokenizes as ours.
"""

from __future__ import annotations

import os
import tempfile

from albert_tf.checkpoints.own import CheckpointError


def export_keras_hub(
    input_path: str,
    output_dir: str,
    albert_config_file: str | None = None,
    tokenizer=None,
    command: str | None = None,
) -> dict:
    """Writes the preset (see the module docstring) and its model card (README.md); returns
    a report {task, written, not_written, vocabulary}. `tokenizer` (a TokenizerSpec): the
    vocabulary to ship, else the fine-tuned directory's; `command`: the one the card
    names."""
    try:
        import keras_hub
    except ImportError:
        raise CheckpointError("--to keras_hub needs keras-hub: pip install keras-hub") from None
    from albert_tf.checkpoints.export_transformers import (
        _our_model,
        chosen_vocabulary,
        transformers_files,
        write_weights,
    )
    from albert_tf.checkpoints.fresh_output import check_fresh_output
    from albert_tf.checkpoints.model_card import write_converted_card
    from albert_tf.modeling.encoder import AlbertEncoder
    from data_pipeline.io.locks import output_lock

    model, task, found, absent = _our_model(input_path, albert_config_file)
    chosen = chosen_vocabulary(found, tokenizer)
    if chosen is not None and chosen.is_wordpiece:
        raise CheckpointError(
            f"{chosen.path}: a WordPiece vocabulary; KerasHub's AlbertTokenizer reads "
            'SentencePiece models only and its BertTokenizer folds case by NFKC ("，" → '
            '","), unlike BERT\'s: no KerasHub preset would tokenize as the model was trained '
            "(use --to transformers)"
        )
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    if encoder.config.hidden_act != "gelu":
        raise CheckpointError(
            f"hidden_act={encoder.config.hidden_act!r}: KerasHub's AlbertBackbone computes "
            f"only the tanh GELU (our 'gelu')"
        )
    vocabulary = chosen.path if chosen is not None else None
    kind = task.kind if task else ("pretraining" if encoder is not model else "encoder")
    with tempfile.TemporaryDirectory(prefix="albert-hf-") as hf_dir:
        # The backbone as Hugging Face weights, for KerasHub's own loader.
        write_weights(hf_dir, *transformers_files(encoder, None))
        backbone = keras_hub.models.AlbertBackbone.from_preset(hf_dir)
        if task is None and encoder is not model:  # the masked-LM head: AlbertMaskedLM
            preset = masked_lm(keras_hub, backbone, model)
            not_written = [h for h in ("sop_head",) if h not in absent]
        elif task is None:
            preset, not_written = backbone, []
        else:  # the kind's task model with its head, or the backbone and what stays behind
            try:
                preset, not_written = task.task_kind.keras_hub_preset(
                    keras_hub, backbone, model, task, vocabulary
                )
            except ValueError as e:
                raise CheckpointError(str(e)) from None
        with output_lock(output_dir, "albert_tf.checkpoints.convert --to keras_hub"):
            check_fresh_output(output_dir)
            preset.save_to_preset(output_dir)
            if vocabulary and getattr(preset, "preprocessor", None) is None:
                keras_hub.models.AlbertTokenizer(proto=vocabulary).save_to_preset(output_dir)
            written = f"A KerasHub preset ({type(preset).__name__})"
            write_converted_card(output_dir, input_path, written, command)
    return {
        "task": kind,
        "written": type(preset).__name__,
        "not_written": not_written,
        "vocabulary": os.path.basename(vocabulary) if vocabulary else None,
        "output_dir": output_dir,
    }


def masked_lm(keras_hub, backbone, model):
    """KerasHub's AlbertMaskedLM on `backbone` with the masked-LM head of our pretraining
    `model` (its dense, LayerNorm and output bias; the decoder is the tied word table, as
    ours). KerasHub's MaskedLMHead normalizes with epsilon 1e-5, not ALBERT's 1e-12: its
    logits differ from ours by a few 1e-5."""
    from albert_tf.checkpoints.official import official_name_map

    preset = keras_hub.models.AlbertMaskedLM(backbone)
    head, table = preset.masked_lm_head, official_name_map(model)
    for target, name in (
        (head._intermediate_dense.kernel, "transform/dense/kernel"),
        (head._intermediate_dense.bias, "transform/dense/bias"),
        (head._intermediate_layer_norm.gamma, "transform/LayerNorm/gamma"),
        (head._intermediate_layer_norm.beta, "transform/LayerNorm/beta"),
        (head._bias, "output_bias"),
    ):
        target.assign(table[f"cls/predictions/{name}"].variable.numpy())
    return preset
