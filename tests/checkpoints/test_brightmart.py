"""Chinese checkpoints import with every variable restored: brightmart/albert_zh's own layout
(`convert --source brightmart`, or loaded directly into an E = H model) and Google's
official zh layout (albert_base_zh names, vocab 21,128, through the official loader).

The references are written here in numpy from the arrays themselves, after the two
projects' own TF1 code (brightmart's modeling.py / run_pretraining.py; google-research/
albert's modeling.py): names, shapes and the forward pass, independently of
albert_tf.checkpoints, so a mistake in the name tables cannot cancel out. Shapes are
brightmart's albert_config_tiny.json / albert_config_tiny_google.json (the smallest real
zh configs: V = 21,128, E = 128, H = 312, 4 layers, 12 heads)."""

import json

import numpy as np
import pytest

from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer, load_checkpoint
from albert_tf.checkpoints import CheckpointError
from albert_tf.checkpoints.convert import convert, main
from tests.support.harness import random_batch
from tests.support.references import write_tf1_checkpoint

# brightmart's albert_config_tiny.json (keys the model reads, and ln_type).
ZH_TINY = dict(
    vocab_size=21128,
    embedding_size=128,
    hidden_size=312,
    num_hidden_layers=4,
    num_attention_heads=12,
    intermediate_size=1248,
    max_position_embeddings=512,
    type_vocab_size=2,
    hidden_act="gelu",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)
V, E, H, FFN, L, HEADS = 21128, 128, 312, 1248, 4, 12


def _arrays(shapes: dict, seed: int) -> dict:
    """Random arrays: LayerNorm gammas near 1, everything else N(0, 0.05)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes.items():
        base = 1.0 if name.endswith("/gamma") else 0.0
        out[name] = (base + rng.normal(0, 0.05, shape)).astype(np.float32)
    return out


def _dense(prefix, n_in, n_out):
    return {f"{prefix}/kernel": (n_in, n_out), f"{prefix}/bias": (n_out,)}


def _norm(prefix, n):
    return {f"{prefix}/gamma": (n,), f"{prefix}/beta": (n,)}


def brightmart_shapes() -> dict:
    """brightmart's variable names and shapes (modeling.py: embedding_lookup_factorized,
    embedding_postprocessor, transformer_model with layer_shared; run_pretraining.py:
    get_masked_lm_output, get_next_sentence_output)."""
    s = {
        "bert/embeddings/word_embeddings": (V, E),
        "bert/embeddings/word_embeddings_2": (E, H),
        "bert/embeddings/token_type_embeddings": (2, H),
        "bert/embeddings/position_embeddings": (512, H),
        **_norm("bert/embeddings/LayerNorm", H),
    }
    b = "bert/encoder/layer_shared/"
    for qkv in ("query", "key", "value"):
        s.update(_dense(b + f"attention/self/{qkv}", H, H))
    s.update(_dense(b + "attention/output/dense", H, H))
    s.update(_norm(b + "attention/output/LayerNorm", H))
    s.update(_dense(b + "intermediate/dense", H, FFN))
    s.update(_dense(b + "output/dense", FFN, H))
    s.update(_norm(b + "output/LayerNorm", H))
    s.update(_dense("bert/pooler/dense", H, H))
    s.update(_dense("cls/predictions/transform/dense", H, H))
    s.update(_norm("cls/predictions/transform/LayerNorm", H))
    s["cls/predictions/output_bias"] = (V,)
    s["cls/seq_relationship/output_weights"] = (2, H)
    s["cls/seq_relationship/output_bias"] = (2,)
    return s


def official_zh_shapes() -> dict:
    """Google's albert_*_zh names and shapes (google-research/albert modeling.py)."""
    s = {
        "bert/embeddings/word_embeddings": (V, E),
        "bert/embeddings/token_type_embeddings": (2, E),
        "bert/embeddings/position_embeddings": (512, E),
        **_norm("bert/embeddings/LayerNorm", E),
        **_dense("bert/encoder/embedding_hidden_mapping_in", E, H),
    }
    b = "bert/encoder/transformer/group_0/inner_group_0/"
    for qkv in ("query", "key", "value"):
        s.update(_dense(b + f"attention_1/self/{qkv}", H, H))
    s.update(_dense(b + "attention_1/output/dense", H, H))
    s.update(_norm(b + "LayerNorm", H))
    s.update(_dense(b + "ffn_1/intermediate/dense", H, FFN))
    s.update(_dense(b + "ffn_1/intermediate/output/dense", FFN, H))
    s.update(_norm(b + "LayerNorm_1", H))
    s.update(_dense("bert/pooler/dense", H, H))
    s.update(_dense("cls/predictions/transform/dense", H, E))
    s.update(_norm("cls/predictions/transform/LayerNorm", E))
    s["cls/predictions/output_bias"] = (V,)
    s["cls/seq_relationship/output_weights"] = (2, H)
    s["cls/seq_relationship/output_bias"] = (2,)
    return s


