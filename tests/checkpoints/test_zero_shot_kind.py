"""The zero-shot kind (albert_tf.checkpoints.task_kinds.zero_shot): made from an NLI
classifier's task.json, with the entailment and contradiction indices Hugging Face's
pipeline would read; anything else refused with one line naming the directory and the
labels; its task.json read back as written."""

import pytest

from albert_tf.checkpoints.task_info import TaskInfo
from albert_tf.checkpoints.task_kinds.zero_shot import (
    check_template,
    contradiction_index,
    entailment_index,
    from_classifier,
)


@pytest.mark.parametrize(
    "labels, entail, contradict",
    [
        (["contradiction", "entailment", "neutral"], 1, 0),  # run_classifier's MNLI
        (["CONTRADICTION", "NEUTRAL", "ENTAILMENT"], 2, 0),  # roberta-large-mnli's
        (["entailment", "not_entailment"], 0, 1),  # RTE: Hugging Face's "last" rule
        (["neutral", "entails", "contradicts"], 1, 2),  # a named contradiction wins
        (["neutral", "Entailment", "other"], 1, 0),  # none named: index 0
    ],
)
def test_indices(labels, entail, contradict):
    assert entailment_index(labels) == entail
    assert contradiction_index(labels, entail) == contradict


def _classifier(**fields):
    return TaskInfo.build("classifier", max_seq_length=96, do_lower_case=False, **fields)


def test_made_from_an_nli_classifier_and_read_back(tmp_path):
    info = _classifier(labels=["contradiction", "entailment", "neutral"], task_name="mnli")
    made = from_classifier(info, "DIR")
    assert made.kind == "zero_shot" and made.max_seq_length == 96
    assert made.do_lower_case is False
    d = made.details
    assert (d.entailment_id, d.contradiction_id) == (1, 0)
    assert d.labels == ("contradiction", "entailment", "neutral") and d.task_name == "mnli"
    assert d.hypothesis_template == "This example is {}." and d.max_pairs is None
    made.write(str(tmp_path))
    assert TaskInfo.read(str(tmp_path)) == made


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"labels": ["neg", "pos"]}, "labels ['neg', 'pos']: none of its labels starts with"),
        ({"regression": True}, "labels []: it is a regression model"),
        ({"labels": ["entailment", "x"], "text_pair": False}, "it reads single texts"),
        ({"labels": ["entailment", "x"], "multi_label": True}, "it is multi-label"),
    ],
)
def test_anything_but_an_nli_classifier_is_refused_in_one_line(fields, says):
    with pytest.raises(ValueError) as e:
        from_classifier(_classifier(**fields), "/models/sst2")
    message = str(e.value)
    assert message.startswith("/models/sst2: labels [") and says in message
    assert "\n" not in message


def test_another_kind_is_refused():
    with pytest.raises(ValueError, match=r"^D holds a squad model; zero-shot"):
        from_classifier(TaskInfo.build("squad"), "D")


@pytest.mark.parametrize("template", ["no slot", "{} and {}", "{label}", "{{}}", "a {} }"])
def test_a_template_needs_one_slot_and_no_other_brace(template):
    with pytest.raises(ValueError, match="exactly once and no other brace"):
        check_template(template)


def test_task_json_fields_are_checked():
    base = {"labels": ["contradiction", "entailment"], "entailment_id": 1, "contradiction_id": 0}
    assert TaskInfo.build("zero_shot", **base).details.entailment_id == 1
    for bad, says in [
        ({"entailment_id": 2}, "entailment_id=2 is not an index of 2 labels"),
        ({"contradiction_id": 1}, "must differ"),
        ({"hypothesis_template": "x"}, "exactly once"),
        ({"max_pairs": 0}, "'max_pairs' must be ≥ 1"),
    ]:
        with pytest.raises(ValueError, match=says):
            TaskInfo.build("zero_shot", **dict(base, **bad))


def test_a_zero_shot_directory_does_not_leave_as_a_hugging_face_class(tmp_path):
    """(Its export's assets.extra/finetuned is one: the NLI classifier it was made from
    converts, this does not, rather than a config.json naming no class.)"""
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.checkpoints.export_transformers import export_transformers
    from albert_tf.checkpoints.finetuned import save_finetuned
    from tests.support.harness import tiny_config

    info = TaskInfo.build(
        "zero_shot", labels=["contradiction", "entailment"], entailment_id=1, contradiction_id=0
    )
    model = info.model(tiny_config())
    model.build()
    save_finetuned(model, str(tmp_path / "zs"), info, None)
    refused = "the zero-shot classifier kind has no Hugging Face class"
    with pytest.raises(CheckpointError, match=refused):
        export_transformers(str(tmp_path / "zs"), str(tmp_path / "hf"))
    assert not (tmp_path / "hf" / "config.json").exists()
