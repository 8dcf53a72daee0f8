"""Each task kind plugs into every consumer through its own registry entries and hooks
(albert_tf.checkpoints.task_kinds, albert_tf.serving.export.SERVING,
albert_tf.serving.tflite_predict.RUNNERS): the registries agree, each kind's export options
are the export command's flags, and a consumer a kind does not support answers with one
line naming the kind, from its hook."""

import dataclasses

import pytest

from albert_tf.checkpoints.task_kinds import KINDS
from albert_tf.checkpoints.task_kinds.kind import TaskKind


def test_every_kind_has_its_serving_builders_and_on_device_runner():
    from albert_tf.serving.registry import SERVING
    from albert_tf.serving.tflite_predict import RUNNERS

    assert set(SERVING) == set(KINDS)
    on_device = {n for n, k in KINDS.items() if not k.on_device_refusal(wordpiece=False)}
    # Every kind has a runner: the LiteRT files' kinds, and zero-shot's (ONNX files only).
    assert set(RUNNERS) == set(KINDS) and on_device == set(KINDS) - {"zero_shot"}
    for name, runner in RUNNERS.items():
        assert runner.KIND == name and callable(runner.takes_ids) and callable(runner.answers)
        assert callable(SERVING[name].onnx)  # (ONNX files: every kind)
    ids_in = {n for n, r in RUNNERS.items() if r.takes_ids({})}
    assert ids_in == {"squad", "token_classifier", "fill_mask", "zero_shot"}
    assert RUNNERS["classifier"].takes_ids({"doc_stride": 64})  # long documents: ids in


def test_each_kinds_export_options_are_the_export_commands_flags():
    from albert_tf.serving.export_command import TASKS, command
    from albert_tf.serving.registry import SERVING

    assert TASKS == tuple(SERVING)  # (listed without TensorFlow for --help)
    fv = {name for _, field, _ in command("").fields() for name in [field.name]}
    options = {n: set(k.export_options) for n, k in KINDS.items()}
    assert all(o <= set(fv) for o in options.values()), options
    per_kind = {"pooling", "normalize", "encoder_outputs", "top_k", "max_windows"}
    per_kind |= {"doc_stride", "max_query_length", "max_answer_length", "n_best_size"}
    per_kind |= {"null_score_diff_threshold", "max_pairs"}
    assert set().union(*options.values()) == per_kind
    assert options["squad"] >= {"doc_stride", "max_windows"} and options["classifier"] == {
        "max_windows"
    }
    with pytest.raises(ValueError, match="export option 'nope' is not one of its fields"):
        dataclasses.replace(KINDS["fill_mask"], export_options=("nope",))


def test_a_consumer_a_kind_does_not_support_is_one_line_naming_it():
    @dataclasses.dataclass(frozen=True)
    class Fields:
        labels: tuple[str, ...] = ()

    bare = TaskKind("zero", "zero-shot", Fields, lambda config, fields: None)
    with pytest.raises(ValueError, match="^the zero-shot kind has no Hugging Face class$"):
        bare.transformers_head()
    with pytest.raises(ValueError, match="^the zero-shot kind has no KerasHub preset$"):
        bare.keras_hub_preset(None, None, None, None, None)
    assert bare.finetuned and bare.on_device_refusal(wordpiece=True) is None
    squad = KINDS["squad"]
    with pytest.raises(ValueError, match="--squad_head albert"):
        squad.transformers_head().config_out(squad.fields_from_json({"squad_head": "albert"}))
    with pytest.raises(ValueError, match="has no masked-LM head"):
        KINDS["fill_mask"].any_checkpoint(["encoder"], "ckpt")


def test_hugging_face_configs_round_trip_through_the_kinds():
    from albert_tf.checkpoints.transformers import transformers_task

    classifier = KINDS["classifier"].transformers
    fields = KINDS["classifier"].fields_from_json({"labels": ["a", "b"], "multi_label": True})
    hf = {"architectures": [classifier.architecture], **classifier.config_out(fields)}
    assert hf["problem_type"] == "multi_label_classification"
    assert transformers_task(hf) == {
        "kind": "classifier",
        "labels": ["a", "b"],
        "regression": False,
        "text_pair": True,
        "multi_label": True,
    }
    tagger = KINDS["token_classifier"].transformers
    tags = KINDS["token_classifier"].fields_from_json({"labels": ["O", "B-PER", "I-PER"]})
    hf = {"architectures": [tagger.architecture], **tagger.config_out(tags)}
    assert transformers_task(hf) == {"kind": "token_classifier", "labels": ["O", "B-PER", "I-PER"]}
    assert not tagger.pooler and KINDS["multiple_choice"].transformers.pooler
    assert transformers_task({"architectures": ["AlbertForQuestionAnswering"]}) == {"kind": "squad"}