# ------------------------------------------------------------------ numpy references
def _ln(x, a, prefix):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * a[f"{prefix}/gamma"] + a[f"{prefix}/beta"]


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _act(x, act):
    return _gelu(x) if act == "gelu" else np.maximum(x, 0.0)


def _lin(x, a, prefix):
    return x @ a[f"{prefix}/kernel"] + a[f"{prefix}/bias"]


def _block(x, adder, a, n):
    """One post-LN block, the scopes named by `n` (brightmart's or official)."""
    b, s, d = x.shape[0], x.shape[1], H // HEADS

    def heads(t):
        return t.reshape(b, s, HEADS, d).transpose(0, 2, 1, 3)

    q, k, v = (heads(_lin(x, a, n[part])) for part in ("q", "k", "v"))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + adder
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, H)
    attended = _ln(_lin(context, a, n["o"]) + x, a, n["ln0"])
    ffn = _lin(_act(_lin(attended, a, n["i"]), n["act"]), a, n["f"])
    return _ln(ffn + attended, a, n["ln1"])


def _heads_and_outputs(x, a, batch, table, act):
    pooled = np.tanh(_lin(x[:, 0], a, "bert/pooler/dense"))
    rows = np.take_along_axis(x, batch["masked_lm_positions"][:, :, None], 1)
    t = _ln(
        _act(_lin(rows, a, "cls/predictions/transform/dense"), act),
        a,
        "cls/predictions/transform/LayerNorm",
    )
    return {
        "sequence_output": x,
        "pooled_output": pooled,
        "mlm_logits": t @ table.T + a["cls/predictions/output_bias"],
        "sop_logits": pooled @ a["cls/seq_relationship/output_weights"].T
        + a["cls/seq_relationship/output_bias"],
    }


def brightmart_reference(arrays, batch, act="gelu"):
    """brightmart's post-LN forward pass: W[ids]·P, then + H-wide position and token-type
    rows, LayerNorm over H; L times the shared block; MLM logits x·Pᵀ·Wᵀ + b."""
    a = {k: v.astype(np.float64) for k, v in arrays.items()}
    ids, seg = batch["input_ids"], batch["segment_ids"]
    x = a["bert/embeddings/word_embeddings"][ids] @ a["bert/embeddings/word_embeddings_2"]
    x = x + a["bert/embeddings/position_embeddings"][: ids.shape[1]]
    x = _ln(x + a["bert/embeddings/token_type_embeddings"][seg], a, "bert/embeddings/LayerNorm")
    adder = (1.0 - batch["input_mask"][:, None, None, :]) * -10000.0
    p = "bert/encoder/layer_shared/"
    names = {
        "q": p + "attention/self/query",
        "k": p + "attention/self/key",
        "v": p + "attention/self/value",
        "o": p + "attention/output/dense",
        "ln0": p + "attention/output/LayerNorm",
        "i": p + "intermediate/dense",
        "f": p + "output/dense",
        "ln1": p + "output/LayerNorm",
        "act": act,
    }
    for _ in range(L):
        x = _block(x, adder, a, names)
    table = a["bert/embeddings/word_embeddings"] @ a["bert/embeddings/word_embeddings_2"]
    return _heads_and_outputs(x, a, batch, table, act)


