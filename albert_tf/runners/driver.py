"""The one fine-tuning driver: `run(family, settings) -> result` for every family
(albert_tf.runners.family), in-process, and `main(family, argv)`, the console command. What
it does, in order, for every family: docs/design/task-families.md ("One driver")."""

from __future__ import annotations

import json
import os
from typing import NamedTuple

from albert_tf.runners.controls import CONTROL_GROUPS, check_controls, recorded_controls
from albert_tf.runners.family import Data, Family
from albert_tf.serving.formats import ExportSettings
from albert_tf.training import finetuning_settings as common
from albert_tf.training import run_setup as checks
from albert_tf.training.config import TrainerConfig
from albert_tf.training.distribution import DistributionSettings
from albert_tf.training.resume_checks import ResumeSettings
from albert_tf.training.sweep import SweepSettings
from data_pipeline.command import Command
from data_pipeline.phases import phase

SHARED_GROUPS = (
    TrainerConfig,
    common.ModelSettings,
    DistributionSettings,
    ResumeSettings,
    common.FinetuningSettings,
    *CONTROL_GROUPS,
    SweepSettings,
    ExportSettings,
)
# Trainer settings a family's command has no flag for: --max_eval_steps caps the built-in
# evaluation loop (run_pretraining's); a family scores its whole evaluation set with its
# own metric (a part would change which checkpoint is best), so the flag would do nothing.
OMITTED = ("max_eval_steps",)


# Fine-tuning's default optimizer: AdamW with Adam's bias correction (Keras', PyTorch's and
# Hugging Face's AdamW). The official update (`--optimizer adamw`, no bias correction) takes
# steps up to ~6x the learning rate on the variables without a trust ratio over its first
# ~1/(1-beta_2) = 1,000 steps; harmless at the official 1e-5..3e-5, it left small models
# fine-tuned at 1e-3 stuck at ln(num_labels) for some seeds (experiments.finetune_stability;
# docs/design/trainer.md).
FINETUNING_OPTIMIZER = "adamw_keras"


def command(family: Family, doc: str = "") -> Command:
    """The family's command: the shared groups (trainer, model, distribution, resume,
    fine-tuning), the family's own, the controls' (every family's command has every
    control's settings: the driver refuses those the family does not take) and the
    export's."""
    return Command(
        family.runner,
        doc,
        (*SHARED_GROUPS[:5], *family.settings, *SHARED_GROUPS[5:]),
        defaults={"optimizer": FINETUNING_OPTIMIZER, "num_train_steps": 0, **family.defaults},
        bounds={**common.FINETUNING_BOUNDS, **family.bounds},
        required=family.required,
        omitted=OMITTED,
    )


class Inputs(NamedTuple):
    """What a run starts from, checked: the AlbertConfig, the tokenizer's spec (for
    exports) and the tokenizer."""

    albert_config: object
    tokenizer_spec: object
    tokenizer: object


def check(family: Family, s) -> None:
    """Every check that needs no file read: the settings that do not go together, the
    controls the family does not take, the family's own, the starting checkpoint, what
    --allow_changed names, the epochs and the buckets."""
    check_controls(family.runner, family.controls, s)
    family.check(s)
    checks.check_run_settings(s)
    common.check_epochs(s)
    family.length_buckets(s)
    s.group(_lora_settings())  # (its targets checked)
    if s.lora_rank and not s.init_checkpoint:
        raise ValueError(
            f"--lora_rank={s.lora_rank} needs --init_checkpoint: the encoder is frozen at it "
            f"(a random encoder would stay random)"
        )
    if s.export_dir and "tflite" in s.export_format:
        from albert_tf.checkpoints.task_kinds import task_kind

        spec = common.tokenizer_spec(s)
        reason = task_kind(family.export_kind(s)).on_device_refusal(spec.is_wordpiece)
        if reason:
            raise ValueError(f"--export_format tflite with {spec.flag}={spec.path}: {reason}")


