"""The whole chain on a non-local file system: every path a URL on TensorFlow's in-memory
ram:// file system — tokenizer training → create_pretraining_data → run_pretraining (and its
resume) → export_encoder → run_classifier (train, eval, predict) → SavedModel export.

ram:// is visible to this process only (a subprocess sees nothing), so each stage runs
in-process through its library function or its runner's `main`, as `python run_*.py` would
after parsing its flags. Tiny model, a few steps. Nothing may appear in the local working
directory (a path treated as local, e.g. `os.makedirs("ram://x")`, would land there)."""

import itertools
import json
import os
import random

import pytest

from data_pipeline.io import filesystem
from tests.support.harness import tiny_config

ROOT = f"ram://chain-{os.getpid()}"
_WORDS = random.Random(0)
WORDS = [
    "".join(_WORDS.choice("abcdefghiklmnoprstuvw") for _ in range(_WORDS.randint(2, 7)))
    for _ in range(400)
]


def _sentence(rng, words=WORDS):
    return " ".join(rng.choice(words) for _ in range(rng.randint(4, 12))).capitalize() + "."


def _write_corpus(directory, files=2, documents=40):
    rng = random.Random(1)
    for k in range(files):
        with filesystem.open(f"{directory}/part-{k}.txt", "w") as f:
            for _ in range(documents):
                f.write("\n".join(_sentence(rng) for _ in range(rng.randint(2, 6))) + "\n\n")


def _write_task(directory):
    """A csv task a tiny model can learn: the label is which half of the words it uses."""
    rng = random.Random(2)
    for split, n in (("train", 64), ("dev", 16), ("test", 8)):
        rows = ["sentence,label"]
        for i in range(n):
            label = i % 2
            half = WORDS[:200] if label else WORDS[200:]
            rows.append(f"{_sentence(rng, half)},{'pos' if label else 'neg'}")
        with filesystem.open(f"{directory}/{split}.csv", "w") as f:
            f.write("\n".join(rows) + "\n")


def _run(runner, args, capsys):
    """`python RUNNER.py ARGS` in this process (run_pretraining, run_classifier: their
    commands' `main`, argv parsed into settings once). Returns stdout."""
    from albert_tf.runners import pretraining
    from albert_tf.runners.driver import main
    from albert_tf.runners.families import FAMILIES

    argv = [f"{runner}.py", *args]
    if runner == "run_pretraining":
        code = pretraining.main(argv)
    else:
        code = main(FAMILIES["classifier"], "", argv)
    out = capsys.readouterr()
    assert code == 0, out.out[-2000:] + out.err[-3000:]
    return out.out


def _rows(path):
    return [json.loads(line) for line in filesystem.read_text(path).splitlines()]


@pytest.fixture
def empty_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    assert sorted(os.listdir(tmp_path)) == [], "a URL was written as a local path"


