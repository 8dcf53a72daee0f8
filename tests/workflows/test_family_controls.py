"""Every fine-tuning family × every control, in-process through the one driver
(`albert_tf.runners.driver.run(family, settings)`) on slices of real data and a tiny model:
a control the family declares runs and leaves its mark (run_config.json, the results), any
other is refused in one line naming its flag before anything is written — never silently
ignored."""

import json

import pytest

from tests.support.harness import SHARED_DATA, WORKFLOW_CONFIG
from tests.workflows.test_ner_workflow import _sentences
from tests.workflows.test_run_squad import _slices

SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
TINY = dict(WORKFLOW_CONFIG, max_position_embeddings=128)


def _rows(path, n, columns):
    """The header and the first `n` rows of a GLUE tsv, the `columns` kept."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    keep = [header.index(c) for c in columns]
    rows = [[line.split("\t")[i] for i in keep] for line in lines[1 : n + 1]]
    return "\n".join("\t".join(r) for r in [columns, *rows]) + "\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Per family, the settings of a small run: SST-2 rows as a tsv task, CoNLL-2003
    sentences, a SQuAD v1.1 article, STS-B pairs; a tiny encoder checkpoint to start from
    (LoRA freezes it) and a fine-tuned teacher of the classifier's labels."""
    glue = SHARED_DATA / "glue"
    if not (SPM.exists() and glue.is_dir() and (SHARED_DATA / "ner").is_dir()):
        pytest.skip(f"real data not available under {SHARED_DATA}")
    from albert_tf import AlbertConfig, AlbertEncoder
    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec

    root = tmp_path_factory.mktemp("controls")
    config_file = root / "albert_config.json"
    config_file.write_text(json.dumps(TINY))
    config = AlbertConfig.from_json_file(str(config_file))
    encoder = AlbertEncoder(config)
    encoder.build()
    save_checkpoint(encoder, str(root / "encoder"), config)
    sst = root / "sst"
    sst.mkdir()
    (sst / "train.tsv").write_text(_rows(glue / "SST-2" / "dev.tsv", 48, ["sentence", "label"]))
    (sst / "dev.tsv").write_text(_rows(glue / "SST-2" / "dev.tsv", 16, ["sentence", "label"]))
    info = TaskInfo.build(
        kind="classifier",
        task_name="tsv",
        labels=["0", "1"],
        max_seq_length=32,
        do_lower_case=True,
        step=0,
    )
    teacher = info.model(config)
    teacher.build()
    save_finetuned(teacher, str(root / "teacher"), info, TokenizerSpec.from_files(str(SPM)))
    conll = root / "conll"
    conll.mkdir()
    source = SHARED_DATA / "ner" / "conll2003"
    (conll / "train.txt").write_text(_sentences(source / "train.txt", 24), encoding="utf-8")
    (conll / "dev.txt").write_text(_sentences(source / "train.txt", 8), encoding="utf-8")
    squad = _slices(SHARED_DATA, root, "v1.1", train=(0, 1), dev=(1, 2))
    sts = root / "sts"
    sts.mkdir()
    columns = ["sentence1", "sentence2", "score"]
    (sts / "train.tsv").write_text(_rows(glue / "STS-B" / "dev.tsv", 32, columns))
    (sts / "dev.tsv").write_text(_rows(glue / "STS-B" / "dev.tsv", 16, columns))
    common = dict(
        albert_config_file=str(config_file),
        spm_model_file=str(SPM),
        init_checkpoint=str(root / "encoder"),
        train_batch_size=4,
        train_step=2,
        steps_per_loop=1,
        learning_rate=1e-3,
        do_train=True,
    )
    classifier = dict(task_name="tsv", data_dir=str(sst), text_a_column="sentence")
    ner = dict(data_dir=str(conll), doc_stride=16)
    files = dict(train_file=str(squad["train"]), predict_file=str(squad["dev"]))
    squad = dict(files, max_seq_length=64, doc_stride=32, max_query_length=16)
    pairs = dict(train_file=str(sts / "train.tsv"))
    per_family = {
        "classifier": dict(classifier, max_seq_length=32, eval_batch_size=16),
        "ner": dict(ner, max_seq_length=32),
        "squad": dict(squad, predict_batch_size=16),
        "embedding": dict(pairs, train_format="tsv", eval_format="tsv", max_seq_length=32),
    }
    # What turns evaluation on (early stopping and the sweep need it; the rest skip it).
    evaluation = {name: dict(do_eval=True) for name in per_family}
    evaluation["embedding"] = dict(eval_file=str(sts / "dev.tsv"))
    return root, common, per_family, evaluation


