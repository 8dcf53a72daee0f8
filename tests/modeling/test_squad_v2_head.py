"""The official ALBERT SQuAD v2.0 head (SquadV2Head) against a numpy reference written from
the official create_v2_model, on random weights read by their official variable names."""

import numpy as np
import pytest

from tests.support.harness import random_batch, tiny_config


def _p_mask(batch):
    """The official feature's p_mask from the packing: 0 for [CLS] and context tokens."""
    mask, segments = batch["input_mask"], batch["segment_ids"]
    p = np.ones(mask.shape, np.float32)
    for b in range(mask.shape[0]):
        last = mask[b].sum() - 1
        for j in range(mask.shape[1]):
            if j == 0 or (segments[b, j] == 1 and mask[b, j] == 1 and j < last):
                p[b, j] = 0.0
    return p


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def _reference(w, seq, p_mask, start_positions, k_start, k_end):
    """The official equations (squad_utils.create_v2_model) in numpy, batch-major."""

    def dense(x, name, bias=True):
        y = x @ w[f"{name}/kernel"]
        return y + w[f"{name}/bias"] if bias else y

    start_logits = dense(seq, "start_logits/dense")[..., 0]
    start_masked = start_logits * (1 - p_mask) - 1e30 * p_mask
    start_log_probs = _log_softmax(start_masked)

    def end_log_probs(start_features):  # [B, H] → [B, S]
        x = np.concatenate([seq, np.broadcast_to(start_features[:, None], seq.shape)], -1)
        x = np.tanh(dense(x, "end_logits/dense_0"))
        x = _layer_norm(x, w["end_logits/LayerNorm/gamma"], w["end_logits/LayerNorm/beta"])
        logits = dense(x, "end_logits/dense_1")[..., 0]
        return _log_softmax(logits * (1 - p_mask) - 1e30 * p_mask)

    out = {"start_log_probs": start_log_probs}
    batch = np.arange(seq.shape[0])
    if start_positions is not None:
        out["end_log_probs"] = end_log_probs(seq[batch, start_positions])
    else:
        top = np.argsort(-start_log_probs, axis=-1, kind="stable")[:, :k_start]
        out["start_top_index"] = top
        out["start_top_log_probs"] = np.take_along_axis(start_log_probs, top, -1)
        ends, end_values = [], []
        for i in range(k_start):
            lp = end_log_probs(seq[batch, top[:, i]])
            idx = np.argsort(-lp, axis=-1, kind="stable")[:, :k_end]
            ends.append(idx)
            end_values.append(np.take_along_axis(lp, idx, -1))
        out["end_top_index"] = np.concatenate(ends, -1)
        out["end_top_log_probs"] = np.concatenate(end_values, -1)
    start_p = np.exp(_log_softmax(start_masked))
    start_feature = np.einsum("bsh,bs->bh", seq, start_p)
    answer = np.tanh(dense(np.concatenate([start_feature, seq[:, 0]], -1), "answer_class/dense_0"))
    out["cls_logits"] = dense(answer, "answer_class/dense_1", bias=False)[..., 0]
    return out


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_head_equals_the_official_equations(training):
    from albert_tf.checkpoints import official_name_map
    from albert_tf.modeling.models import AlbertQuestionAnsweringV2

    model = AlbertQuestionAnsweringV2(tiny_config(), start_n_top=3, end_n_top=2, dropout=0.0)
    model.build()
    rng = np.random.default_rng(0)
    for v in model.weights:
        v.assign(rng.normal(0.0, 0.3, v.shape).astype(np.float32))
    names = official_name_map(model)
    head = [n for n, v in names.items() if v.component == "squad_v2_head"]
    assert sorted(head) == sorted(
        [
            f"{s}/{p}"
            for s in (
                "start_logits/dense",
                "end_logits/dense_0",
                "end_logits/dense_1",
                "answer_class/dense_0",
            )
            for p in ("kernel", "bias")
        ]
        + ["end_logits/LayerNorm/gamma", "end_logits/LayerNorm/beta", "answer_class/dense_1/kernel"]
    )
    w = {n: names[n].variable.numpy() for n in head}
    batch = random_batch(batch=3, seq=11)
    starts = np.array([0, 7, 8], np.int32)
    inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
    if training:
        inputs["start_positions"] = starts
    got = model(inputs, training=training)
    seq = model.encoder(inputs)["sequence_output"].numpy()
    want = _reference(w, seq, _p_mask(batch), starts if training else None, 3, 2)
    assert set(want) <= set(got)
    for key, value in want.items():
        mine = got[key].numpy()
        if key.endswith("_index"):
            np.testing.assert_array_equal(mine, value, err_msg=key)
        else:
            finite = value > -1e29  # (masked log-probabilities are -inf-like on both sides)
            np.testing.assert_allclose(mine[finite], value[finite], atol=2e-5, err_msg=key)