def inputs_of(s) -> Inputs:
    """The model config and tokenizer, checked: the output directory, the sequence length
    against the config's positions, the vocabulary against the config's and against the
    tokenizer the --init_checkpoint records."""
    from albert_tf.checkpoints.run_identity import tokenizer_identity
    from albert_tf.checkpoints.tokenizer_record import check_tokenizer

    spec = common.tokenizer_spec(s)
    checks.check_output_dir(s.output_dir)
    albert_config = common.finetuning_config(s)
    source = common.config_source(s)
    checks.check_sequence_length(albert_config, s.max_seq_length, source=source)
    tokenizer = spec.build()
    given = f"{spec.flag}={spec.path}"
    checks.check_vocab_size(albert_config, tokenizer.vocab_size, given, source)
    if s.init_checkpoint:
        check_tokenizer(s.init_checkpoint, tokenizer_identity(tokenizer), given)
    return Inputs(albert_config, spec, tokenizer)


def identity_of(family: Family, s, inputs: Inputs, data: Data):
    """The run's RunIdentity, checked against a run already in --output_dir before the
    first write there."""
    from albert_tf.checkpoints.run_identity import run_identity, training_file_identity
    from albert_tf.training.resume_checks import check_same_run

    trained = training_file_identity(data.train_file, **data.identity) if s.do_train else None
    task = family.identity_task(s)
    identity = run_identity(
        family.runner, task, inputs.albert_config, inputs.tokenizer, data.labels, trained
    )
    check_same_run(s.output_dir, identity, s.do_train)
    return identity


def run(family: Family, s):
    """One invocation of `family` with settings `s` (its command's value): the result of
    its run (a list with --num_runs; the table with --sweep). One-line ValueErrors."""
    from albert_tf.runners.recipe import apply_recipe
    from albert_tf.runners.sweep import check_sweep, run_sweep, sweep_points
    from albert_tf.training.sweep import seed_dir

    s = apply_recipe(family, s)
    check(family, s)
    points = sweep_points(s)
    ranges = command(family).check  # (a point's values: the command line's ranges)
    check_sweep(family, s, points, lambda p: (ranges(p.values()), check(family, p)))
    inputs = inputs_of(s)
    data = family.read(s, inputs)
    identity = identity_of(family, s, inputs, data)
    data = family.features(s, inputs, data)
    seeds = [s.seed + i for i in range(s.num_runs)]

    def run_seeds(point, output_dir):
        steps, warmup = common.schedule(point, family.train_count(data))
        results = []
        for i, seed in enumerate(seeds):
            out = seed_dir(output_dir, i, len(seeds))
            config = point.group(
                TrainerConfig,
                output_dir=out,
                num_train_steps=steps,
                num_warmup_steps=warmup,
                seed=seed,
            )
            results.append(run_once(family, point, inputs, data, identity, config))
        if len(seeds) > 1 and results and results[0].get("eval"):
            _seeds_report(family, s, output_dir, seeds, results)
        return results

    if points:
        return run_sweep(family, s, points, seeds, run_seeds, identity)
    results = run_seeds(s, s.output_dir)
    return results[-1] if len(seeds) == 1 else results


def _seeds_report(family, s, output_dir, seeds, results) -> None:
    from data_pipeline.classification.metrics import seeds_report
    from data_pipeline.io.atomic import write_json

    report, line = seeds_report(family.identity_task(s), seeds, family.seeds_report(results))
    report.update(family.seeds_extra(results))
    write_json(os.path.join(output_dir, "eval_results.json"), report)
    print(line, flush=True)


