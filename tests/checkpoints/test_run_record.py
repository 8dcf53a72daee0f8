"""albert_tf.checkpoints.run_record (run_config.json, typed) and tokenizer_record (which
tokenizer a checkpoint was trained with), in-process: round trips, the messages of the
same-run and settings checks, the history of segments, and the tokenizer check for every
kind of --init_checkpoint (a run, an encoder export, a convert output, a fine-tuned
directory, a plain checkpoint). The runners' use of them runs as real processes in
tests/workflows/test_resume_guards.py."""

import hashlib
import json

import pytest

from albert_tf.checkpoints.run_record import (
    RUN_RECORD_FILE,
    RunIdentity,
    RunRecord,
    Segment,
    check_allowed,
)
from albert_tf.checkpoints.tokenizer_record import (
    TOKENIZER_RECORD_FILE,
    check_tokenizer,
    recorded_tokenizer,
)
from albert_tf.training.resume_checks import resume_rules
from tests.support.harness import SHARED_DATA
from tests.support.tiny import tiny_config, tiny_fields

RULES = resume_rules()  # from the settings' fields (setting(..., resume=...))
GUARDED_SETTINGS, FIXED_SETTINGS = RULES.guarded, RULES.fixed


def test_the_resume_rules_come_from_the_settings_fields():
    """Every setting that changes what a run computes is guarded, LoRA's shape is fixed,
    and nothing else (the list the runners used to keep by hand)."""
    assert set(GUARDED_SETTINGS) == {
        "learning_rate",
        "num_train_steps",
        "num_warmup_steps",
        "poly_power",
        "optimizer",
        "weight_decay_rate",
        "clip_norm",
        "grad_accum_steps",
        "train_batch_size",
        "dtype",
        "seed",
        "early_stopping_patience",
        "early_stopping_min_delta",
        "layer_lr_decay",
        "lora_alpha",
        "teacher_checkpoint",
        "teacher_logits_file",
        "distill_temperature",
        "distill_alpha",
        "distill_unlabelled_file",
        "class_weights",
    }
    assert set(FIXED_SETTINGS) == {"lora_rank", "lora_targets"}


SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
OTHER_SPM = SHARED_DATA / "spm" / "test_sentencepiece_1k.model"


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _identity(**kw):
    fields = dict(
        runner="run_classifier",
        task="mrpc",
        labels=["0", "1"],
        albert_config=tiny_config().to_dict(),
        tokenizer={"kind": "sentencepiece", "sha256": "a" * 64},
        data={"train_sha256": "b" * 64, "max_seq_length": 64},
    )
    fields.update(kw)
    return RunIdentity(**fields)


SETTINGS = {"learning_rate": 1e-3, "num_train_steps": 20, "seed": 1, "train_batch_size": 32}


def test_record_round_trips_and_keeps_every_segment(tmp_path):
    first = RunRecord(_identity(), (Segment(0, "2026-01-01T00:00:00Z", SETTINGS),), {"a": 1})
    path = first.write(str(tmp_path))
    assert path == str(tmp_path / RUN_RECORD_FILE)
    read = RunRecord.read(str(tmp_path))
    assert read.identity == first.identity and read.segments == first.segments
    assert read.details == {"a": 1} and read.path == path
    # the top level stays the newest description (the keys readers always used)
    on_disk = json.loads((tmp_path / RUN_RECORD_FILE).read_text())
    assert on_disk["a"] == 1 and on_disk["identity"]["task"] == "mrpc"
    second = read.with_segment(
        Segment(20, "2026-01-02T00:00:00Z", dict(SETTINGS, num_train_steps=40)),
        {"a": 2},
        _identity(data=None),  # (an identity that does not know its data keeps the recorded)
    )
    second.write(str(tmp_path))
    again = RunRecord.read(str(tmp_path))
    assert [s.start_step for s in again.segments] == [0, 20]
    assert again.segments[0].settings["num_train_steps"] == 20  # the first is not lost
    assert again.settings["num_train_steps"] == 40 and again.details == {"a": 2}
    assert again.identity.data == _identity().data


def test_a_record_of_before_the_typed_record_reads_with_its_identity(tmp_path):
    legacy = {
        "runner": "run_pretraining",
        "albert_config": tiny_config().to_dict(),
        "trainer_config": {"output_dir": "x", "learning_rate": 0.1, "num_train_steps": 9},
        "replicas": 1,
        "flags": {"train_batch_size": 8},
        "data_meta": {"tokenizer": {"kind": "sentencepiece", "sha256": "c" * 64}},
    }
    (tmp_path / RUN_RECORD_FILE).write_text(json.dumps(legacy))
    record = RunRecord.read(str(tmp_path))
    assert record.identity.runner == "run_pretraining"
    assert record.identity.tokenizer["sha256"] == "c" * 64
    assert record.settings == {
        "learning_rate": 0.1,
        "num_train_steps": 9,
        "replicas": 1,
        "train_batch_size": 8,
    }
    assert record.albert_config == tiny_config().to_dict()