def official_reference(arrays, batch, act="gelu"):
    """Google's ALBERT: E-wide embeddings and LayerNorm, then the E→H dense; L times
    group_0/inner_group_0; MLM transform to E, logits x·Wᵀ + b."""
    a = {k: v.astype(np.float64) for k, v in arrays.items()}
    ids, seg = batch["input_ids"], batch["segment_ids"]
    x = a["bert/embeddings/word_embeddings"][ids]
    x = x + a["bert/embeddings/position_embeddings"][: ids.shape[1]]
    x = _ln(x + a["bert/embeddings/token_type_embeddings"][seg], a, "bert/embeddings/LayerNorm")
    x = _lin(x, a, "bert/encoder/embedding_hidden_mapping_in")
    adder = (1.0 - batch["input_mask"][:, None, None, :]) * -10000.0
    p = "bert/encoder/transformer/group_0/inner_group_0/"
    names = {
        "q": p + "attention_1/self/query",
        "k": p + "attention_1/self/key",
        "v": p + "attention_1/self/value",
        "o": p + "attention_1/output/dense",
        "ln0": p + "LayerNorm",
        "i": p + "ffn_1/intermediate/dense",
        "f": p + "ffn_1/intermediate/output/dense",
        "ln1": p + "LayerNorm_1",
        "act": act,
    }
    for _ in range(L):
        x = _block(x, adder, a, names)
    return _heads_and_outputs(x, a, batch, a["bert/embeddings/word_embeddings"], act)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def brightmart_checkpoint(tmp_path_factory):
    """(arrays, prefix, config file): a brightmart-layout TF1 checkpoint (Adam slots and
    global_step as their trainer leaves them) and brightmart's tiny config."""
    directory = tmp_path_factory.mktemp("brightmart")
    arrays = _arrays(brightmart_shapes(), seed=1)
    prefix = write_tf1_checkpoint(str(directory / "albert_model.ckpt"), arrays)
    config_file = directory / "albert_config_tiny.json"
    config_file.write_text(json.dumps(dict(ZH_TINY, ln_type="postln", directionality="bidi")))
    return arrays, prefix, str(config_file)


def _max_delta(got, expected):
    return {k: float(np.max(np.abs(got[k].numpy() - expected[k]))) for k in expected}


def _batch():
    return random_batch(vocab_size=V, seq=13, positions=4, seed=3)


# ------------------------------------------------------------------ brightmart
def test_brightmart_convert_restores_every_variable(brightmart_checkpoint, tmp_path):
    arrays, prefix, config_file = brightmart_checkpoint
    out = tmp_path / "out"
    report = convert("brightmart", prefix, str(out), config_file)
    # Every source variable is used (W and P fold into one table): 31 sources → 30.
    assert report["unused_source_variables"] == [] and report["variables_assigned"] == 30
    assert report["heads_written"] == ["mlm_head", "sop_head"] and report["pooler_from_source"]
    assert report["brightmart"]["source_embedding_size"] == E
    assert len(report["brightmart"]["renamed"]) == 16  # the shared block's variables
    written = json.loads((out / "albert_config.json").read_text())
    assert written["embedding_size"] == H and written["vocab_size"] == V

    model = AlbertPretrainer(AlbertConfig.from_json_file(str(out / "albert_config.json")))
    loaded = load_checkpoint(model, str(out))
    assert loaded.restored == ["encoder", "mlm_head", "sop_head"]
    assert loaded.missing == [] and loaded.not_restored == []
    batch = _batch()
    delta = _max_delta(model(batch), brightmart_reference(arrays, batch))
    assert max(delta.values()) <= 1e-5, delta


