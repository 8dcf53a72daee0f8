"""--teacher_logits_file: distillation from a file of a teacher's outputs. Distilling from a
file that holds an ALBERT teacher's logits trains the same student, step for step, as
--teacher_checkpoint with that teacher (labelled rows named by id, unlabelled ones by text);
a bad file is one line naming the file and the line."""

import json

import numpy as np
import pytest

from data_pipeline.classification.examples import Example
from data_pipeline.classification.teacher_logits import read_teacher_logits
from tests.support.in_process import run_command
from tests.support.tiny import WORKFLOW, write_tiny_config
from tests.workflows.test_lora_workflow import _teacher

LABELS = ["0", "1"]


def _write(path, rows, labels=LABELS):
    lines = [json.dumps({"labels": labels})] + [json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_rows_by_id_or_text_probabilities_as_logs(tmp_path):
    path = _write(
        tmp_path / "t.jsonl",
        [
            {"id": "0", "logits": [1.5, -2.0]},
            {"text": "a premise", "text_pair": "a hypothesis", "probabilities": [0.25, 0.75]},
        ],
    )
    table = read_teacher_logits(path, LABELS)
    examples = [
        Example("train-0", "whatever text", None, "1"),
        Example("unlabelled-3", "a premise", "a hypothesis", None),
    ]
    got = table.logits_for(examples)
    np.testing.assert_array_equal(got[0], np.float32([1.5, -2.0]))
    np.testing.assert_allclose(got[1], np.log([0.25, 0.75]), rtol=1e-6)


@pytest.mark.parametrize(
    "rows, labels, message",
    [
        ([], ["1", "0"], ":1: labels ['1', '0'] are not the task's ['0', '1']"),
        ([{"id": "0", "logits": [1.0, 2.0, 3.0]}], LABELS, ":2: 3 logits, the task has 2 labels"),
        ([{"id": "0", "logits": [1.0]}, {"id": "0", "logits": [1.0, 2.0]}], LABELS, ":2: 1 logits"),
        (
            [{"id": "0", "logits": [1.0, 2.0]}, {"id": "0", "logits": [1.0, 2.0]}],
            LABELS,
            ":3: '0' again (line 2)",
        ),
        ([{"id": "0", "logits": [1.0, None]}], LABELS, ":2: logits must be a list of finite"),
        ([{"id": "0", "probabilities": [1.5, 0.0]}], LABELS, ":2: probabilities must be in"),
        ([{"logits": [1.0, 2.0]}], LABELS, ':2: name the example by "id" or "text"'),
    ],
)
def test_bad_files_are_one_line_naming_file_and_line(tmp_path, rows, labels, message):
    path = _write(tmp_path / "t.jsonl", rows, labels)
    with pytest.raises(ValueError) as e:
        read_teacher_logits(path, LABELS)
    assert str(e.value).startswith(f"--teacher_logits_file={path}") and message in str(e.value)
    assert "\n" not in str(e.value)


def test_a_missing_example_names_the_file_and_the_examples_line(tmp_path):
    table = read_teacher_logits(
        _write(tmp_path / "t.jsonl", [{"id": "0", "logits": [0, 1]}]), LABELS
    )
    with pytest.raises(ValueError, match=r"t\.jsonl: no logits for example train-7 \(line 9 of"):
        table.logits_for([Example("train-7", "seven", None, "0", line=9)])
    # An unlabelled line is named by its text (or whole id), never by a labelled row's number.
    with pytest.raises(ValueError, match="no logits for example unlabelled-0 "):
        table.logits_for([Example("unlabelled-0", "not in the file", None, None, line=1)])


def _data(tmp_path, shared_data):
    """A user's tsv task of 64 SST-2 training sentences (dev: 32), and 16 unlabelled ones."""
    rows = (shared_data / "glue" / "SST-2" / "train.tsv").read_text(encoding="utf-8")
    rows = rows.splitlines()[1:]
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows[:64]) + "\n")
    (data / "dev.tsv").write_text("sentence\tlabel\n" + "\n".join(rows[64:96]) + "\n")
    unlabelled = [r.split("\t")[0] for r in rows[96:112]]
    (tmp_path / "unlabelled.txt").write_text("".join(t + "\n" for t in unlabelled))
    return data, [r.split("\t")[0] for r in rows[:64]], unlabelled


def _student(tmp_path, shared_data, data, out, *teacher):
    return run_command(
        "run_classifier.py",
        "--task_name=tsv",
        f"--data_dir={data}",
        "--text_a_column=sentence",
        f"--output_dir={out}",
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={write_tiny_config(tmp_path / 'student.json', base=WORKFLOW)}",
        "--max_seq_length=32",
        "--pad_to_max_seq_length",
        "--train_batch_size=16",
        "--eval_batch_size=128",
        "--train_step=6",
        "--steps_per_loop=2",
        "--learning_rate=1e-3",
        "--distill_temperature=2",
        "--distill_alpha=0.7",
        f"--distill_unlabelled_file={tmp_path / 'unlabelled.txt'}",
        "--do_train",
        *teacher,
    )


