"""AlbertConfig: official JSON round trip, presets, validation messages."""

import json

import pytest

from albert_tf import AlbertConfig, ConfigError
from tests.support.harness import tiny_config

OFFICIAL_BASE_V2 = {
    "attention_probs_dropout_prob": 0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0,
    "embedding_size": 128,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "net_structure_type": 0,
    "gap_size": 0,
    "num_memory_blocks": 0,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "type_vocab_size": 2,
    "vocab_size": 30000,
}


def test_official_config_keeps_every_key(tmp_path):
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(OFFICIAL_BASE_V2))
    config = AlbertConfig.from_json_file(path)
    assert config.hidden_size == 768 and config.embedding_size == 128
    assert config.extra == {
        "net_structure_type": 0,
        "gap_size": 0,
        "num_memory_blocks": 0,
        "down_scale_factor": 1,
    }
    out = tmp_path / "out.json"
    config.to_json_file(out)
    written = json.loads(out.read_text())
    for key, value in OFFICIAL_BASE_V2.items():
        assert written[key] == value, key
    assert AlbertConfig.from_json_file(out) == config


def test_preset_base_v2_equals_official_file():
    assert AlbertConfig.preset("base") == AlbertConfig.from_dict(OFFICIAL_BASE_V2)


def _released(hidden, layers, heads, intermediate, dropout):
    """An albert_config.json as google-research/albert released it on TF-Hub (assets/)."""
    return dict(
        OFFICIAL_BASE_V2,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )


# The released English configs. xlarge: 32 heads (the released config; the paper's Table 1
# implies 16: google-research/albert#180). Dropout: v1 0.1 except xxlarge (trained without
# dropout, albert#23), v2 none.
RELEASED = {
    ("base", 1): _released(768, 12, 12, 3072, 0.1),
    ("base", 2): _released(768, 12, 12, 3072, 0),
    ("large", 1): _released(1024, 24, 16, 4096, 0.1),
    ("large", 2): _released(1024, 24, 16, 4096, 0),
    ("xlarge", 1): _released(2048, 24, 32, 8192, 0.1),
    ("xlarge", 2): _released(2048, 24, 32, 8192, 0),
    ("xxlarge", 1): _released(4096, 12, 64, 16384, 0),
    ("xxlarge", 2): _released(4096, 12, 64, 16384, 0),
}


@pytest.mark.parametrize("name,version", sorted(RELEASED))
def test_presets_equal_the_released_configs_key_by_key(name, version):
    preset = AlbertConfig.preset(name, version=version)
    written = preset.to_dict()
    released = RELEASED[(name, version)]
    for key, value in released.items():
        assert written[key] == value, (name, version, key)
    # Only this project's two additions besides, at the official values.
    assert {k: written[k] for k in set(written) - set(released)} == {
        "layer_norm_eps": 1e-12,
        "sharing": "all",
    }
    assert AlbertConfig.preset(f"albert-{name}-v{version}") == preset
    assert AlbertConfig.preset(f"{name}_v{version}") == preset
    assert AlbertConfig.from_dict(released) == preset


def test_preset_errors():
    with pytest.raises(ConfigError, match="unknown preset 'huge'"):
        AlbertConfig.preset("huge")
    with pytest.raises(ConfigError, match="conflicts with version=2"):
        AlbertConfig.preset("base-v1", version=2)


def test_round_trip_identity_every_field():
    config = tiny_config(
        num_hidden_groups=2,
        inner_group_num=3,
        hidden_act="relu",
        sharing="ffn",
        layer_norm_eps=1e-6,
        extra={"ln_type": "postln"},
    )
    again = AlbertConfig.from_json_string(config.to_json_string())
    assert again == config
    assert again.to_dict() == config.to_dict()