def run_once(family: Family, s, inputs: Inputs, data: Data, identity, config) -> dict:
    """One fine-tuning run (one seed, one sweep point) into `config.output_dir`. After
    training, the best checkpoint (best/, when an evaluation kept one) is put back in the
    model: the run's predictions, its SQuAD threshold and its --export_dir are of the model
    best/ holds, which is itself servable (task.json beside it, written each time it
    changes). An evaluation-only run reports to its own file and never writes the training
    run's records (albert_tf.training.run_files)."""
    from albert_tf.training import Trainer
    from albert_tf.training.run_setup import setup_settings_run

    buckets = family.length_buckets(s)
    run = setup_settings_run(
        family.runner,
        config,
        s,
        inputs.albert_config,
        buckets,
        training=s.do_train,
        identity=identity,
        controls=recorded_controls(s),
        **data.recorded,
    )
    task = family.task(s, data, inputs.albert_config)
    if s.lora_rank:
        from albert_tf.training.lora_task import LoraTask

        task = LoraTask(task, s.group(_lora_settings()), config.seed)

    def train_fn(ctx):
        batch = ctx.get_per_replica_batch_size(run.micro_batch)
        return family.dataset(s, data, batch, config.seed, ctx, buckets)

    def servable(best_dir, step):  # best/ as a fine-tuned model directory (RunFiles.on_best)
        from albert_tf.checkpoints.finetuned import make_servable

        info = family.task_info(s, data, trainer)
        if info is not None:
            make_servable(best_dir, info, inputs.tokenizer_spec, inputs.albert_config)

    trainer = Trainer(
        task,
        config,
        run.strategy,
        train_fn,
        init_checkpoint=s.init_checkpoint,
        evaluate_fn=family.evaluate(s, data, run.strategy),
        evaluated=None if s.do_train else family.evaluated(s),
        on_best=None if task.partial_checkpoints else servable,
    )
    if s.do_train and data.recorded.get("class_weights"):
        from albert_tf.training.class_weights import describe_class_weights

        print(describe_class_weights(data.recorded["class_weights"], data.labels), flush=True)
    if not s.do_train:
        trainer.check_trained(family.untrained)
        evaluated = config.output_dir if trainer.restored_from else s.init_checkpoint
        if evaluated:  # (the model's own decisions, e.g. tuned thresholds)
            family.adopt(s, data, evaluated)
    result = family.before_training(s, data, trainer)
    if s.do_train:
        result.update(trainer.train())
        best = trainer.restore_best()
        if best is not None:
            result["best"] = {k: best[k] for k in ("metric", "value", "step", "eval")}
            shown = f"{best['metric']} {best['value']:.4f}"
            where = f"best checkpoint: step {best['step']} ({shown})"
            print(f"{where}: the run's predictions and export", flush=True)
            family.adopt(s, data, os.path.dirname(best["checkpoint"]))
    result = _conclude(family, s, data, trainer, run, result)
    _learned_nothing(family, s, data, result)
    if s.do_train:  # the run's model card, from the records it has just written
        from albert_tf.checkpoints.model_card import write_model_card

        best = os.path.join(run.output_dir, "best")
        write_model_card(run.output_dir, (best,), what=f"A {family.runner} fine-tuning run.")
    if s.export_dir:
        export_dir = s.export_dir
        if config.output_dir != s.output_dir:  # --num_runs: EXPORT_DIR/run_i/N
            export_dir = os.path.join(export_dir, os.path.basename(config.output_dir))
        merge = getattr(task, "merged_model", None)  # LoRA: the adapters merged
        model = merge(trainer.model) if merge is not None else trainer.model
        paths = family.export(s, data, trainer, model, inputs, export_dir)
        result.update(export_dir=paths[0] if paths else None, exported=paths)
    return result


def _conclude(family: Family, s, data: Data, trainer, run, result: dict) -> dict:
    """`family.conclude` (the final report, the test file's predictions) as one phase:
    a line as it starts and one as it ends (data_pipeline.phases)."""
    doing = family.concluding(s)
    if not doing:
        return family.conclude(s, data, trainer, run, result)
    with phase(f"{doing} of the model at step {trainer.weights_step}"):
        return family.conclude(s, data, trainer, run, result)


def _learned_nothing(family: Family, s, data: Data, result: dict) -> None:
    """One line when the last evaluation predicted one class only (training.learned_nothing)."""
    from albert_tf.training.learned_nothing import one_class_line

    counts = family.predicted_classes(data)
    if not counts:  # (a family without classes may have no best metric either: SQuAD)
        return
    metric = family.best_metric(s)
    line = one_class_line(counts, metric, (result.get("eval") or {}).get(metric))
    if line:
        print(line, flush=True)


def _lora_settings():
    from albert_tf.modeling.lora_settings import LoraSettings

    return LoraSettings


def main(family: Family, doc: str, argv=None) -> int:
    """The family's console command: parse argv once (--help: its flags, grouped, before
    TensorFlow), run, print the result as JSON; the exit code (1: one `error:` line)."""

    def run_family(s):
        result = run(family, s)
        if not s.sweep:
            print(json.dumps(result, default=str))

    return checks.run_command(command(family, doc), run_family, argv)
