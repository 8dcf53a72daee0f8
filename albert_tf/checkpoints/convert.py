"""Imports official TF1, TF-Hub v1, brightmart/albert_zh, Hugging Face and Model Garden /
TF-Hub v2 ALBERT weights into this project's format, or exports them (`--to`).

    python -m albert_tf.checkpoints.convert --source {tf1,tfhub,brightmart,transformers,
        model_garden,tfhub_v2} \\
        --input PATH --output_dir DIR [--albert_config_file FILE]
    python -m albert_tf.checkpoints.convert --to {transformers,keras_hub,model_garden} \\
        --input OURS \\
        --output_dir DIR [--spm_model_file M | --vocab_file V]

(`--to`: the other way, albert_tf.checkpoints.export_transformers / export_keras_hub /
export_model_garden.)

`--source brightmart` takes brightmart/albert_zh's own layout (albert_tf.checkpoints.brightmart:
their word-embedding projection is folded into the word table, so the written config has
embedding_size = hidden_size); a checkpoint in that layout given as `--source tf1` is
refused with a pointer to `--source brightmart`.

Writes `DIR/albert_config.json`, a checkpoint (`DIR/ckpt-1`, with a `checkpoint` state file,
so both `DIR` and `DIR/ckpt-1` work as `--init_checkpoint`) and `DIR/conversion_report.json`.
A Hugging Face task model (`architectures`: AlbertForSequenceClassification,
AlbertForMultipleChoice, AlbertForQuestionAnswering) becomes a fine-tuned model directory
(task.json with the labels of `id2label`, spm.model from spiece.model, or a BertTokenizer's
vocab.txt as the Chinese ALBERTs have) that the runners'
--init_checkpoint and `albert_tf.serving.export` take. Only the parts the source holds are
written: an encoder-only source gives an encoder-only
checkpoint, and a model restored from it reports its heads as missing. When the source ships
its vocabulary (a Hugging Face directory's spiece.model or vocab.txt, a TF-Hub module's one
assets/*.model), an encoder or pretraining conversion records it in `DIR/tokenizer.json`
(`albert_tf.checkpoints.tokenizer_record`; a fine-tuned directory holds the file itself),
and fine-tuning from `DIR` checks its tokenizer against it. `DIR` is locked while
the conversion runs (`data_pipeline.io.locks.output_lock`): a second writer on it fails at
once, and a failed conversion leaves no new directory behind. `DIR` must be new or empty,
for `--to` too (`albert_tf.checkpoints.fresh_output`): a directory holding another
conversion is refused in one line rather than overwritten.
"""

from __future__ import annotations

import dataclasses
import os
import sys

from data_pipeline.cli import setting
from data_pipeline.command import Command
from data_pipeline.phases import phase

# (the last two: albert_tf.checkpoints.model_garden.MODEL_GARDEN_SOURCES; spelled out so that
# --help imports no TensorFlow: every import of the conversion is inside the functions)
SOURCES = ("tf1", "tfhub", "brightmart", "transformers", "model_garden", "tfhub_v2")
TARGETS = ("transformers", "keras_hub", "model_garden")


@dataclasses.dataclass(frozen=True)
class ConvertSettings:
    """What to convert, which way, and where to."""

    source: str | None = setting(None, "Checkpoint kind.", choices=SOURCES)
    to: str | None = setting(
        None,
        "Export instead: this project's checkpoint or fine-tuned model directory "
        "(--input) → a Hugging Face directory, a KerasHub preset or a Model Garden "
        "checkpoint.",
        choices=TARGETS,
    )
    input: str | None = setting(
        None,
        "TF1 checkpoint (prefix or directory; official or brightmart layout), TF-Hub v1 "
        "module directory, Hugging Face model directory, or Model Garden / TF-Hub v2 "
        "checkpoint.",
    )
    output_dir: str | None = setting(None, "Where to write the converted checkpoint.")
    albert_config_file: str | None = setting(
        None,
        "albert_config.json (required for tf1, tfhub and brightmart; for transformers it "
        "replaces config.json).",
    )
    spm_model_file: str | None = setting(
        None, "--to: the vocabulary to ship (default: the fine-tuned directory's)."
    )
    vocab_file: str | None = setting(
        None, "--to: a WordPiece vocab.txt to ship instead (default: the fine-tuned directory's)."
    )