def test_invalid_json_is_one_line_naming_the_file_and_line(tmp_path):
    (tmp_path / RUN_RECORD_FILE).write_text('{"runner": "x",\n oops}')
    with pytest.raises(ValueError) as e:
        RunRecord.read(str(tmp_path))
    assert str(e.value).startswith(f"{tmp_path / RUN_RECORD_FILE}:2: invalid JSON")
    assert "\n" not in str(e.value)


def test_same_run_check_names_each_difference_old_to_new(tmp_path):
    record = RunRecord(_identity(), (Segment(0, None, SETTINGS),), {}, "R/run_config.json")
    record.check_same_run(_identity(), "OUT", training=True)  # the same run
    other = _identity(
        task="rte",
        labels=["entailment", "not_entailment"],
        albert_config=tiny_config(hidden_size=48).to_dict(),
        tokenizer={"kind": "sentencepiece", "sha256": "d" * 64, "file": "x.model"},
    )
    with pytest.raises(ValueError) as e:
        record.check_same_run(other, "OUT", training=True)
    line = str(e.value)
    assert "\n" not in line and line.startswith("OUT holds checkpoints of another run (")
    assert 'task: "mrpc" → "rte"' in line
    assert 'labels: ["0", "1"] → ["entailment", "not_entailment"]' in line
    assert "model config hidden_size: 32 → 48" in line
    assert "tokenizer sha256: aaaaaaaaaaaaaaaa... → dddddddddddddddd..." in line
    assert "R/run_config.json" in line and "--output_dir" in line
    # the data is compared only when both train; a field not known now is not compared
    changed_data = _identity(data={"train_sha256": "e" * 64, "max_seq_length": 64})
    record.check_same_run(changed_data, "OUT", training=False)
    with pytest.raises(ValueError, match=r"data train_sha256: bbbbbbbbbbbbbbbb\.\.\. → eeee"):
        record.check_same_run(changed_data, "OUT", training=True)
    record.check_same_run(_identity(tokenizer=None, data=None), "OUT", training=True)


def test_settings_change_only_when_allowed(tmp_path):
    record = RunRecord(_identity(), (Segment(0, None, SETTINGS),), {}, "R/run_config.json")
    assert record.check_settings(dict(SETTINGS), (), RULES) == []
    # what changes how a run goes, not what it computes, is free
    assert record.check_settings(dict(SETTINGS, steps_per_loop=7, replicas=2), (), RULES) == []
    changed = dict(SETTINGS, learning_rate=5e-4, num_train_steps=40)
    with pytest.raises(ValueError) as e:
        record.check_settings(changed, ("num_train_steps",), RULES)
    line = str(e.value)
    assert "\n" not in line and "learning_rate: 0.001 → 0.0005" in line
    assert "num_train_steps" not in line.split("(")[1].split(")")[0]  # allowed: not refused
    assert "--allow_changed=learning_rate" in line
    allowed = record.check_settings(changed, ("learning_rate", "num_train_steps"), RULES)
    assert allowed == ["learning_rate: 0.001 → 0.0005", "num_train_steps: 20 → 40"]
    with pytest.raises(ValueError, match=r"--allow_changed=steps_per_loop: steps_per_loop is"):
        record.check_settings(changed, ("steps_per_loop",), RULES)
    assert set(SETTINGS) <= set(GUARDED_SETTINGS)
    # a typo is an error before any run (the runners check the flag with their others)
    check_allowed(("learning_rate", "seed"), GUARDED_SETTINGS)
    with pytest.raises(ValueError, match=r"^--allow_changed=learning_rte: learning_rte is not"):
        check_allowed(("learning_rte",), GUARDED_SETTINGS)


# --- the tokenizer a checkpoint records -------------------------------------------------


def _checkpoint(directory):
    from albert_tf import AlbertEncoder, save_checkpoint

    encoder = AlbertEncoder(tiny_config())
    return save_checkpoint(encoder, str(directory))


def _spm_record(path):
    return {"kind": "sentencepiece", "sha256": _sha(path)}


@pytest.fixture
def spm_files():
    if not SPM.exists() or not OTHER_SPM.exists():
        pytest.skip(f"real data not available: {SPM.parent} is absent")
    return SPM, OTHER_SPM


