"""What a user trusts without checking, through the one driver (`driver.run(family,
settings)`, in-process, tiny model, slices of real data; the data fixture of
test_family_controls): the model a run exports is its best checkpoint and best/ is itself
servable; a sweep's winner is ranked and served at its best checkpoint, and a finished point
is not reused after its training file changed; an evaluation-only run never rewrites the
training run's records and decides at the model's own thresholds; every listed flag acts; a
run whose predictions are all one class says so."""

import json

import numpy as np
import pytest

from tests.workflows.test_family_controls import data  # noqa: F401  (the fixture)


def _settings(data, name, out, **extra):  # noqa: F811
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES

    _, common, per_family, evaluation = data
    values = dict(common, **per_family[name], **evaluation[name], output_dir=str(out))
    values.update(extra)
    return FAMILIES[name], command(FAMILIES[name]).build(**values)


def _run(data, name, out, **extra):  # noqa: F811
    from albert_tf.runners.driver import run

    return run(*_settings(data, name, out, **extra))


def _weights(path, task_dir) -> dict:
    """{variable path: array} of the task model of `task_dir`'s task.json, loaded from the
    checkpoint at `path` (a fine-tuned directory, best/, or a run's checkpoints/)."""
    from albert_tf import AlbertConfig
    from albert_tf.checkpoints import load_checkpoint
    from albert_tf.checkpoints.task_info import TaskInfo

    config = AlbertConfig.from_json_file(str(task_dir / "albert_config.json"))
    model = TaskInfo.read(str(task_dir)).model(config)
    model.build()
    report = load_checkpoint(model, str(path))
    assert not report.missing, report.missing
    return {v.path: v.numpy() for v in model.weights}


def _distance(a: dict, b: dict) -> float:
    common = sorted(set(a) & set(b))
    assert len(common) > 10, (len(a), len(b))
    return max(float(np.max(np.abs(a[n] - b[n]))) for n in common)


@pytest.mark.slow
def test_early_stopping_exports_the_best_checkpoint_and_best_is_servable(data, tmp_path, capsys):  # noqa: F811
    from tests.support.in_process import run_command

    out, export = tmp_path / "run", tmp_path / "export"
    result = _run(
        data,
        "classifier",
        out,
        early_stopping_patience=1,
        eval_every=1,
        train_step=30,
        learning_rate=3e-3,
        export_dir=str(export),
        export_format=("savedmodel",),
    )
    best, last = json.loads((out / "best" / "best.json").read_text()), result["step"]
    assert result["stopped_early_at"] == last and best["step"] < last  # stopped: no better
    exported = export / "1" / "assets.extra" / "finetuned"
    best_dir = out / "best"
    served, kept = _weights(exported, best_dir), _weights(best_dir, best_dir)
    trained = _weights(out / "checkpoints", best_dir)  # where training ended
    gap = _distance(trained, kept)
    assert _distance(served, kept) == 0.0 and gap > 0
    task = json.loads((out / "best" / "task.json").read_text())
    assert task["step"] == best["step"] == json.loads((exported / "task.json").read_text())["step"]
    # best/ is a fine-tuned model directory: the export command takes it as it is.
    again = tmp_path / "again"
    done = run_command(
        "-m",
        "albert_tf.serving.export",
        "--task=classifier",
        f"--init_checkpoint={out / 'best'}",
        f"--export_dir={again}",
    )
    assert done.returncode == 0, done.report()
    assert _distance(_weights(again / "1" / "assets.extra" / "finetuned", best_dir), kept) == 0
    assert f"best checkpoint: step {best['step']}" in capsys.readouterr().out
    with capsys.disabled():
        print(f"\nbest step {best['step']}, last {last}: their weights differ by {gap:.4f}")


@pytest.mark.slow
def test_a_sweep_ranks_and_exports_each_point_at_its_best_checkpoint(data, tmp_path):  # noqa: F811
    out, export = tmp_path / "run", tmp_path / "export"
    table = _run(
        data,
        "classifier",
        out,
        sweep=("learning_rate=1e-3,3e-2",),
        eval_every=1,
        train_step=4,
        export_dir=str(export),
        export_format=("savedmodel",),
    )
    for row in table["points"]:  # the figure ranked is the one best/ recorded
        best = json.loads((out / "sweep" / row["point"] / "best" / "best.json").read_text())
        assert row["held_out"]["median"] == best["eval"]["held_out/accuracy"]
    served = out / "sweep" / table["winner"] / "best"
    assert table["served"] == str(served) and (served / "task.json").is_file()
    assert table["exported"] == [str(export / "1")]
    exported = _weights(export / "1" / "assets.extra" / "finetuned", served)
    assert _distance(exported, _weights(served, served)) == 0