def test_every_shared_config_loads_and_round_trips(shared_data):
    files = sorted((shared_data / "configs").glob("*.json"))
    assert len(files) >= 10
    for path in files:
        source = json.loads(path.read_text())
        config = AlbertConfig.from_json_file(path)
        for key, value in source.items():  # every key survives, brightmart's extras too
            assert config.to_dict()[key] == value, (path.name, key)
        assert AlbertConfig.from_json_string(config.to_json_string()) == config
        if "embedding_size" not in source:  # bert_config.json: factorization off
            assert path.name == "bert_config.json"
            assert config.embedding_size == config.hidden_size == 768
    xxlarge = AlbertConfig.from_json_file(shared_data / "configs" / "albert_config_xxlarge.json")
    assert xxlarge.extra["ln_type"] == "preln"


def test_gelu_aliases_and_relu_accepted():
    for act in ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_exact", "relu"):
        assert tiny_config(hidden_act=act).hidden_act == act


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            dict(hidden_size=30, num_attention_heads=4),
            "hidden_size=30 is not divisible by num_attention_heads=4",
        ),
        (
            dict(num_hidden_layers=12, num_hidden_groups=5),
            "num_hidden_layers=12 is not divisible by num_hidden_groups=5",
        ),
        (dict(hidden_act="swish"), "hidden_act='swish' is not one of"),
        (dict(sharing="some"), "sharing='some' is not one of"),
        (dict(hidden_dropout_prob=1.5), r"hidden_dropout_prob=1.5 must be a number in \[0, 1\)"),
        (dict(vocab_size=0), "vocab_size=0 must be a positive integer"),
        (dict(hidden_size="32"), "hidden_size='32' must be a positive integer"),
        (dict(inner_group_num=True), "inner_group_num=True must be a positive integer"),
    ],
)
def test_invalid_combinations_quote_values(overrides, message):
    with pytest.raises(ConfigError, match=message):
        tiny_config(**overrides)


def test_more_groups_than_layers_is_the_official_mapping():
    # brightmart's albert_config_tiny_google_fast.json: L=4, G=12 → groups 0, 3, 6, 9.
    config = tiny_config(num_hidden_layers=4, num_hidden_groups=12)
    assert [config.group_of_layer(i) for i in range(4)] == [0, 3, 6, 9]


def test_group_map_is_exact_and_agrees_with_official_on_released_shapes():
    from fractions import Fraction

    for layers in range(1, 49):
        for groups in range(1, 2 * layers + 1):
            if groups < layers and layers % groups:
                continue
            config = tiny_config(num_hidden_layers=layers, num_hidden_groups=groups)
            for i in range(layers):
                assert config.group_of_layer(i) == int(Fraction(i * groups, layers))
    # The official float expression int(i / L * G) agrees on every released shape ...
    for layers in (4, 6, 12, 24):
        for groups in [g for g in range(1, layers + 1) if layers % g == 0] + [12]:
            config = tiny_config(num_hidden_layers=layers, num_hidden_groups=groups)
            assert [config.group_of_layer(i) for i in range(layers)] == [
                int(i / layers * groups) for i in range(layers)
            ]
    # ... but rounds wrongly elsewhere: with L=G=22 it maps layer 15 to group 14.
    assert int(15 / 22 * 22) == 14
    assert tiny_config(num_hidden_layers=22, num_hidden_groups=22).group_of_layer(15) == 15


def test_missing_key_and_bad_json_name_the_file(tmp_path):
    data = dict(OFFICIAL_BASE_V2)
    del data["hidden_size"]
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(
        ConfigError, match=r"albert_config.json: missing required key\(s\) \['hidden_size'\]"
    ):
        AlbertConfig.from_json_file(path)
    path.write_text('{\n "hidden_size": 768,\n oops\n}')
    with pytest.raises(ConfigError, match=r"albert_config.json:3: invalid JSON"):
        AlbertConfig.from_json_file(path)
    with pytest.raises(FileNotFoundError, match="config file not found: .*nope.json"):
        AlbertConfig.from_json_file(tmp_path / "nope.json")
    data = dict(OFFICIAL_BASE_V2, num_attention_heads=7)
    path.write_text(json.dumps(data))
    with pytest.raises(
        ConfigError,
        match="albert_config.json: hidden_size=768 is not divisible by num_attention_heads=7",
    ):
        AlbertConfig.from_json_file(path)