def test_official_v2_checkpoint_loads_into_the_head(tmp_path):
    """A run_squad_v2 checkpoint (TF1, names and [in, out] kernels as create_v2_model's
    tf.layers write them, written here by hand) restores the whole head, and the model
    computes the official equations with those arrays."""
    from albert_tf import load_checkpoint
    from albert_tf.modeling.models import AlbertQuestionAnsweringV2
    from tests.support.references import hf_pretraining_model, official_arrays, write_tf1_checkpoint

    h = tiny_config().hidden_size
    rng = np.random.default_rng(3)
    shapes = {
        "start_logits/dense/kernel": (h, 1),
        "start_logits/dense/bias": (1,),
        "end_logits/dense_0/kernel": (2 * h, h),
        "end_logits/dense_0/bias": (h,),
        "end_logits/LayerNorm/gamma": (h,),
        "end_logits/LayerNorm/beta": (h,),
        "end_logits/dense_1/kernel": (h, 1),
        "end_logits/dense_1/bias": (1,),
        "answer_class/dense_0/kernel": (2 * h, h),
        "answer_class/dense_0/bias": (h,),
        "answer_class/dense_1/kernel": (h, 1),
    }
    head = {n: rng.normal(0, 0.5, s).astype(np.float32) for n, s in shapes.items()}
    encoder = official_arrays(hf_pretraining_model(tmp_path / "hf", heads=False), 1, 1, heads=False)
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt"), {**encoder, **head})
    model = AlbertQuestionAnsweringV2(tiny_config(), start_n_top=3, end_n_top=2, dropout=0.0)
    report = load_checkpoint(model, prefix)
    assert report.format == "tf1" and "squad_v2_head" in report.restored
    assert report.missing == [] and report.not_restored == []
    batch = random_batch(batch=3, seq=11)
    inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
    got = model(inputs)
    seq = model.encoder(inputs)["sequence_output"].numpy()
    want = _reference(head, seq, _p_mask(batch), None, 3, 2)
    np.testing.assert_array_equal(got["start_top_index"].numpy(), want["start_top_index"])
    np.testing.assert_allclose(got["cls_logits"].numpy(), want["cls_logits"], atol=2e-5)
    np.testing.assert_allclose(
        got["end_top_log_probs"].numpy(), want["end_top_log_probs"], atol=2e-5
    )


def test_loss_is_the_official_v2_loss():
    """SquadV2Task's loss on the real model = the official model_fn's: (start NLL + end NLL)
    / 2 (end conditioned on the gold start) + 0.5 × sigmoid CE(cls_logits, is_impossible),
    batch means, computed here from the numpy reference's log-probabilities."""
    from albert_tf.checkpoints import official_name_map
    from albert_tf.training import SquadV2Task

    task = SquadV2Task(tiny_config(), start_n_top=3, end_n_top=2)
    model = task.build_model()
    model.squad_v2_head.answer_dropout.rate = 0.0  # (the official dropout, off to compare)
    rng = np.random.default_rng(5)
    for v in model.weights:
        v.assign(rng.normal(0.0, 0.3, v.shape).astype(np.float32))
    batch = {k: v for k, v in random_batch(batch=3, seq=11).items() if k != "masked_lm_positions"}
    batch.update(
        start_positions=np.array([0, 7, 8], np.int32),
        end_positions=np.array([0, 7, 9], np.int32),
        is_impossible=np.array([1, 0, 0], np.int32),
    )
    terms = task.terms(batch, task.call_model(model, batch, training=True))
    dens = task.denominators(batch)
    loss = sum(float(terms[n]) / float(dens[d]) for n, d in task.losses.items())

    names = official_name_map(model)
    w = {n: v.variable.numpy() for n, v in names.items() if v.component == "squad_v2_head"}
    seq = model.encoder(batch)["sequence_output"].numpy()
    ref = _reference(w, seq, _p_mask(batch), batch["start_positions"], 3, 2)
    rows = np.arange(3)
    start_loss = -ref["start_log_probs"][rows, batch["start_positions"]].mean()
    end_loss = -ref["end_log_probs"][rows, batch["end_positions"]].mean()
    z, y = ref["cls_logits"], batch["is_impossible"].astype(np.float64)
    bce = (np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))).mean()
    assert loss == pytest.approx((start_loss + end_loss) * 0.5 + 0.5 * bce, rel=1e-5)
