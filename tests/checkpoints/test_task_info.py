"""task.json, typed (albert_tf.checkpoints.task_info) and its registry of task kinds
(albert_tf.checkpoints.task_kinds): round trips, one-line errors naming the file and the
field, vocabulary paths confined to the directory, and each kind's model and rules."""

import json
import os

import pytest

from albert_tf.checkpoints.task_info import TASK_FILE, TaskInfo
from albert_tf.checkpoints.task_kinds import FINETUNED_KINDS, KINDS
from data_pipeline.tokenization.spec import TokenizerSpec


def _write(directory, content) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content)
    (directory / TASK_FILE).write_text(text)
    return str(directory)


def test_every_kind_round_trips_through_task_json(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n")
    tasks = [
        TaskInfo.build("classifier", labels=["no", "yes"], text_pair=False, max_seq_length=48),
        TaskInfo.build("classifier", regression=True, max_seq_length=8, do_lower_case=False),
        TaskInfo.build("multiple_choice", num_choices=4, max_seq_length=512, step=7),
        TaskInfo.build(
            "squad", version_2_with_negative=True, squad_head="albert", doc_stride=32, step=3
        ),
    ]
    for i, task in enumerate(tasks):
        directory = tmp_path / str(i)
        directory.mkdir()
        spec = TokenizerSpec.from_files(vocab_file=str(vocab), do_lower_case=task.do_lower_case)
        os.link(vocab, directory / "vocab.txt")
        with_vocab = task.with_tokenizer(spec)
        with_vocab.write(str(directory))
        back = TaskInfo.read(str(directory))
        assert back == with_vocab and back.directory == str(directory)
        assert json.loads((directory / TASK_FILE).read_text())["vocab_file"] == "vocab.txt"
        assert back.tokenizer() == spec.with_path(str(directory / "vocab.txt"))
    assert tasks[0].details.labels == ("no", "yes") and tasks[3].details.n_best_size == 20


def test_files_of_older_versions_still_read(tmp_path):
    """What serving_task and run_squad wrote before the typed file: a classifier's
    "num_choices": null, a multiple-choice model's "regression": false, no vocabulary key
    (then spm.model, when present)."""
    old = {
        "kind": "multiple_choice",
        "task_name": "race",
        "text_pair": True,
        "labels": ["A", "B", "C", "D"],
        "regression": False,
        "num_choices": 4,
        "max_seq_length": 512,
        "do_lower_case": True,
        "step": 10,
        "spm_model": "spm.model",
    }
    task = TaskInfo.read(_write(tmp_path / "mc", old))
    assert task.details.num_choices == 4 and task.vocabulary == "spm.model"
    assert task.tokenizer() is None  # (the file is absent)
    cls = dict(old, kind="classifier", num_choices=None, labels=["0", "1"])
    assert TaskInfo.read(_write(tmp_path / "cls", cls)).details.labels == ("0", "1")


@pytest.mark.parametrize(
    "content,message",
    [
        ({"kind": "tagger"}, "task kind 'tagger' is not one of classifier"),
        ({"kind": "classifier"}, "a classifier needs 'labels'"),
        ({"kind": "squad", "doc_stride": "128"}, "field 'doc_stride' must be int, not '128'"),
        ({"kind": "squad", "max_seq_length": True}, "field 'max_seq_length' must be int"),
        ({"kind": "squad", "max_seq_length": 0}, "'max_seq_length' must be ≥ 1"),
        ({"kind": "squad", "squad_head": "xlnet"}, "'squad_head' 'xlnet' is not one of"),
        ({"kind": "squad", "lables": ["a"]}, "unknown field 'lables'"),
        ({"kind": "squad", "spm_model": "a", "vocab_file": "b"}, "not both"),
        ([1, 2], "expected a JSON object, not list"),
        ('{"kind": "squad",\n "doc_stride": }', ":2: invalid JSON"),
    ],
)
def test_a_bad_task_json_is_one_line_naming_the_file_and_field(tmp_path, content, message):
    directory = _write(tmp_path / "model", content)
    with pytest.raises(ValueError) as e:
        TaskInfo.read(directory)
    assert str(e.value).startswith(os.path.join(directory, TASK_FILE))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["../spm.model", "/etc/passwd", "sub/spm.model", "..", ""])
def test_a_vocabulary_outside_the_directory_is_refused(tmp_path, name):
    """The vocabulary task.json names is a plain file name inside the directory, nothing else."""
    directory = _write(tmp_path / "model", {"kind": "squad", "spm_model": name})
    with pytest.raises(ValueError) as e:
        TaskInfo.read(directory)
    assert f"{directory}/task.json: field 'spm_model' is {name!r}" in str(e.value)