@pytest.mark.slow
def test_a_finished_sweep_point_is_not_reused_after_its_training_file_changed(data, tmp_path):  # noqa: F811
    root = data[0]
    train = root / "sst" / "train.tsv"
    copy = tmp_path / "sst"
    copy.mkdir()
    (copy / "dev.tsv").write_text((root / "sst" / "dev.tsv").read_text())
    (copy / "train.tsv").write_text(train.read_text())
    out = tmp_path / "run"
    sweep = dict(data_dir=str(copy), sweep=("learning_rate=1e-3,2e-3",), train_step=1)
    first = _run(data, "classifier", out, **sweep)
    assert len(first["points"]) == 2
    lines = (copy / "train.tsv").read_text().splitlines()  # every label flipped, same path
    flipped = [lines[0]] + [
        f"{t}\t{1 - int(label)}" for t, label in (r.split("\t") for r in lines[1:])
    ]
    (copy / "train.tsv").write_text("\n".join(flipped) + "\n")
    with pytest.raises(ValueError) as e:
        _run(data, "classifier", out, **sweep)
    line = str(e.value)
    assert "\n" not in line and "holds checkpoints of another run" in line, line
    assert "sweep" in line and "train_sha256" in line, line


@pytest.mark.slow
def test_an_evaluation_only_run_never_rewrites_the_training_runs_records(data, tmp_path):  # noqa: F811
    root = data[0]
    out = tmp_path / "run"
    _run(data, "classifier", out, eval_every=1, train_step=2)
    kept = {
        name: (out / name).read_text()
        for name in ("eval_results.json", "metrics.jsonl", "best/best.json")
    }
    other = tmp_path / "other.tsv"  # another dev file: its rows from the training slice
    other.write_text((root / "sst" / "train.tsv").read_text())
    result = _run(data, "classifier", out, do_train=False, dev_file=str(other))
    for name, text in kept.items():
        assert (out / name).read_text() == text, name
    report = json.loads((out / "eval_results.other.tsv.json").read_text())
    assert report["final"] == result["eval"] and report["step"] == 2
    training = json.loads(kept["eval_results.json"])
    assert report["best"] == training["best"]  # read, never written
    figures = training["final"]["accuracy"], report["final"]["accuracy"]
    print("training's dev {:.4f}, the other file {:.4f}".format(*figures))