COMMAND = Command("albert-convert", __doc__, (ConvertSettings,), required=("input", "output_dir"))


def convert(
    source: str, input_path: str, output_dir: str, albert_config_file: str | None = None
) -> dict:
    """Converts `input_path` and writes `output_dir`. Returns the report (also written as
    `conversion_report.json`).

    Raises:
      FileNotFoundError: input or config missing.
      ConfigError / CheckpointError: the weights do not fit the config, or the source is
        not an ALBERT model.
      OutputLocked: another writer holds `output_dir` (an OSError).
    """
    from albert_tf.checkpoints.fresh_output import check_fresh_output
    from data_pipeline.io.locks import output_lock

    if source not in SOURCES:
        raise ValueError(f"--source={source!r} must be one of {SOURCES}")
    with output_lock(output_dir, "albert_tf.checkpoints.convert"):
        check_fresh_output(output_dir)
        return _convert(source, input_path, output_dir, albert_config_file)


def _convert(source, input_path, output_dir, albert_config_file) -> dict:
    from albert_tf.checkpoints import (
        CONFIG_NAME,
        CheckpointError,
        assign_official,
        read_tf1_checkpoint,
        read_transformers,
        resolve_checkpoint,
        save_checkpoint,
    )
    from albert_tf.checkpoints.brightmart import (
        PROJECTION,
        SHARED,
        brightmart_config,
        brightmart_to_official,
        is_brightmart,
    )
    from albert_tf.checkpoints.model_garden import MODEL_GARDEN_SOURCES, read_model_garden
    from albert_tf.checkpoints.tokenizer_record import file_record, write_tokenizer_record
    from albert_tf.checkpoints.transformers import transformers_finetuned_task
    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.modeling.encoder import AlbertEncoder
    from albert_tf.modeling.models import AlbertPretrainer

    unknown: list[str] = []
    translation = model_garden = None
    if source in MODEL_GARDEN_SOURCES:
        config, weights, unknown, model_garden = read_model_garden(
            source, input_path, albert_config_file
        )
    elif source == "transformers":
        config, weights, unknown = read_transformers(input_path)
        if albert_config_file:
            config = AlbertConfig.from_json_file(albert_config_file)
        task = transformers_finetuned_task(input_path)
        if task is not None:
            return _convert_task(input_path, output_dir, config, weights, unknown, task)
    else:
        if not albert_config_file:
            raise ValueError(
                f"--albert_config_file is required for --source {source}: "
                f"a TF1 checkpoint holds no model config"
            )
        config = AlbertConfig.from_json_file(albert_config_file)
        prefix = resolve_checkpoint(input_path)
        weights = read_tf1_checkpoint(prefix)
        if source == "brightmart":
            if not is_brightmart(weights):
                raise CheckpointError(
                    f"{prefix} is not in brightmart's layout (no {PROJECTION}); "
                    f"for an official checkpoint use --source tf1"
                )
            config = brightmart_config(config, albert_config_file)
            translation = brightmart_to_official(weights, prefix)
            weights = translation.weights
        elif is_brightmart(weights):
            raise CheckpointError(
                f"{prefix} is a brightmart/albert_zh checkpoint ({PROJECTION}, "
                f"{SHARED}...): use --source brightmart"
            )

    has_mlm = any(k.startswith("cls/predictions/") for k in weights)
    has_sop = any(k.startswith("cls/seq_relationship/") for k in weights)
    model = AlbertPretrainer(config) if (has_mlm or has_sop) else AlbertEncoder(config)
    model.build()
    result = assign_official(model, weights, source=input_path)
    result.raise_for_errors(allow_missing=("mlm_head", "sop_head", "pooler"))

    components = None
    if isinstance(model, AlbertPretrainer):
        components = ["encoder"] + [
            name for name, present in (("mlm_head", has_mlm), ("sop_head", has_sop)) if present
        ]
    prefix = save_checkpoint(model, output_dir, config, components=components)
    absent = [
        name for name, present in (("mlm_head", has_mlm), ("sop_head", has_sop)) if not present
    ]
    report = {
        "source": source,
        "input": os.path.abspath(input_path),
        "checkpoint": prefix,
        "config": os.path.join(output_dir, CONFIG_NAME),
        "variables_assigned": len(result.assigned),
        "heads_written": [h for h in ("mlm_head", "sop_head") if h not in absent],
        "heads_absent_from_source": absent,
        "pooler_from_source": "pooler" not in result.components_missing,
        "unused_source_variables": result.unused,
        "unrecognized_source_keys": unknown,
    }
    if model_garden is not None:
        report["model_garden"] = model_garden
    vocabulary = source_vocabulary(source, input_path)
    if vocabulary is not None:
        record = file_record(*vocabulary)
        write_tokenizer_record(output_dir, record)
        report["tokenizer"] = record
    if translation is not None:
        report["brightmart"] = {
            "source_embedding_size": translation.source_embedding_size,
            "embedding_size_written": config.embedding_size,
            "folded": translation.folded,
            "renamed": translation.renamed,
        }
    return _write_report(output_dir, report)


