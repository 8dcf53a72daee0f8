"""Layer-wise learning-rate decay (albert_tf.training.layer_decay): the depth map of every
sharing mode on the real variables of tiny models, as the module documents it, and one
optimizer step with the per-variable rates equal to the official AdamW / LAMB equations
(numpy, float64) applied with each variable's own rate."""

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config
from tests.training.test_optimization import _reference_step

D = 0.8


def _classifier(**overrides):
    from albert_tf.modeling.models import AlbertClassifier

    model = AlbertClassifier(tiny_config(**overrides), 3, dropout=0.0)
    model.build()
    return model


def _expected(path, config):
    """The documented rule, written out per case: (exponent of d) for a variable path."""
    layers, groups, inner = (
        config.num_hidden_layers,
        config.num_hidden_groups,
        config.inner_group_num,
    )
    parts = path.split("/")
    if "embeddings" in parts or "embedding_hidden_mapping_in" in parts:
        return (groups if config.sharing == "all" else layers) * inner + 1
    for part in parts:
        if "_inner_group_" in part:
            kind, index, _, _, k = part.split("_")
            index, k = int(index), int(k)
            if config.sharing == "all":  # groups are the levels (all used here)
                return (groups - 1 - index) * inner + (inner - 1 - k) + 1
            if kind == "layer":
                return (layers - 1 - index) * inner + (inner - 1 - k) + 1
            # a shared sub-layer: the level of the topmost layer of its group
            top_layer = max(i for i in range(layers) if i * groups // layers == index)
            return (layers - 1 - top_layer) * inner + (inner - 1 - k) + 1
    return 0  # pooler and head


CASES = {
    "all, one group (released)": dict(sharing="all"),
    "all, two groups": dict(sharing="all", num_hidden_groups=2),
    "all, two inner blocks": dict(sharing="all", inner_group_num=2),
    "none": dict(sharing="none"),
    "attention shared in two groups": dict(sharing="attention", num_hidden_groups=2),
    "ffn shared, one group": dict(sharing="ffn"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_depth_map_of_each_sharing_mode_is_the_documented_one(case):
    from albert_tf.training.layer_decay import layer_scales

    model = _classifier(**CASES[case])
    config = tiny_config(**CASES[case])
    scales = layer_scales(model.trainable_variables, config, D)
    assert set(scales) == {v.path for v in model.trainable_variables}
    for path, scale in scales.items():
        assert scale == pytest.approx(D ** _expected(path, config), rel=1e-12), path
    # the concrete ends of the map
    top = [p for p in scales if "classifier_head" in p or "/pooler/" in p]
    assert top and all(scales[p] == 1.0 for p in top)
    embeddings = [p for p in scales if "/embeddings/" in p]
    assert len(embeddings) == 5 and len({scales[p] for p in embeddings}) == 1
    assert scales[embeddings[0]] == min(scales.values())


def test_released_sharing_gives_three_rates_whatever_the_depth():
    """sharing=all with one group: embeddings lr·d², the one shared group lr·d, the head
    lr — at 4 layers as at 12 (depth is parameter sets, not applications)."""
    from albert_tf.training.layer_decay import layer_scales

    for layers in (4, 12):
        model = _classifier(num_hidden_layers=layers)
        config = tiny_config(num_hidden_layers=layers)
        scales = layer_scales(model.trainable_variables, config, D)
        assert sorted(set(scales.values())) == pytest.approx([D**2, D, 1.0])
        assert all(s == pytest.approx(D) for p, s in scales.items() if "group_0_inner" in p)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_one_step_equals_the_official_update_at_each_variables_rate(name):
    import tensorflow as tf

    from albert_tf.training.layer_decay import apply_layer_decay
    from albert_tf.training.optimization import create_optimizer

    overrides = dict(sharing="attention", num_hidden_groups=2)
    model = _classifier(**overrides)
    config = tiny_config(**overrides)
    variables = model.trainable_variables
    # (no official names under sharing=attention: the reference's exclusion regexes
    # read the Keras paths, which hold "LayerNorm" and "bias" likewise)
    names = [v.path for v in variables]
    lr = 1e-2
    optimizer = create_optimizer(name, lr)
    optimizer.build(variables)
    scales = apply_layer_decay(optimizer, variables, config, D)
    assert len(set(scales.values())) == 6  # embeddings, 4 layers, head: not vacuous
    with tf.GradientTape() as tape:
        logits = model(random_batch(batch=4, seed=1), training=True)["logits"]
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.constant([0, 1, 2, 1]), logits=logits
            )
        )
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
    before = [v.numpy().astype(np.float64) for v in variables]
    optimizer.apply_gradients(zip(grads, variables))
    for v, w, g, n in zip(variables, before, grads, names):
        slots = [(np.zeros_like(w), np.zeros_like(w))]
        rate = lr * scales[v.path]
        (expected,) = _reference_step(
            [w], [g.numpy().astype(np.float64)], slots, rate, [n], lamb=name == "lamb"
        )
        np.testing.assert_allclose(v.numpy(), expected, atol=1e-6, rtol=1e-5, err_msg=v.path)
        if scales[v.path] < 1 and np.abs(g.numpy()).max() > 1e-3:
            (plain,) = _reference_step(
                [w],
                [g.numpy().astype(np.float64)],
                [(np.zeros_like(w), np.zeros_like(w))],
                lr,
                [n],
                lamb=name == "lamb",
            )
            assert not np.allclose(plain, expected, atol=1e-7), v.path


def test_bad_values_are_one_line():
    from albert_tf.training import TrainerConfig

    base = dict(output_dir="x", num_train_steps=1, learning_rate=1e-3)
    for value in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="layer_lr_decay") as e:
            TrainerConfig(**base, layer_lr_decay=value)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="--layer_lr_decay=0.9 needs --optimizer") as e:
        TrainerConfig(**base, layer_lr_decay=0.9, optimizer="adamw_keras")
    assert "\n" not in str(e.value)


def test_the_trainer_sets_every_variables_rate(tmp_path):
    import tensorflow as tf

    from albert_tf.training import ClassificationTask, Trainer, TrainerConfig

    config = TrainerConfig(
        output_dir=str(tmp_path),
        num_train_steps=1,
        learning_rate=1e-3,
        optimizer="adamw",
        layer_lr_decay=D,
    )
    task = ClassificationTask(tiny_config(), num_labels=2, dropout=0.0)
    data = tf.data.Dataset.from_tensors(
        {"input_ids": tf.ones([2, 8], tf.int32), "label_ids": tf.zeros([2], tf.int32)}
    ).repeat()
    trainer = Trainer(
        task, config, tf.distribute.get_strategy(), lambda ctx: data, log=lambda *_: None
    )
    factors = trainer.inner_optimizer.lr_scales
    assert len(factors) == len(trainer.variables)
    assert sorted(set(factors.values())) == pytest.approx([D**2, D, 1.0])