@pytest.mark.slow  # two fine-tuning runs
def test_a_file_of_the_teachers_logits_trains_the_same_student(tmp_path, shared_data):
    import tensorflow as tf

    from albert_tf.checkpoints.finetuned import load_finetuned
    from albert_tf.training.distillation import teacher_logits
    from data_pipeline.classification.features import classifier_dataset

    data, texts, unlabelled = _data(tmp_path, shared_data)
    teacher = _teacher(tmp_path, shared_data, LABELS)
    by_checkpoint = _student(
        tmp_path, shared_data, data, tmp_path / "a", f"--teacher_checkpoint={teacher}"
    )
    assert by_checkpoint.returncode == 0, by_checkpoint.report()
    # The file: the teacher's logits over the run's records (labelled, then unlabelled),
    # computed as run_classifier does, written as JSON (float32 → float → float32: exact).
    model, _ = load_finetuned(teacher)
    records = tmp_path / "a" / "cache" / "tsv-train+unlabelled.tfrecord"
    logits = teacher_logits(model, classifier_dataset(str(records), 128, 32, drop_remainder=False))
    assert logits.shape == (80, 2)
    rows = [{"id": str(i), "logits": logits[i].tolist()} for i in range(len(texts))]
    rows += [{"text": t, "logits": logits[64 + j].tolist()} for j, t in enumerate(unlabelled)]
    path = _write(tmp_path / "teacher.jsonl", rows[::-1])  # (any order)
    by_file = _student(tmp_path, shared_data, data, tmp_path / "b", f"--teacher_logits_file={path}")
    assert by_file.returncode == 0, by_file.report()

    def metrics(out):
        lines = (out / "metrics.jsonl").read_text().splitlines()
        return [r for r in map(json.loads, lines) if r["split"] == "train"]

    a, b = metrics(tmp_path / "a"), metrics(tmp_path / "b")
    assert len(a) == 3 and [r["step"] for r in a] == [r["step"] for r in b]
    for x, y in zip(a, b):
        for key in ("task_loss", "distill_kl", "label_ce"):
            assert x[key] == y[key], key  # (the same table: the same steps, bit for bit)
    assert a[-1]["distill_kl"] > 0
    for (name, _), (_, _) in zip(
        tf.train.list_variables(str(tmp_path / "a" / "checkpoints")),
        tf.train.list_variables(str(tmp_path / "b" / "checkpoints")),
    ):
        if not name.startswith("model/"):
            continue
        left = tf.train.load_variable(str(tmp_path / "a" / "checkpoints"), name)
        right = tf.train.load_variable(str(tmp_path / "b" / "checkpoints"), name)
        np.testing.assert_array_equal(left, right, err_msg=name)
    recorded = json.loads((tmp_path / "b" / "run_config.json").read_text())["segments"][-1]
    assert recorded["settings"]["teacher_logits_file"] == path
    # A file that misses an example: one line naming it, nothing written.
    short = _write(tmp_path / "short.jsonl", rows[1:])
    bad = _student(tmp_path, shared_data, data, tmp_path / "c", f"--teacher_logits_file={short}")
    errors = [line for line in bad.stderr.splitlines() if line.startswith("error:")]
    assert bad.returncode == 1 and len(errors) == 1, bad.report()
    assert f"--teacher_logits_file={short}: no logits for example row-0 (line 2 of" in errors[0]


@pytest.mark.slow  # a conversion and a PyTorch teacher
def test_the_hugging_face_script_writes_the_teachers_logits(tmp_path, shared_data):
    """hf_teacher_logits over the teacher converted --to transformers: the file reads back
    with the task's labels and holds, by text, the logits our own teacher gives."""
    from albert_tf.checkpoints.finetuned import load_finetuned
    from data_pipeline.classification.features import convert_examples
    from data_pipeline.tokenization.spec import TokenizerSpec

    _, texts, unlabelled = _data(tmp_path, shared_data)
    teacher = _teacher(tmp_path, shared_data, LABELS)
    hf = tmp_path / "hf"
    converted = run_command(
        "-m",
        "albert_tf.checkpoints.convert",
        "--to=transformers",
        f"--input={teacher}",
        f"--output_dir={hf}",
    )
    assert converted.returncode == 0, converted.report()
    (tmp_path / "texts.txt").write_text("".join(t + "\n" for t in texts[:24] + unlabelled))
    out = tmp_path / "teacher.jsonl"
    run = run_command(
        "-m",
        "albert_tf.tools.hf_teacher_logits",
        f"--model={hf}",
        f"--input_file={tmp_path / 'texts.txt'}",
        f"--output_file={out}",
        "--max_seq_length=32",
        "--batch_size=8",
    )
    assert run.returncode == 0 and "40 examples' logits" in run.stdout, run.report()
    table = read_teacher_logits(str(out), LABELS)
    examples = [Example(f"x-{i}", t, None, None) for i, t in enumerate(texts[:24] + unlabelled)]
    got = table.logits_for(examples)
    model, _ = load_finetuned(teacher)
    tokenizer = TokenizerSpec.from_files(str(shared_data / "spm" / "de-30k-clean.model")).build()
    features = convert_examples(examples, tokenizer, 32, None)
    inputs = {k: features[k].astype(np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    want = model(inputs, training=False)["logits"].numpy()
    # The script tokenizes with the model's own (Hugging Face) tokenizer: compared where it
    # gives our ids (its AlbertTokenizer splits some hyphenated words otherwise).
    from transformers import AutoTokenizer

    theirs = AutoTokenizer.from_pretrained(str(hf))
    same = [
        i
        for i, e in enumerate(examples)
        if theirs(e.text_a, truncation=True, max_length=32)["input_ids"]
        == [int(x) for x, m in zip(features["input_ids"][i], features["input_mask"][i]) if m]
    ]
    assert len(same) >= 30, len(same)
    np.testing.assert_allclose(got[same], want[same], atol=1e-5)
    assert np.abs(want[:, 0] - want[:, 1]).max() > 1e-3  # (rows that tell examples apart)