def source_vocabulary(source: str, input_path: str) -> tuple[str, str] | None:
    """(path, kind) of the vocabulary a source ships: a Hugging Face directory's
    spiece.model (else a BertTokenizer's vocab.txt), a TF-Hub module's one assets/*.model;
    None for TF1 checkpoints and sources without one."""
    import glob

    if source == "transformers" and os.path.isdir(input_path):
        for name, kind in (("spiece.model", "sentencepiece"), ("vocab.txt", "wordpiece")):
            if os.path.isfile(os.path.join(input_path, name)):
                return os.path.join(input_path, name), kind
    if source == "tfhub" and os.path.isdir(input_path):
        found = glob.glob(os.path.join(glob.escape(input_path), "assets", "*.model"))
        if len(found) == 1:
            return found[0], "sentencepiece"
    return None


def _convert_task(input_path, output_dir, config, weights, unknown, task) -> dict:
    """A Hugging Face task model (AlbertForSequenceClassification, ...ForMultipleChoice,
    ...ForQuestionAnswering) → a fine-tuned model directory: the matching task model with
    its head, task.json (labels from id2label) and the vocabulary (spiece.model) when the
    directory has it. The head must be in the source: a model without it is an error."""
    from albert_tf.checkpoints import CONFIG_NAME, assign_official, save_checkpoint
    from albert_tf.checkpoints.finetuned import write_task_files
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec

    info = TaskInfo.build(**task)
    model = info.model(config)
    model.build()
    result = assign_official(model, weights, source=input_path)
    # AlbertForQuestionAnswering and AlbertForTokenClassification have no pooler (their
    # heads never read it).
    no_pooler = not info.task_kind.transformers_head().pooler
    result.raise_for_errors(allow_missing=("pooler",) if no_pooler else ())
    prefix = save_checkpoint(model, output_dir, config)
    spm = os.path.join(input_path, "spiece.model")
    spm = spm if os.path.isfile(spm) else None
    vocab = os.path.join(input_path, "vocab.txt")  # (a BertTokenizer's: Chinese ALBERTs)
    vocab = vocab if not spm and os.path.isfile(vocab) else None
    tokenizer = TokenizerSpec.optional(spm, vocab, do_lower_case=info.do_lower_case)
    write_task_files(output_dir, info, tokenizer)
    report = {
        "source": "transformers",
        "input": os.path.abspath(input_path),
        "checkpoint": prefix,
        "config": os.path.join(output_dir, CONFIG_NAME),
        "task": info.with_tokenizer(tokenizer).to_json(),
        "vocabulary": tokenizer.file_name if tokenizer else None,
        "variables_assigned": len(result.assigned),
        "heads_written": [c for c in result.components_restored if c not in ("encoder", "pooler")],
        "heads_absent_from_source": [],
        "pooler_from_source": "pooler" not in result.components_missing,
        "unused_source_variables": result.unused,
        "unrecognized_source_keys": unknown,
    }
    return _write_report(output_dir, report)