def test_every_kind_of_init_checkpoint_is_checked_and_a_plain_one_is_not(tmp_path, spm_files):
    from albert_tf.checkpoints.export_encoder import export_encoder
    from albert_tf.checkpoints.finetuned import write_task_files
    from albert_tf.checkpoints.task_info import TaskInfo
    from data_pipeline.tokenization.spec import TokenizerSpec

    spm, other = spm_files
    given = f"--spm_model_file={other}"
    # a run: run_config.json beside checkpoints/ (its identity's tokenizer)
    run = tmp_path / "run"
    _checkpoint(run / "checkpoints")
    RunRecord(_identity(tokenizer=_spm_record(spm)), (), {}).write(str(run))
    # an encoder export of that run records the tokenizer in tokenizer.json
    export = tmp_path / "export"
    export_encoder(str(run / "checkpoints"), str(export), tiny_config())
    written = json.loads((export / TOKENIZER_RECORD_FILE).read_text())
    assert written["sha256"] == _sha(spm) and written["kind"] == "sentencepiece"
    # a fine-tuned directory: its own spm.model
    finetuned = tmp_path / "finetuned"
    _checkpoint(finetuned)
    write_task_files(
        str(finetuned),
        TaskInfo.build("classifier", labels=["0", "1"]),
        TokenizerSpec.from_files(str(spm)),
    )
    # a plain checkpoint records nothing
    plain = tmp_path / "plain"
    _checkpoint(plain)
    assert recorded_tokenizer(str(plain / "ckpt-1")) is None
    check_tokenizer(str(plain), _spm_record(other), given)

    for source, where in (
        (run, run / RUN_RECORD_FILE),
        (run / "checkpoints", run / RUN_RECORD_FILE),
        (export, export / TOKENIZER_RECORD_FILE),
        (finetuned, finetuned / "spm.model"),
    ):
        check_tokenizer(str(source), _spm_record(spm), f"--spm_model_file={spm}")  # the same
        with pytest.raises(ValueError) as e:
            check_tokenizer(str(source), _spm_record(other), given)
        line = str(e.value)
        assert "\n" not in line, line
        assert line.startswith(f"--init_checkpoint={source} was trained with a SentencePiece")
        assert f"sha256 {_sha(spm)[:16]}... ({where})" in line
        assert f"but {given} has sha256 {_sha(other)[:16]}..." in line
    # another kind is named as such
    with pytest.raises(ValueError, match=r"but --vocab_file=v.txt is a WordPiece vocab.txt"):
        check_tokenizer(
            str(export), {"kind": "wordpiece", "sha256": "0" * 64}, "--vocab_file=v.txt"
        )


def test_convert_records_the_vocabulary_its_source_ships(tmp_path, spm_files):
    """A Hugging Face encoder directory with its spiece.model: `convert` writes
    tokenizer.json, and fine-tuning from the output with another model is refused."""
    import shutil

    pytest.importorskip("transformers")
    import transformers

    from albert_tf.checkpoints.convert import convert

    spm, other = spm_files
    source = tmp_path / "hf"
    config = transformers.AlbertConfig(**tiny_fields(num_hidden_layers=2))
    transformers.AlbertModel(config).save_pretrained(str(source))
    shutil.copy(spm, source / "spiece.model")
    report = convert("transformers", str(source), str(tmp_path / "out"))
    assert report["tokenizer"]["sha256"] == _sha(spm)
    recorded = json.loads((tmp_path / "out" / TOKENIZER_RECORD_FILE).read_text())
    assert recorded["sha256"] == _sha(spm) and recorded["file"] == "spiece.model"
    with pytest.raises(ValueError, match=r"has sha256 " + _sha(other)[:16]):
        check_tokenizer(str(tmp_path / "out"), _spm_record(other), f"--spm_model_file={other}")


def test_lora_rank_and_targets_never_change_the_other_controls_when_allowed():
    lora = dict(SETTINGS, lora_rank=4, lora_alpha=8.0, lora_targets=["query", "value"])
    lora.update(teacher_checkpoint="T1", distill_temperature=2.0, distill_alpha=0.5)
    lora.update(class_weights="auto")
    record = RunRecord(_identity(), (Segment(0, None, lora),), {}, "R/run_config.json")
    assert record.check_settings(dict(lora), (), RULES) == []
    for change in ({"lora_rank": 8}, {"lora_targets": ["query", "value", "ffn"]}):
        with pytest.raises(ValueError) as e:  # (allowed or not: the checkpoints hold them)
            record.check_settings(dict(lora, **change), (), RULES)
        (name,) = change
        line = str(e.value)
        assert "\n" not in line and "with other LoRA adapters" in line and name in line
        assert "R/run_config.json" in line
    assert "lora_rank" in FIXED_SETTINGS and "lora_rank" not in GUARDED_SETTINGS
    with pytest.raises(ValueError, match=r"^--allow_changed=lora_rank: lora_rank is not"):
        check_allowed(("lora_rank",), GUARDED_SETTINGS)
    # the loss's settings are guarded: refused, named, and allowed explicitly
    changed = dict(lora, teacher_checkpoint="T2", distill_alpha=0.8, class_weights="1,2")
    changed.update(lora_alpha=16.0)
    with pytest.raises(ValueError) as e:
        record.check_settings(changed, (), RULES)
    line = str(e.value)
    assert 'teacher_checkpoint: "T1" → "T2"' in line and "distill_alpha: 0.5 → 0.8" in line
    assert 'class_weights: "auto" → "1,2"' in line and "lora_alpha: 8.0 → 16.0" in line
    names = ("lora_alpha", "teacher_checkpoint", "distill_alpha", "class_weights")
    assert "--allow_changed=" + ",".join(names) in line
    assert len(record.check_settings(changed, names, RULES)) == 4
    # a setting recorded by older runs only (or by no runner) is not compared
    assert (
        RunRecord(_identity(), (Segment(0, None, SETTINGS),)).check_settings(changed, (), RULES)
        == []
    )