def test_brightmart_loads_directly_into_an_e_equals_h_model(brightmart_checkpoint):
    arrays, prefix, _ = brightmart_checkpoint
    model = AlbertPretrainer(AlbertConfig(**dict(ZH_TINY, embedding_size=H)))
    report = load_checkpoint(model, prefix)
    assert report.format == "brightmart" and report.missing == [] and report.not_restored == []
    assert report.restored == ["encoder", "mlm_head", "pooler", "sop_head"]
    batch = _batch()
    delta = _max_delta(model(batch), brightmart_reference(arrays, batch))
    assert max(delta.values()) <= 1e-5, delta


def test_brightmart_layout_is_recognised_elsewhere(brightmart_checkpoint, tmp_path, capsys):
    _, prefix, config_file = brightmart_checkpoint
    with pytest.raises(CheckpointError, match=r"brightmart/albert_zh checkpoint .*--source bri"):
        convert("tf1", prefix, str(tmp_path / "a"), config_file)
    # --init_checkpoint with brightmart's own config (E = 128 < H): one line, what to run.
    with pytest.raises(CheckpointError, match=r"cannot hold: convert it first .*--source bright"):
        load_checkpoint(AlbertEncoder(AlbertConfig.from_json_file(config_file)), prefix)
    argv = ["convert", "--source", "tf1", "--input", prefix, "--output_dir", str(tmp_path / "b")]
    assert main([*argv, "--albert_config_file", config_file]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "use --source brightmart" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_brightmart_pre_ln_is_refused(brightmart_checkpoint, tmp_path):
    _, prefix, _ = brightmart_checkpoint
    config_file = tmp_path / "albert_config_xxlarge.json"
    config_file.write_text(json.dumps(dict(ZH_TINY, ln_type="preln")))
    with pytest.raises(CheckpointError, match=r"albert_config_xxlarge.json: ln_type='preln'"):
        convert("brightmart", prefix, str(tmp_path / "out"), str(config_file))
    assert not (tmp_path / "out").exists()


def test_official_checkpoint_is_not_brightmart(tmp_path):
    prefix = write_tf1_checkpoint(
        str(tmp_path / "model.ckpt"), _arrays(official_zh_shapes(), 2), optimizer_slots=False
    )
    config_file = tmp_path / "albert_config.json"
    AlbertConfig(**ZH_TINY).to_json_file(str(config_file))
    with pytest.raises(CheckpointError, match="not in brightmart's layout .*use --source tf1"):
        convert("brightmart", prefix, str(tmp_path / "out"), str(config_file))


def test_real_brightmart_configs(shared_data):
    """tiny/base/large/xlarge (post-LN) map with E = H; xxlarge (pre-LN) is refused."""
    from albert_tf.checkpoints.brightmart import brightmart_config

    for size in ("tiny", "base", "large", "xlarge"):
        path = shared_data / "configs" / f"albert_config_{size}.json"
        config = brightmart_config(AlbertConfig.from_json_file(str(path)), str(path))
        assert config.embedding_size == config.hidden_size and config.vocab_size == V
    path = shared_data / "configs" / "albert_config_xxlarge.json"
    with pytest.raises(CheckpointError, match="pre-LayerNorm"):
        brightmart_config(AlbertConfig.from_json_file(str(path)), str(path))


# ------------------------------------------------------------------ official zh
@pytest.mark.parametrize("act", ["gelu", "relu"])  # brightmart's *_google configs; Google's
def test_official_zh_checkpoint_restores_every_variable(tmp_path, act):
    arrays = _arrays(official_zh_shapes(), seed=4)
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt-best"), arrays)
    config = AlbertConfig(**dict(ZH_TINY, hidden_act=act))
    model = AlbertPretrainer(config)
    report = load_checkpoint(model, prefix)
    assert report.format == "tf1" and report.missing == [] and report.not_restored == []
    batch = _batch()
    delta = _max_delta(model(batch), official_reference(arrays, batch, act))
    assert max(delta.values()) <= 1e-5, delta
