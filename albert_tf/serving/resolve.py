"""Model resolution for an export, done once: `resolve(kind, init_checkpoint, ...)` reads
the fine-tuned model directory's task.json once, restores the weights once, builds the
Python tokenizer once, and hands one `ResolvedModel` to both the SavedModel writer and the
LiteRT writer (neither reads a file or another module's attributes for its settings).

`init_checkpoint` is a fine-tuned model directory (a runner's `--export_dir`,
`albert_tf.checkpoints.finetuned`), whose task.json brings the labels, sequence length,
casing and vocabulary, or, for the encoder, any checkpoint (a pretraining run's is checked
against the tokenizer its records were written with, recorded in its run_config.json, and
takes that run's sequence length and casing unless given).
"""

from __future__ import annotations

import dataclasses

from albert_tf.checkpoints.task_info import TaskInfo, is_finetuned_dir
from albert_tf.checkpoints.task_kinds import task_kind
from albert_tf.serving.compute_dtype import dtype_policy
from data_pipeline.tokenization.spec import TokenizerSpec

DEFAULT_MAX_SEQ_LENGTH = 128  # a checkpoint that records none


@dataclasses.dataclass(frozen=True)
class ResolvedModel:
    """Everything an export needs, resolved once.

    task: the TaskInfo (a fine-tuned directory's, with any given SQuAD settings applied;
      for the encoder, its own); model: the restored Keras model (the task model, or
      AlbertEncoder); tokenizer: the TokenizerSpec (file, kind, casing) and
      python_tokenizer its built tokenizer; max_seq_length: the serving sequence length;
      finetuned_dir: the fine-tuned model directory the weights came from (kept in the
      SavedModel's assets.extra), or None."""

    task: TaskInfo
    model: object
    tokenizer: TokenizerSpec
    python_tokenizer: object
    max_seq_length: int
    finetuned_dir: str | None = None

    def text_tokenizer(self):
        """A new in-graph tokenizer module (a SavedModel tracks its own) over the one
        Python tokenizer."""
        from albert_tf.serving.text_tokenizer import TextTokenizer

        return TextTokenizer(self.tokenizer, self.python_tokenizer)

    def in_dtype(self, dtype: str) -> ResolvedModel:
        """The same, its model computing in `dtype` ("float32" or "bfloat16": the model
        rebuilt under that policy with the same weights, `compute_dtype.rebuilt`)."""
        from albert_tf.serving.compute_dtype import rebuilt

        return dataclasses.replace(self, model=rebuilt(self.task, self.model, dtype))


def on_device_refusal(kind: str, tokenizer: TokenizerSpec, where: str) -> None:
    """ValueError (one line naming `where`) when the task kind's rule refuses an on-device
    file for this tokenizer (`TaskKind.on_device_refusal`)."""
    reason = task_kind(kind).on_device_refusal(tokenizer.is_wordpiece)
    if reason:
        which = "a WordPiece model; " if tokenizer.is_wordpiece else ""
        raise ValueError(f"{where}: {which}{reason}")