def test_a_link_leading_outside_the_directory_is_refused(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("[PAD]\n")
    directory = _write(tmp_path / "model", {"kind": "squad", "vocab_file": "vocab.txt"})
    os.symlink(outside, tmp_path / "model" / "vocab.txt")
    with pytest.raises(ValueError, match=r"task.json: field 'vocab_file' is 'vocab.txt', a link"):
        TaskInfo.read(directory)
    os.remove(tmp_path / "model" / "vocab.txt")
    (tmp_path / "model" / "real.txt").write_text("[PAD]\n")
    os.symlink("real.txt", tmp_path / "model" / "vocab.txt")  # inside: fine
    assert TaskInfo.read(directory).tokenizer().path == str(tmp_path / "model" / "vocab.txt")


def test_each_kind_builds_its_model_and_keeps_its_rules():
    from tests.support.harness import tiny_config

    config = tiny_config()
    outputs = {}
    for name in KINDS:
        extra = {"labels": ["a", "b", "c"]} if name in ("classifier", "token_classifier") else {}
        if name == "zero_shot":
            extra = {"labels": ["contradiction", "entailment"], "entailment_id": 1}
            extra["contradiction_id"] = 0
        model = TaskInfo.build(name, **extra).model(config)
        model.build()
        outputs[name] = type(model).__name__
    assert outputs == {
        "classifier": "AlbertClassifier",
        "multiple_choice": "AlbertMultipleChoice",
        "squad": "AlbertQuestionAnswering",
        "token_classifier": "AlbertTokenClassifier",
        "encoder": "AlbertEncoder",
        "fill_mask": "AlbertPretrainer",
        "zero_shot": "AlbertClassifier",
    }
    v2 = TaskInfo.build("squad", squad_head="albert").model(config)
    assert type(v2).__name__ == "AlbertQuestionAnsweringV2"
    finetuned = ("classifier", "multiple_choice", "squad", "token_classifier", "zero_shot")
    assert FINETUNED_KINDS == finetuned
    refused = {n for n, k in KINDS.items() if k.on_device_refusal(wordpiece=True)}
    assert refused == {"squad", "token_classifier", "zero_shot"}
    refused = {n for n, k in KINDS.items() if k.on_device_refusal(wordpiece=False)}
    assert refused == {"zero_shot"}
    assert "on-device SQuAD files of WordPiece models" in KINDS["squad"].on_device_refusal(True)


def test_a_new_task_family_is_one_registry_entry(tmp_path, monkeypatch):
    """A kind added to the registry (here a multi-label classifier) reads, writes and
    builds its model through TaskInfo with no other change."""
    import dataclasses

    from albert_tf.checkpoints.finetuned import load_finetuned, save_finetuned
    from albert_tf.checkpoints.task_kinds.kind import TaskKind
    from tests.support.harness import random_batch, tiny_config

    @dataclasses.dataclass(frozen=True)
    class MultiLabelFields:
        labels: tuple[str, ...] = ()
        threshold: float = 0.5

    def model(config, fields):
        from albert_tf.modeling.models import AlbertClassifier

        return AlbertClassifier(config, len(fields.labels), dropout=0.0)

    kind = TaskKind("multi_label", "multi-label", MultiLabelFields, model)
    monkeypatch.setitem(KINDS, "multi_label", kind)
    task = TaskInfo.build("multi_label", labels=["a", "b", "c"], threshold=0.3, max_seq_length=16)
    built = task.model(tiny_config())
    built.build()
    directory = save_finetuned(built, str(tmp_path / "model"), task, None)
    restored, back = load_finetuned(directory)
    assert back == task and back.details.threshold == 0.3
    batch = random_batch()
    inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
    assert restored(inputs, training=False)["logits"].shape == (3, 3)


def test_a_token_classifier_needs_tags_and_a_stride_and_a_known_scheme():
    info = TaskInfo.build("token_classifier", labels=["O", "B-PER"], max_seq_length=16)
    assert info.details.doc_stride == 128 and info.details.scheme is None
    assert info.details.max_windows is None  # (request_windows.DEFAULT_MAX_WINDOWS when served)
    again = TaskInfo.from_json(info.to_json(), "task.json")
    assert again == info and again.to_json()["labels"] == ["O", "B-PER"]
    for bad, reason in (
        ({}, "needs 'labels'"),
        ({"labels": ["O", "O"]}, "repeated tag"),
        ({"labels": ["O"], "doc_stride": 0}, "'doc_stride' must be ≥ 1"),
        ({"labels": ["O"], "scheme": "IOB9"}, "'scheme' 'IOB9' is not one of IOB2"),
        ({"labels": ["O"], "max_windows": 0}, "'max_windows' must be ≥ 1, not 0"),
    ):
        with pytest.raises(ValueError, match=f"task.json: .*{reason}"):
            TaskInfo.build("token_classifier", **bad)
