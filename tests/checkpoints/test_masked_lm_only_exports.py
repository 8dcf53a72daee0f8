"""C-series fault 3: a checkpoint with the masked-LM head and no SOP head (every Model Garden
and TF-Hub v2 import: Model Garden's pretrainer has no SOP head) keeps its head through
every export, in process through the real converters: Model Garden → ours → Model Garden
gives back every variable with its value (nothing unmatched), Hugging Face gets
AlbertForMaskedLM and KerasHub AlbertMaskedLM, each with our masked-LM logits. Before,
every `--to` treated such a checkpoint as encoder-only and dropped the head."""

import numpy as np
import pytest
import tensorflow as tf

from tests.support.harness import random_batch
from tests.support.tiny import tiny_config

MLM_VARIABLES = 5  # dense kernel and bias, LayerNorm gamma and beta, output bias


@pytest.fixture
def imported(tmp_path):
    """(our pretrainer, the Model Garden checkpoint, our import of it): a Model Garden
    checkpoint of a randomized tiny pretrainer (encoder and masked_lm, as Model Garden's
    BertPretrainerV2 saves), imported with `convert --source model_garden`."""
    import keras

    from albert_tf.checkpoints import save_checkpoint
    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.export_model_garden import export_model_garden
    from albert_tf.modeling.models import AlbertPretrainer

    keras.utils.set_random_seed(4)
    config = tiny_config(num_hidden_layers=2)
    model = AlbertPretrainer(config)
    model.build()
    rng = np.random.default_rng(4)
    for w in model.weights:
        w.assign((1.0 if "gamma" in w.path else 0.0) + rng.normal(0, 0.2, w.shape))
    save_checkpoint(model, str(tmp_path / "ours"), config)
    export_model_garden(str(tmp_path / "ours"), str(tmp_path / "mg"))
    mg = str(tmp_path / "mg" / "ckpt-1")
    report = convert(
        "model_garden", mg, str(tmp_path / "in"), str(tmp_path / "mg" / "albert_config.json")
    )
    assert report["heads_written"] == ["mlm_head"]  # Model Garden has no SOP head
    assert report["unused_source_variables"] == [] and report["model_garden"]["not_imported"] == {}
    return model, mg, tmp_path / "in"


def _values(prefix) -> dict:
    return {
        name: tf.train.load_variable(prefix, name)
        for name, _ in tf.train.list_variables(prefix)
        if name.endswith("VARIABLE_VALUE") and not name.startswith("save_counter")
    }


def test_model_garden_round_trip_leaves_nothing_unmatched(imported, tmp_path):
    from albert_tf.checkpoints.export_model_garden import export_model_garden

    _, mg, ours = imported
    report = export_model_garden(str(ours), str(tmp_path / "mg_back"))
    assert report["written"] == "encoder and masked_lm" and report["not_written"] == []
    before, after = _values(mg), _values(str(tmp_path / "mg_back" / "ckpt-1"))
    assert sorted(after) == sorted(before)
    assert sum("masked_lm/" in k for k in after) >= MLM_VARIABLES
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


def test_hugging_face_gets_the_head_as_albert_for_masked_lm(imported, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from albert_tf.checkpoints.export_transformers import export_transformers

    model, _, ours = imported
    report = export_transformers(str(ours), str(tmp_path / "hf"))
    assert report["architecture"] == "AlbertForMaskedLM" and report["not_written"] == ["pooler"]
    hf, info = transformers.AlbertForMaskedLM.from_pretrained(
        str(tmp_path / "hf"), output_loading_info=True
    )
    assert not info["unexpected_keys"]  # (the tied decoder may be listed as missing)
    assert set(info["missing_keys"]) <= {"predictions.decoder.weight"}
    batch = random_batch()
    with torch.no_grad():
        theirs = hf(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
        ).logits.numpy()
    mine = model(batch)["mlm_logits"].numpy()  # at batch["masked_lm_positions"]
    rows = np.arange(len(mine))[:, None]
    np.testing.assert_allclose(theirs[rows, batch["masked_lm_positions"]], mine, atol=1e-4)


def test_keras_hub_gets_the_head_as_albert_masked_lm(imported, tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    from albert_tf.checkpoints.export_keras_hub import export_keras_hub

    model, _, ours = imported
    report = export_keras_hub(str(ours), str(tmp_path / "kh"))
    assert report["written"] == "AlbertMaskedLM" and report["not_written"] == []
    loaded = keras_hub.models.AlbertMaskedLM.from_preset(str(tmp_path / "kh"), preprocessor=None)
    batch = random_batch()
    theirs = loaded(
        {
            "token_ids": batch["input_ids"],
            "segment_ids": batch["segment_ids"],
            "padding_mask": batch["input_mask"],
            "mask_positions": batch["masked_lm_positions"],
        }
    )
    mine = model(batch)["mlm_logits"].numpy()
    # (KerasHub's MaskedLMHead normalizes with epsilon 1e-5, ALBERT with 1e-12)
    np.testing.assert_allclose(np.asarray(theirs), mine, atol=1e-4)
