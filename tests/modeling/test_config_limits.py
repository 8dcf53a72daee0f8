"""AlbertConfig's size limits (config.MAX_SIZES, MAX_PARAMETERS): an absurd size is one
ConfigError naming the file and the field before anything is allocated; every released
shape and every real config passes; the parameter count the limit uses is the model's."""

import json

import pytest

from albert_tf import AlbertConfig, ConfigError
from albert_tf.modeling.config import MAX_PARAMETERS, MAX_SIZES
from tests.support.harness import tiny_config

BASE = {
    "vocab_size": 30000,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
}


@pytest.mark.parametrize(
    "field, value",
    [("vocab_size", 10**12), ("num_hidden_layers", 10**6), ("max_position_embeddings", 2**40)]
    + [(name, limit + 1) for name, limit in MAX_SIZES.items()],
)
def test_a_size_beyond_its_limit_names_the_file_and_field(tmp_path, field, value):
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(dict(BASE, **{field: value})))
    with pytest.raises(ConfigError) as e:
        AlbertConfig.from_json_file(path)
    message = str(e.value)
    assert message.startswith(f"{path}: {field}={value:,} is larger than {MAX_SIZES[field]:,}")
    assert "\n" not in message


def test_sizes_each_allowed_but_together_absurd_are_refused_by_parameter_count(tmp_path):
    path = tmp_path / "albert_config.json"
    path.write_text(
        json.dumps(dict(BASE, hidden_size=MAX_SIZES["hidden_size"], num_attention_heads=64))
    )
    with pytest.raises(ConfigError, match=rf"^{path}: the model would have [\d,]+ parameters"):
        AlbertConfig.from_json_file(path)
    assert MAX_PARAMETERS >= 64 * AlbertConfig.preset("xxlarge").parameter_count()


@pytest.mark.parametrize("name", ["base", "large", "xlarge", "xxlarge"])
def test_released_shapes_are_far_within_the_limits(name):
    config = AlbertConfig.preset(name)
    assert config.parameter_count() * 64 <= MAX_PARAMETERS
    for field, limit in MAX_SIZES.items():
        assert getattr(config, field) * 16 <= limit, field


def test_every_shared_config_is_within_the_limits(shared_data):
    paths = sorted((shared_data / "configs").glob("*.json"))
    configs = [AlbertConfig.from_json_file(path) for path in paths]  # (raises beyond a limit)
    assert len(configs) >= 4 and max(c.vocab_size for c in configs) >= 21128


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"sharing": "none"},
        {"sharing": "attention"},
        {"sharing": "ffn", "num_hidden_groups": 2, "inner_group_num": 2, "num_hidden_layers": 4},
        {"embedding_size": 32},
    ],
)
def test_parameter_count_is_the_models(overrides):
    from albert_tf.modeling.encoder import AlbertEncoder

    config = tiny_config(**overrides)
    model = AlbertEncoder(config)
    model.build()
    assert config.parameter_count() == model.count_params()