# Each control as settings that ask for it (the teacher's path filled in by the test);
# its first key is the flag a refusal names.
CONTROL_SETTINGS = {
    "lora": dict(lora_rank=2),
    "distillation": dict(teacher_checkpoint="TEACHER"),
    "class_weights": dict(class_weights="auto"),
    "early_stopping": dict(early_stopping_patience=1, eval_every=1, train_step=3),
    "layer_lr_decay": dict(layer_lr_decay=0.8, optimizer="adamw"),
    "recompute": dict(recompute="layer"),
    "num_runs": dict(num_runs=2),
    "sweep": dict(sweep=("learning_rate=1e-3,2e-3",)),
}

FAMILIES = ("classifier", "ner", "squad", "embedding")


def test_the_controls_table_names_every_control_once():
    from albert_tf.runners.controls import ALL_CONTROLS, CONTROLS
    from albert_tf.runners.families import FAMILIES as REGISTRY

    assert set(CONTROL_SETTINGS) == set(ALL_CONTROLS) and len(CONTROLS) == len(ALL_CONTROLS)
    for family in REGISTRY.values():
        assert family.controls <= ALL_CONTROLS, family.runner


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_every_control_runs_or_is_refused_in_one_line(data, tmp_path, name, capsys):
    from albert_tf.runners.driver import command, run
    from albert_tf.runners.families import FAMILIES as REGISTRY

    root, common, per_family, evaluation = data
    family = REGISTRY[name]
    ran, refused = [], []
    for control in CONTROL_SETTINGS:
        out = tmp_path / control
        values = dict(common, **per_family[name], output_dir=str(out))
        values.update(CONTROL_SETTINGS[control])
        if control in ("early_stopping", "sweep"):
            values.update(evaluation[name])
        if values.get("teacher_checkpoint") == "TEACHER":
            values["teacher_checkpoint"] = str(root / "teacher")
        s = command(family).build(**values)
        if control not in family.controls:
            with pytest.raises(ValueError) as e:
                run(family, s)
            line = str(e.value)
            flag = next(iter(CONTROL_SETTINGS[control]))
            assert "\n" not in line and line.startswith(f"--{flag}="), (control, line)
            assert f"{family.runner} does not take {control}" in line, line
            assert not out.exists(), control  # refused before anything is written
            refused.append(control)
            continue
        result = run(family, s)
        ran.append(control)
        record_dir = out if control not in ("num_runs", "sweep") else None
        if control == "num_runs":
            assert isinstance(result, list) and len(result) == 2
            assert (out / "run_0" / "run_config.json").exists()
            assert (out / "run_1" / "run_config.json").exists()
        elif control == "sweep":
            assert len(result["points"]) == 2 and result["winner"] in {
                p["point"] for p in result["points"]
            }
        else:
            record = json.loads((record_dir / "run_config.json").read_text())
            segment = record["segments"][-1]["settings"]
            for key, value in CONTROL_SETTINGS[control].items():
                if key == "teacher_checkpoint":
                    value = str(root / "teacher")
                if key in segment:
                    assert segment[key] == value, (control, key, segment[key])
                else:
                    assert record["flags"][key] == value, (control, key)
        if control == "early_stopping":
            assert result["eval"] is not None
    capsys.readouterr()
    assert sorted(ran) == sorted(family.controls), (ran, refused)
    assert sorted(ran + refused) == sorted(CONTROL_SETTINGS)