def resolve(
    kind: str,
    init_checkpoint: str,
    albert_config=None,
    tokenizer: TokenizerSpec | None = None,
    max_seq_length: int | None = None,
    do_lower_case: bool | None = None,
    on_device: bool = False,
    **details,
) -> ResolvedModel:
    """The ResolvedModel of `kind` from `init_checkpoint` (see the module docstring).
    `tokenizer` (given on the command line) wins over the directory's vocabulary; the
    casing is `do_lower_case`, else the directory's, else the pretraining run's, else
    True. `on_device`: LiteRT files will be written, so the kind's tokenizer rule is
    checked before anything is restored. `details` are the kind's own fields: they
    override the directory's settings (SQuAD's doc_stride, max_query_length, ...; the
    max_windows of SQuAD, the classifier and the token classifier), or set the encoder's
    embedding (pooling, normalize, encoder_outputs); None: kept/default."""
    from albert_tf.checkpoints import finetuned

    info = TaskInfo.read(init_checkpoint) if is_finetuned_dir(init_checkpoint) else None
    if info is not None and info.kind != kind and task_kind(kind).from_task is not None:
        info = task_kind(kind).from_task(info, init_checkpoint)  # (zero-shot from NLI)
    standalone = not task_kind(kind).finetuned  # (a kind any checkpoint serves)
    if info is None and not standalone:
        raise ValueError(
            f"{init_checkpoint} is not a fine-tuned model directory (no task.json); export "
            "a runner's --export_dir, or use --task encoder"
        )
    spec = tokenizer if tokenizer is not None else (info.tokenizer() if info else None)
    if spec is None:
        raise ValueError(
            "--spm_model_file or --vocab_file is needed (the checkpoint has no vocabulary)"
        )
    if on_device:
        on_device_refusal(kind, spec, init_checkpoint)
    if info is not None and not standalone and info.kind != kind:
        raise ValueError(f"{init_checkpoint} holds a {info.kind} model, not {kind}")
    run = pretraining_run(init_checkpoint) if info is None else None
    data = (run[1].get("data") or {}) if run else {}  # (the run's records' settings)
    recorded_length = info.max_seq_length if info else data.get("max_seq_length")
    given_length = max_seq_length
    max_seq_length = max_seq_length or recorded_length or DEFAULT_MAX_SEQ_LENGTH
    if do_lower_case is None:
        do_lower_case = info.do_lower_case if info else data.get("do_lower_case")
    spec = dataclasses.replace(spec, do_lower_case=do_lower_case is not False)
    if standalone:
        task = TaskInfo.build(
            kind, max_seq_length=max_seq_length, do_lower_case=spec.do_lower_case, **details
        )
    else:
        task = info.with_details(**details)  # (None, or none given: the directory's own)
    python_tokenizer = spec.build()
    if run:
        check_run_tokenizer(run, spec, python_tokenizer)
    with dtype_policy("float32"):  # (whatever policy a training run left set)
        if standalone:
            model = _standalone(task, init_checkpoint, albert_config)
        else:
            model, _ = finetuned.load_finetuned(init_checkpoint, info)
    positions = model.config.max_position_embeddings
    named = max_seq_length in (given_length, recorded_length)  # (not the default's)
    if named and max_seq_length > positions:  # (it would export; long requests would fail)
        where = (
            "--max_seq_length"
            if given_length
            else f"{init_checkpoint}/task.json max_seq_length"
            if info
            else "the pretraining run's max_seq_length"
        )
        raise ValueError(
            f"{where}={max_seq_length} is more than the model's max_position_embeddings="
            f"{positions}; export with --max_seq_length {positions} or less"
        )
    return ResolvedModel(
        task=task,
        model=model,
        tokenizer=spec,
        python_tokenizer=python_tokenizer,
        max_seq_length=max_seq_length,
        finetuned_dir=init_checkpoint if info is not None else None,
    )


def _standalone(task: TaskInfo, init_checkpoint: str, albert_config):
    """The model of a kind any checkpoint serves (the AlbertEncoder; the AlbertPretrainer
    of fill_mask), weights restored; ValueError (one line) when the checkpoint lacks what
    the kind needs (its `any_checkpoint` rule: fill_mask's masked-LM head)."""
    from albert_tf.checkpoints import load_checkpoint
    from albert_tf.checkpoints.export_encoder import checkpoint_config

    config, _ = checkpoint_config(init_checkpoint, albert_config)
    model = task.model(config)
    model.build()
    report = load_checkpoint(model, init_checkpoint)
    task.task_kind.any_checkpoint(report.restored, init_checkpoint)
    return model


def pretraining_run(init_checkpoint: str) -> tuple[str, dict] | None:
    """(path, content) of the run_config.json of the pretraining run a checkpoint comes
    from (in the checkpoint's directory or its parent, where run_pretraining writes it),
    or None (a converted or hand-made checkpoint)."""
    from albert_tf.checkpoints import resolve_checkpoint
    from albert_tf.checkpoints.run_record import RunRecord

    record = RunRecord.near(resolve_checkpoint(init_checkpoint))
    return None if record is None else (record.path, record.to_dict())


def check_run_tokenizer(run: tuple[str, dict] | None, spec: TokenizerSpec, tokenizer) -> None:
    """ValueError unless the tokenizer of `spec` (built: `tokenizer`) is the one the
    pretraining run's records were written with, as run_config.json records it (their
    meta_data.json's tokenizer: kind and sha256): an encoder exported with another
    vocabulary would turn text into ids the model never saw. Runs that recorded none
    are not checked."""
    if not run:
        return
    path, config = run
    recorded = (config.get("data_meta") or {}).get("tokenizer")
    if not isinstance(recorded, dict):
        return
    names = {"sentencepiece": "SentencePiece model", "wordpiece": "WordPiece vocab.txt"}
    kind, sha = recorded.get("kind", "sentencepiece"), recorded.get("sha256")
    given = f"{spec.flag}={spec.path}"
    if kind != spec.kind:
        raise ValueError(
            f"{path}: the model was pretrained on records of a {names.get(kind, kind)}, "
            f"but {given} is a {names[spec.kind]}"
        )
    if sha and tokenizer.checksum != sha:
        raise ValueError(
            f"{path}: the model was pretrained on records of a {names[kind]} of sha256 "
            f"{sha[:16]}..., but {given} has sha256 {tokenizer.checksum[:16]}..."
        )