def test_whole_chain_on_ram_filesystem(empty_cwd, capsys):
    import tensorflow as tf

    from albert_tf.checkpoints.export_encoder import export_encoder
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data
    from data_pipeline.tokenization.sentencepiece_trainer import train_sentencepiece

    _write_corpus(f"{ROOT}/corpus")
    _write_task(f"{ROOT}/task")
    spm = train_sentencepiece(f"{ROOT}/corpus/*.txt", f"{ROOT}/spm/sp", 120, num_threads=1)
    assert spm["model_file"] == f"{ROOT}/spm/sp.model" and filesystem.exists(spm["model_file"])

    # Records: two forked workers write locally, the parent copies the shards to ram://.
    data = DataConfig.from_flags(
        input_file=f"{ROOT}/corpus/*.txt",
        output_dir=f"{ROOT}/records",
        spm_model_file=spm["model_file"],
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=2,
        num_output_shards=2,
    )
    meta = create_pretraining_data(data, num_workers=2)
    assert meta["instances"] > 100
    assert create_pretraining_data(data, num_workers=1) == meta  # complete: all skipped
    records = f"{ROOT}/records/*.tfrecord"
    assert len(filesystem.glob(records)) == 2
    assert filesystem.exists(f"{ROOT}/records/meta_data.json")

    config = f"{ROOT}/albert_config.json"
    tiny_config(vocab_size=120, max_position_embeddings=32).to_json_file(config)
    pretrain = f"{ROOT}/pretrain"
    args = [
        f"--input_file={records}",
        f"--output_dir={pretrain}",
        f"--albert_config_file={config}",
        f"--spm_model_file={spm['model_file']}",
        "--train_batch_size=8",
        "--num_warmup_steps=0",
        "--learning_rate=1e-3",
        "--steps_per_loop=1",
        "--save_checkpoints_steps=2",
    ]
    _run("run_pretraining", [*args, "--num_train_steps=2"], capsys)
    assert filesystem.exists(f"{pretrain}/checkpoints/ckpt-2.index")
    out = _run(
        "run_pretraining", [*args, "--num_train_steps=4", "--allow_changed=num_train_steps"], capsys
    )
    assert f"resumed from {pretrain}/checkpoints/ckpt-2 at step 2" in out
    steps = [r["step"] for r in _rows(f"{pretrain}/metrics.jsonl") if r.get("split") != "eval"]
    assert steps == [1, 2, 3, 4]  # the resumed run went on from step 2
    for name in ("run_config.json", "final_metrics.json", "checkpoints/ckpt-4.index"):
        assert filesystem.exists(f"{pretrain}/{name}"), name

    encoder = f"{ROOT}/encoder"
    prefix = export_encoder(pretrain, encoder)
    assert prefix.startswith(encoder) and filesystem.exists(f"{encoder}/checkpoint")

    finetune, export = f"{ROOT}/classifier", f"{ROOT}/export"
    _run(
        "run_classifier",
        [
            "--task_name=csv",
            f"--data_dir={ROOT}/task",
            "--text_a_column=sentence",
            "--label_column=label",
            f"--output_dir={finetune}",
            f"--init_checkpoint={encoder}",
            f"--spm_model_file={spm['model_file']}",
            f"--albert_config_file={config}",
            f"--export_dir={export}",
            "--max_seq_length=32",
            "--train_batch_size=8",
            "--train_step=4",
            "--steps_per_loop=2",
            "--learning_rate=1e-3",
            "--do_train",
            "--do_eval",
            "--do_predict",
        ],
        capsys,
    )
    report = json.loads(filesystem.read_text(f"{finetune}/eval_results.json"))
    assert report["step"] == 4 and "accuracy" in report["final"]
    assert len(filesystem.read_text(f"{finetune}/CSV.tsv").splitlines()) == 1 + 8
    assert filesystem.glob(f"{finetune}/cache/*.tfrecord")
    version = f"{export}/1"
    assert filesystem.exists(f"{version}/saved_model.pb")
    assert filesystem.exists(f"{version}/assets.extra/finetuned/task.json")
    served = tf.saved_model.load(version).signatures["serving_default"]
    probabilities = next(
        v for k, v in served(text_a=tf.constant(["abc de fgh"])).items() if k == "probabilities"
    )
    assert probabilities.shape == (1, 2)


@pytest.mark.parametrize("workers", [1, 2])
def test_data_writer_output_on_ram_equals_local(tmp_path, workers):
    """The staged writer's shards on ram:// are byte for byte the local writer's."""
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data
    from data_pipeline.tokenization.sentencepiece_trainer import train_sentencepiece

    root = f"{ROOT}/equal-{workers}-{next(_COUNT)}"
    _write_corpus(f"{root}/corpus", documents=20)
    spm = train_sentencepiece(f"{root}/corpus/*.txt", str(tmp_path / "sp"), 120, num_threads=1)
    local_corpus = tmp_path / "corpus"
    filesystem.copy_tree(f"{root}/corpus", str(local_corpus))
    settings = dict(
        spm_model_file=spm["model_file"],
        max_seq_length=32,
        max_predictions_per_seq=5,
        dupe_factor=1,
        num_output_shards=3,
        block_size=2000,
    )
    local = DataConfig.from_flags(
        input_file=f"{local_corpus}/*.txt", output_dir=str(tmp_path / "out"), **settings
    )
    remote = DataConfig.from_flags(
        input_file=f"{root}/corpus/*.txt", output_dir=f"{root}/out", **settings
    )
    create_pretraining_data(local, num_workers=workers)
    create_pretraining_data(remote, num_workers=workers, staging_dir=str(tmp_path / "staging"))
    for shard in range(3):
        name = local.shard_name(shard)
        assert filesystem.read_bytes(f"{root}/out/{name}") == (tmp_path / "out" / name).read_bytes()
    assert sorted(os.listdir(tmp_path / "staging" / "output")) == ["stats"]  # copied and removed


_COUNT = itertools.count()