def _write_report(output_dir: str, report: dict) -> dict:
    from data_pipeline.io.atomic import write_json

    write_json(
        os.path.join(output_dir, "conversion_report.json"), report, indent=2, sort_keys=False
    )
    return report


def _print_report(report: dict) -> None:
    print(
        f"wrote {report['checkpoint']} ({report['variables_assigned']} variables) "
        f"and {report['config']}"
    )
    if report["heads_absent_from_source"]:
        print(
            "heads not in the source (not written; a model loading this checkpoint "
            f"reports them missing): {', '.join(report['heads_absent_from_source'])}"
        )
    if report.get("task"):
        task = report["task"]
        labels = f" labels {task['labels']}" if task.get("labels") else ""
        print(f"a fine-tuned {task['kind']} model directory{labels}", end="")
        print(
            ""
            if report["vocabulary"]
            else " (no spiece.model or vocab.txt: exports need --spm_model_file or --vocab_file)"
        )
    if report.get("brightmart"):
        print(f"brightmart layout: {report['brightmart']['folded']}")
    if not report["pooler_from_source"]:
        print("the source has no pooler: the checkpoint's pooler is randomly initialized")
    for key in ("unused_source_variables", "unrecognized_source_keys"):
        if report[key]:
            print(f"{key.replace('_', ' ')} ({len(report[key])}): {', '.join(report[key][:10])}")


def main(argv=None) -> int:
    """The console command `albert-convert`: parse once (--help: before TensorFlow), then
    import or export; the exit code (2: a bad command line; 1: one `error:` line)."""
    s = COMMAND.parse_tool(argv)
    if s is None:
        return 2
    if (s.source is None) == (s.to is None):
        print("error: give either --source (import) or --to (export)", file=sys.stderr)
        return 2
    from albert_tf.checkpoints import CheckpointError

    if s.to:
        from albert_tf.checkpoints.export_keras_hub import export_keras_hub
        from albert_tf.checkpoints.export_model_garden import export_model_garden
        from albert_tf.checkpoints.export_transformers import export_transformers
        from data_pipeline.tokenization.spec import TokenizerSpec

        write = {
            "transformers": export_transformers,
            "keras_hub": export_keras_hub,
            "model_garden": export_model_garden,
        }[s.to]
        try:
            tokenizer = TokenizerSpec.optional(s.spm_model_file, s.vocab_file)
            command = s.command_line("python -m albert_tf.checkpoints.convert")
            with phase(f"conversion: {s.input} to {s.to} in {s.output_dir}"):
                report = write(s.input, s.output_dir, s.albert_config_file, tokenizer, command)
        except (OSError, ValueError, CheckpointError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        what = report.get("architecture") or report.get("written")
        print(
            f"wrote {report['output_dir']}: {what}, vocabulary "
            f"{report['vocabulary'] or 'none (give --spm_model_file or --vocab_file)'}"
        )
        if report.get("not_written"):
            print(f"no counterpart in the target, not written: {', '.join(report['not_written'])}")
        return 0
    try:
        with phase(f"conversion: {s.input} ({s.source}) to {s.output_dir}"):
            report = convert(s.source, s.input, s.output_dir, s.albert_config_file)
    except (OSError, ValueError, CheckpointError) as e:  # OSError: also OutputLocked
        print(f"error: {e}", file=sys.stderr)
        return 1
    _print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
