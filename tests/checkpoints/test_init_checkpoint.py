"""Every runner's --init_checkpoint accepts the same five forms: a checkpoint prefix, a
checkpoint directory, a run's output directory (run_pretraining, run_classifier, run_squad),
an export_encoder output and a convert output. The runners all load through
`albert_tf.load_checkpoint`, so the forms are checked there on one pretraining run; the
runners are checked end to end with the form that used to be refused (a pretraining
output directory)."""

import json

import numpy as np
import pytest

from tests.support.in_process import run_command
from tests.support.tiny import tiny_fields

# vocab 30000: the shared de-30k SentencePiece model feeds the runner checks.
TINY = tiny_fields(
    vocab_size=30000,
    num_hidden_layers=2,
    num_attention_heads=2,
    max_position_embeddings=128,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


@pytest.fixture(scope="module")
def pretraining_run(tmp_path_factory):
    """A 2-step pretraining run's output directory (checkpoints/, run files) and its
    config file."""
    import tensorflow as tf

    from albert_tf import AlbertConfig
    from albert_tf.training import PretrainingTask, Trainer, TrainerConfig

    root = tmp_path_factory.mktemp("init")
    config = AlbertConfig.from_dict(TINY)
    config.to_json_file(str(root / "albert_config.json"))
    rng = np.random.default_rng(0)
    n, seq, preds = 8, 16, 3
    data = {
        "input_ids": rng.integers(5, 999, (n, seq)).astype(np.int32),
        "input_mask": np.ones((n, seq), np.int32),
        "segment_ids": np.zeros((n, seq), np.int32),
        "masked_lm_positions": np.tile(np.arange(1, 1 + preds, dtype=np.int32), (n, 1)),
        "masked_lm_ids": rng.integers(5, 999, (n, preds)).astype(np.int32),
        "masked_lm_weights": np.ones((n, preds), np.float32),
        "next_sentence_labels": np.zeros((n, 1), np.int32),
    }

    def fn(ctx):
        return tf.data.Dataset.from_tensor_slices(data).repeat().batch(4, drop_remainder=True)

    out = root / "pretrain"
    trainer = Trainer(
        PretrainingTask(config, seq, preds),
        TrainerConfig(output_dir=str(out), num_train_steps=2, learning_rate=1e-2, steps_per_loop=2),
        tf.distribute.get_strategy(),
        fn,
        log=lambda *_: None,
    )
    trainer.train()
    word = trainer.model.encoder.embeddings.word_embeddings.numpy()
    return root, out, word, trainer.model


def _forms(root, out, model):
    """name → path, for the five forms, the last two written here from the run."""
    from albert_tf.checkpoints import official_name_map
    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.export_encoder import export_encoder
    from tests.support.references import write_tf1_checkpoint

    export_encoder(str(out), str(root / "encoder"), str(root / "albert_config.json"))
    arrays = {
        name: (e.variable.numpy().T if e.transpose else e.variable.numpy())
        for name, e in official_name_map(model).items()
    }
    prefix = write_tf1_checkpoint(str(root / "tf1" / "model.ckpt"), arrays)
    convert("tf1", prefix, str(root / "converted"), str(root / "albert_config.json"))
    return {
        "prefix": str(out / "checkpoints" / "ckpt-2"),
        "checkpoint directory": str(out / "checkpoints"),
        "run output directory": str(out),
        "export_encoder output": str(root / "encoder"),
        "convert output": str(root / "converted"),
    }


def test_every_form_restores_the_encoder(pretraining_run):
    from albert_tf import AlbertConfig, load_checkpoint
    from albert_tf.modeling.models import AlbertClassifier

    root, out, word, model = pretraining_run
    forms = _forms(root, out, model)
    for name, path in forms.items():
        classifier = AlbertClassifier(AlbertConfig.from_dict(TINY), 2)
        report = load_checkpoint(classifier, path)
        assert "encoder" in report.restored, name
        assert report.missing == ["classifier_head"], name
        np.testing.assert_array_equal(
            classifier.encoder.embeddings.word_embeddings.numpy(), word, err_msg=name
        )


def test_a_checkpoint_of_heads_without_the_encoder_is_one_line(pretraining_run, tmp_path):
    """A checkpoint whose model object holds only a head (no model/encoder) is refused
    naming it, before any head is read."""
    import tensorflow as tf

    from albert_tf import AlbertConfig, load_checkpoint
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.modeling.models import AlbertClassifier

    *_, model = pretraining_run
    prefix = tf.train.Checkpoint(model=tf.train.Checkpoint(mlm_head=model.mlm_head)).write(
        str(tmp_path / "heads" / "ckpt-1")
    )
    with pytest.raises(CheckpointError, match=r"holds no encoder \(no model/encoder object\)"):
        load_checkpoint(AlbertClassifier(AlbertConfig.from_dict(TINY), 2), prefix)


@pytest.mark.slow
def test_fine_tuning_runners_start_from_a_pretraining_output_directory(
    pretraining_run, shared_data, tmp_path
):
    root, out, _, _ = pretraining_run
    common = [
        f"--spm_model_file={shared_data / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={root / 'albert_config.json'}",
        f"--init_checkpoint={out}",
        "--train_step=2",
        "--steps_per_loop=2",
        "--train_batch_size=8",
        "--do_train",
    ]
    run = run_command(
        "run_classifier.py",
        "--task_name=rte",
        f"--data_dir={shared_data / 'glue' / 'RTE'}",
        f"--output_dir={tmp_path / 'c'}",
        "--max_seq_length=32",
        "--max_train_examples=16",
        *common,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"init_checkpoint: restored encoder from {out / 'checkpoints' / 'ckpt-2'}" in run.stdout
    with open(shared_data / "squad" / "dev-v1.1.json") as f:
        data = json.load(f)
    train = tmp_path / "train.json"
    train.write_text(json.dumps({"version": data["version"], "data": data["data"][:1]}))
    run = run_command(
        "run_squad.py",
        f"--train_file={train}",
        f"--output_dir={tmp_path / 's'}",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--max_query_length=16",
        *common,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"init_checkpoint: restored encoder from {out / 'checkpoints' / 'ckpt-2'}" in run.stdout