def _goemotions(tmp_path):
    from tests.support.harness import SHARED_DATA

    source = SHARED_DATA / "multilabel" / "goemotions"
    if not source.is_dir():
        pytest.skip(f"real data not available: {source} is absent")
    folder = tmp_path / "go"
    folder.mkdir()
    for split, rows in (("train", 200), ("dev", 60)):
        lines = (source / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[: rows + 1]
        (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.mark.slow
def test_multi_label_evaluation_only_decides_at_the_tuned_thresholds(data, tmp_path):  # noqa: F811
    folder = _goemotions(tmp_path)
    labelled = dict(
        task_name="tsv",
        data_dir=str(folder),
        text_a_column="text",
        label_column="labels",
        multi_label=True,
        max_seq_length=32,
        eval_batch_size=64,
        train_batch_size=16,
        learning_rate=3e-3,
    )
    out = tmp_path / "run"
    trained = _run(data, "classifier", out, **labelled, tune_thresholds="global", train_step=6)
    tuned = json.loads((out / "eval_results.json").read_text())
    threshold = trained["eval"]["threshold"]
    assert threshold != 0.5 and set(tuned["thresholds"].values()) == {threshold}
    again = _run(data, "classifier", out, **labelled, do_train=False)
    print(
        f"tuned {threshold}: micro F1 {trained['eval']['micro_f1']:.4f}, "
        f"at 0.5 {trained['eval']['at_0.5/micro_f1']:.4f}"
    )
    assert again["eval"]["threshold"] == threshold
    assert again["eval"]["micro_f1"] == trained["eval"]["micro_f1"]
    # best/ (servable) records the thresholds of its own evaluation
    task = json.loads((out / "best" / "task.json").read_text())
    assert set(task["thresholds"]) == {threshold}


@pytest.mark.parametrize("name", ["classifier", "ner", "squad", "embedding"])
def test_max_eval_steps_is_no_flag_of_a_family_that_scores_its_whole_set(name):
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES
    from data_pipeline.command import UsageError

    cmd = command(FAMILIES[name])
    assert "--max_eval_steps" not in cmd.help_text()
    with pytest.raises(UsageError) as e:
        cmd.parse([FAMILIES[name].runner, "--max_eval_steps=1", "--output_dir=x"])
    assert "max_eval_steps" in str(e.value)


def test_max_eval_steps_stays_a_flag_of_pretraining():
    from albert_tf.runners.pretraining import COMMAND

    assert "--max_eval_steps" in COMMAND.help_text()


def test_one_class_line_names_the_class_the_count_and_the_metric():
    from albert_tf.training.learned_nothing import one_class_line

    line = one_class_line({"O": 412, "B-PER": 0}, "f1", 0.0)
    assert line.startswith("note: every prediction") and "'O' (412 of 412)" in line
    assert "f1 0.0000" in line and "\n" not in line
    assert one_class_line({"O": 400, "B-PER": 12}, "f1", 0.1) is None
    assert one_class_line(None, "f1", 0.0) is None and one_class_line({"1": 1}, "acc", 1) is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["classifier", "ner"])
def test_a_run_predicting_one_class_says_so(data, tmp_path, capsys, name):  # noqa: F811
    """A fine-tuned model whose head's bias makes one class win everywhere (the label "1",
    the tag "O"), evaluated: the one line names the class, the count and the metric."""
    from albert_tf import AlbertConfig
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.workflows.test_family_controls import SPM

    root, common, per_family, _ = data
    config = AlbertConfig.from_json_file(common["albert_config_file"])
    if name == "classifier":
        info = TaskInfo.build("classifier", task_name="tsv", labels=["0", "1"], max_seq_length=32)
        winner = "1"
    else:
        from data_pipeline.tagging.data import discover_labels, read_tagged

        labels = discover_labels(read_tagged(str(root / "conll" / "train.txt")), "train")
        info = TaskInfo.build(
            "token_classifier", task_name="ner", labels=list(labels), max_seq_length=32
        )
        winner = "O"
    model = info.model(config)
    model.build()
    labels = info.details.labels
    model.classifier_head.dense.bias.assign(
        np.where(np.array(labels) == winner, 50.0, -50.0).astype("float32")
    )
    stuck = tmp_path / "stuck"
    save_finetuned(model, str(stuck), info, TokenizerSpec.from_files(str(SPM)))
    capsys.readouterr()
    result = _run(data, name, tmp_path / "run", do_train=False, init_checkpoint=str(stuck))
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("note: every prediction")]
    assert len(lines) == 1, out[-2000:]
    metric = "accuracy" if name == "classifier" else "f1"
    assert f"one class, {winner!r} (" in lines[0]
    assert f"{metric} {result['eval'][metric]:.4f}" in lines[0]
    print(lines[0])


@pytest.mark.slow
def test_the_controls_a_run_applied_are_in_its_log(data, tmp_path, capsys):  # noqa: F811
    """LoRA's trainable parameters, the class weights and layer-wise decay's rates: each a
    line of the run's log, with its numbers."""
    import re

    capsys.readouterr()
    _run(data, "classifier", tmp_path / "lora", lora_rank=2, class_weights="1,3")
    out = capsys.readouterr().out
    found = re.search(r"trainable parameters: ([\d,]+) of ([\d,]+) \(([\d.]+)%\)", out)
    assert found, out[-3000:]
    trainable, total = (int(found.group(i).replace(",", "")) for i in (1, 2))
    assert 0 < trainable < total / 10
    assert "class weights: 0 1, 1 3" in out
    _run(
        data,
        "classifier",
        tmp_path / "decay",
        layer_lr_decay=0.5,
        learning_rate=1e-3,
        optimizer="adamw",
    )
    out = capsys.readouterr().out
    rates = re.findall(r"layer-wise decay: lr ([\d.e-]+) \(x([\d.]+)\) for (\d+) variable", out)
    assert [float(f) for _, f, _ in rates] == [0.25, 0.5, 1.0], out[-3000:]  # one group
    assert [float(r) for r, _, _ in rates] == [0.00025, 0.0005, 0.001]
    assert "trainable parameters" not in out  # (nothing frozen)
    with capsys.disabled():
        print(f"\nLoRA rank 2: {trainable:,} of {total:,} parameters trained; rates {rates}")


