"""run_ner.py and run_squad.py with --lora_rank (tiny model from a saved encoder, real
CoNLL-2003 and SQuAD slices): the run's checkpoints hold the adapters and the head only;
the exported model's encoder is the base encoder bit for bit except the adapted kernels,
which are W + (alpha/r)·A·B of the run's adapters; and the export computes what the LoRA
model of the run's checkpoint computes (the adapters merged). run_ner's --class_weights auto
is scikit-learn's balanced weights of the training tags, recorded in run_config.json."""

import json

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, WORKFLOW_CONFIG
from tests.support.in_process import run_command
from tests.workflows.test_ner_workflow import _conll_args, _sentences

SPM = SHARED_DATA / "spm" / "de-30k-clean.model"
LORA = ("--lora_rank=2", "--lora_alpha=4", "--lora_targets=query,value,ffn")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """(root, the tiny config file, the base encoder's checkpoint prefix)."""
    if not SHARED_DATA.is_dir() or not SPM.exists():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    from albert_tf import AlbertConfig, AlbertEncoder, save_checkpoint

    root = tmp_path_factory.mktemp("lora_runners")
    config = root / "albert_config.json"
    config.write_text(json.dumps(WORKFLOW_CONFIG))
    encoder = AlbertEncoder(AlbertConfig.from_dict(WORKFLOW_CONFIG))
    encoder.build()
    return root, config, save_checkpoint(encoder, str(root / "encoder"))


def _check_lora_run(out, export, encoder_prefix, task, heads):
    """The checks of the module docstring for the run in `out` of `task` (the plain task
    the runner wraps) exported to `export`."""
    import tensorflow as tf

    from albert_tf.checkpoints import load_checkpoint
    from albert_tf.checkpoints.finetuned import load_finetuned
    from albert_tf.checkpoints.loading import _model_children
    from albert_tf.modeling.lora import adapters_of, targeted_layers
    from albert_tf.modeling.lora_settings import LoraSettings
    from albert_tf.training.lora_task import LoraTask

    latest = tf.train.latest_checkpoint(str(out / "checkpoints"))
    assert _model_children(latest) == {"lora", *heads}
    settings = LoraSettings(lora_rank=2, lora_alpha=4.0, lora_targets=("query", "value", "ffn"))
    lora = LoraTask(task, settings, seed=0)
    adapted = lora.build_model()  # the run's model: the base encoder, its adapters and head
    load_checkpoint(adapted, encoder_prefix)
    status = tf.train.Checkpoint(model=lora.checkpointed(adapted)).read(latest)
    status.assert_existing_objects_matched().expect_partial()
    plain = task.build_model()
    load_checkpoint(plain, encoder_prefix)
    exported, _ = load_finetuned(str(export / "1" / "assets.extra" / "finetuned"))
    holder = adapters_of(adapted)
    updates = {}
    for name, dense in targeted_layers(adapted.encoder, settings.lora_targets).items():
        a, b = (np.asarray(v) for v in (holder.adapters[name].lora_a, holder.adapters[name].lora_b))
        assert np.abs(b).max() > 0  # trained (B starts at zero)
        updates[dense.kernel.path] = 2.0 * a @ b  # alpha / r = 2
    assert len(updates) == 4  # query, value, the two FFN kernels of the one shared group
    weights = zip(plain.encoder.weights, exported.encoder.weights)
    for base_w, export_w in weights:
        assert base_w.path == export_w.path
        if base_w.path in updates:
            want = np.asarray(base_w) + updates.pop(base_w.path)
            np.testing.assert_allclose(np.asarray(export_w), want, rtol=0, atol=1e-6)
        else:  # frozen: the base's bits
            np.testing.assert_array_equal(np.asarray(export_w), np.asarray(base_w), base_w.path)
    assert not updates
    for name in heads:  # the heads: the run's (trained) values
        for ours, theirs in zip(getattr(adapted, name).weights, getattr(exported, name).weights):
            np.testing.assert_array_equal(np.asarray(theirs), np.asarray(ours))
    rng = np.random.default_rng(0)
    batch = {
        "input_ids": tf.constant(rng.integers(5, 30000, (3, 48)), tf.int32),
        "input_mask": tf.constant(np.repeat([[1] * 40 + [0] * 8], 3, 0), tf.int32),
        "segment_ids": tf.constant(np.repeat([[0] * 20 + [1] * 28], 3, 0), tf.int32),
    }
    ours, theirs = adapted(batch, training=False), exported(batch, training=False)
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        np.testing.assert_allclose(np.asarray(theirs[key]), np.asarray(ours[key]), atol=2e-5)


@pytest.mark.slow
def test_ner_lora_run_trains_adapters_and_head_and_exports_them_merged(base):
    from albert_tf import AlbertConfig
    from albert_tf.training.token_classification import TokenClassificationTask

    root, config, encoder = base
    data = root / "conll"
    data.mkdir()
    source = SHARED_DATA / "ner" / "conll2003"
    (data / "train.txt").write_text(_sentences(source / "train.txt", 64), encoding="utf-8")
    (data / "dev.txt").write_text(_sentences(source / "dev.txt", 16), encoding="utf-8")
    out, export = root / "ner", root / "ner_export"
    run = run_command(
        *_conll_args(data, out, config, "--do_train", "--train_step=6", "--steps_per_loop=3"),
        f"--init_checkpoint={encoder}",
        f"--export_dir={export}",
        *LORA,
        "--class_weights=auto",
    )
    assert run.returncode == 0, run.report()
    record = json.loads((out / "run_config.json").read_text())
    labels = record["labels"]
    # --class_weights auto: scikit-learn's balanced weights of the training words' tags
    from sklearn.utils.class_weight import compute_class_weight

    from data_pipeline.tagging.data import read_tagged

    tags = [t for sentence in read_tagged(str(data / "train.txt")) for t in sentence.tags]
    expected = compute_class_weight("balanced", classes=np.array(labels), y=np.array(tags))
    np.testing.assert_allclose(record["class_weights"], expected, rtol=1e-12)
    assert record["segments"][-1]["settings"]["class_weights"] == "auto"
    task = TokenClassificationTask(AlbertConfig.from_dict(WORKFLOW_CONFIG), len(labels), 0.1)
    _check_lora_run(out, export, encoder, task, {"classifier_head"})


@pytest.mark.slow
def test_squad_lora_run_trains_adapters_and_head_and_exports_them_merged(base):
    from albert_tf import AlbertConfig
    from albert_tf.training import SquadTask

    root, config, encoder = base
    with open(SHARED_DATA / "squad" / "dev-v1.1.json") as f:
        squad = json.load(f)
    train = root / "train-v1.1.json"
    train.write_text(json.dumps({"version": squad["version"], "data": squad["data"][:1]}))
    out, export = root / "squad", root / "squad_export"
    run = run_command(
        "run_squad.py",
        f"--output_dir={out}",
        f"--spm_model_file={SPM}",
        f"--albert_config_file={config}",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--max_query_length=16",
        "--train_batch_size=16",
        "--learning_rate=1e-3",
        "--steps_per_loop=3",
        "--train_step=6",
        f"--train_file={train}",
        "--do_train",
        f"--init_checkpoint={encoder}",
        f"--export_dir={export}",
        *LORA,
        timeout=600,
    )
    assert run.returncode == 0, run.report()
    task = SquadTask(AlbertConfig.from_dict(WORKFLOW_CONFIG))
    _check_lora_run(out, export, encoder, task, {"span_head"})