@pytest.mark.slow
def test_a_labelled_test_file_is_scored_as_well_as_predicted(data, tmp_path):  # noqa: F811
    """The classifier's and the tagger's test_results.json equal the scores of the very
    predictions they wrote (accuracy from the JSONL, entity F1 from predictions.conll)."""
    from data_pipeline.tagging.metrics import detect_scheme, entity_report

    root = data[0]
    out = tmp_path / "classifier"
    test = root / "sst" / "dev.tsv"
    _run(data, "classifier", out, train_step=2, do_predict=True, test_file=str(test))
    report = json.loads((out / "test_results.json").read_text())
    gold = [r.split("\t")[1] for r in test.read_text().splitlines()[1:]]
    predicted = [json.loads(x)["label"] for x in open(out / "tsv_test_predictions.jsonl")]
    right = sum(p == g for p, g in zip(predicted, gold)) / len(gold)
    assert report["test_file"] == "dev.tsv" and report["scores"]["accuracy"] == right
    out = tmp_path / "ner"
    conll = root / "conll" / "dev.txt"
    _run(data, "ner", out, train_step=2, do_predict=True, test_file=str(conll))
    report = json.loads((out / "test_results.json").read_text())
    sentences = [
        [line.split(" ") for line in block.splitlines()]
        for block in (out / "predictions.conll").read_text().strip().split("\n\n")
    ]
    gold = [[w[1] for w in s] for s in sentences]
    tags = [[w[2] for w in s] for s in sentences]
    assert len(gold) == 8 and report["test_file"] == "dev.txt"
    scheme = report["tag_scheme"]
    assert scheme == detect_scheme(sorted({t for s in gold for t in s}))
    assert report["scores"]["f1"] == pytest.approx(entity_report(gold, tags, scheme).micro.f1)


@pytest.mark.slow
def test_every_long_phase_says_when_it_starts_and_what_it_wrote(data, tmp_path, capsys):  # noqa: F811
    """The teacher's pass (with its example counts), each evaluation, the final report and
    test predictions, and the export: a line as each starts, one as it ends (what it wrote,
    how long it took), in the order they run."""
    import re

    root = data[0]
    capsys.readouterr()
    export, unlabelled = tmp_path / "export", tmp_path / "unlabelled.txt"
    unlabelled.write_text("".join(f"an unlabelled review, number {i}\n" for i in range(12)))
    _run(
        data,
        "classifier",
        tmp_path / "run",
        teacher_checkpoint=str(root / "teacher"),
        distill_unlabelled_file=str(unlabelled),
        do_predict=True,
        test_file=str(root / "sst" / "dev.tsv"),
        export_dir=str(export),
        export_format=("savedmodel",),
    )
    out = capsys.readouterr().out
    done = r"done in \d+\.\d s"
    phases = [
        r"^distillation: the teacher's logits of 60 training examples \(48 labelled, 12 "
        r"unlabelled\) \.\.\.$",
        r"^distillation: the teacher's logits of 60 training examples \(48 labelled, 12 "
        rf"unlabelled\): {done}; wrote 60 rows of 2 logits \(kept in memory\)$",
        r"^evaluation at step 2 \.\.\.$",
        rf"^evaluation at step 2: {done}$",
        r"^eval step 2: accuracy ",
        r"^final report and test predictions of the model at step \d+ \.\.\.$",
        r"^predictions: ",
        rf"^final report and test predictions of the model at step \d+: {done}$",
        rf"^writing the classifier SavedModel to {re.escape(str(export))} \.\.\.$",
        rf"^writing the classifier SavedModel to {re.escape(str(export))}: {done}; wrote "
        rf"{re.escape(str(export / '1'))}$",
    ]
    where = [re.search(p, out, re.M) for p in phases]
    assert all(where), [p for p, w in zip(phases, where) if not w]
    starts = [w.start() for w in where]
    assert starts == sorted(starts), out[-3000:]
