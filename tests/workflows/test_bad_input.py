"""Bad input to the three runners: one `error: ...` line naming the flag or file, exit code
1, no traceback, and nothing written. One table of command lines (`CASES`), each run
in-process through the runner's console entry (tests.support.in_process), and the first
case of each runner once more as a process, as a user runs it (the exit code and stderr of
a real process); then the validators themselves.

Everything the table needs is made once per session without TensorFlow: a SentencePiece
model trained on a synthetic corpus, pretraining records of two lengths, tiny configs, a
csv task and SQuAD files. The errors fire before any model is built.
"""

import hashlib
import json
import os

import pytest

from tests.support.harness import run_cli
from tests.support.in_process import run_command

VOCAB = 200  # pieces of the session's SentencePiece model
CONFIG = {
    "vocab_size": VOCAB,
    "embedding_size": 16,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
}


def _corpus(path, documents=80, seed=0):
    """Documents of pseudo-words (one sentence a line, a blank line between documents)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words = ["".join(rng.choice(syllables, rng.integers(1, 4))) for _ in range(800)]
    lines = []
    for _ in range(documents):
        for _ in range(rng.integers(4, 9)):
            lines.append(" ".join(rng.choice(words, rng.integers(4, 12))).capitalize() + ".")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _squad(path, impossible: bool):
    context = "Tom lives in Paris. Anna lives in Rome."
    qas = [
        {
            "id": "q1",
            "question": "Where does Tom live?",
            "answers": [{"text": "Paris", "answer_start": context.index("Paris")}],
        }
    ]
    if impossible:
        qas.append(
            {"id": "q2", "question": "Where does Ben live?", "answers": [], "is_impossible": True}
        )
    version = "v2.0" if impossible else "1.1"
    path.write_text(
        json.dumps(
            {
                "version": version,
                "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}],
            }
        )
    )
    return path


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    """{name: path} of the session's files (module docstring)."""
    from data_pipeline.pretraining.data_config import DataConfig
    from data_pipeline.pretraining.local_writer import create_pretraining_data
    from data_pipeline.tokenization.sentencepiece_trainer import train_sentencepiece

    root = tmp_path_factory.mktemp("bad_input")
    corpus = _corpus(root / "corpus.txt")
    spm = train_sentencepiece([str(corpus)], str(root / "spm"), vocab_size=VOCAB)["model_file"]
    files = {"root": root, "spm": spm}
    for seq in (32, 128):
        create_pretraining_data(
            DataConfig.from_flags(
                input_file=str(corpus),
                output_dir=str(root / f"records{seq}"),
                spm_model_file=spm,
                max_seq_length=seq,
                max_predictions_per_seq=5,
                dupe_factor=1,
                num_output_shards=1,
            ),
            progress_every=1e9,
        )
        files[f"records{seq}"] = f"{root}/records{seq}/*.tfrecord"
    for name, overrides in (("config", {}), ("small_vocab", {"vocab_size": 100})):
        files[name] = root / f"{name}.json"
        files[name].write_text(json.dumps(dict(CONFIG, **overrides)))
    files["train_csv"] = root / "train.csv"
    files["train_csv"].write_text(
        "text,label\n" + "".join(f"ba ke {i},{'pos' if i % 2 else 'neg'}\n" for i in range(8))
    )
    files["dev_csv"] = root / "dev.csv"
    files["dev_csv"].write_text("text,label\nba ke,pos\nke ba,neg\nmi no,maybe\nno mi,pos\n")
    # A checkpoint whose .index was cut short (a copy interrupted), and one whose data file
    # is gone (a real index, written by TensorFlow).
    import tensorflow as tf

    (root / "truncated_index").mkdir()
    (root / "truncated_index" / "ckpt-1.index").write_bytes(b"\x00" * 40)
    (root / "truncated_index" / "ckpt-1.data-00000-of-00001").write_bytes(b"\x00" * 100)
    tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(root / "missing_data" / "ckpt-1"))
    os.remove(root / "missing_data" / "ckpt-1.data-00000-of-00001")
    files["truncated_index"] = root / "truncated_index" / "ckpt-1"
    files["missing_data"] = root / "missing_data" / "ckpt-1"
    files["squad_v1"] = _squad(root / "train-v1.1.json", impossible=False)
    files["squad_v2"] = _squad(root / "train-v2.0.json", impossible=True)
    return files


def _pretraining(d, out, *extra):
    return [
        "run_pretraining.py",
        f"--input_file={d['records32']}",
        f"--output_dir={out}",
        f"--albert_config_file={d['config']}",
        "--train_batch_size=8",
        "--num_train_steps=2",
        "--steps_per_loop=1",
        *extra,
    ]


def _classifier(d, out, *extra):
    return [
        "run_classifier.py",
        "--task_name=csv",
        f"--train_file={d['train_csv']}",
        f"--dev_file={d['dev_csv']}",
        "--text_a_column=text",
        f"--spm_model_file={d['spm']}",
        f"--albert_config_file={d['config']}",
        f"--output_dir={out}",
        "--do_train",
        "--do_eval",
        "--max_seq_length=32",
        "--train_batch_size=4",
        "--train_step=2",
        *extra,
    ]


def _squad_run(d, out, *extra):
    return [
        "run_squad.py",
        f"--train_file={d['squad_v1']}",
        f"--spm_model_file={d['spm']}",
        f"--albert_config_file={d['config']}",
        f"--output_dir={out}",
        "--do_train",
        "--max_seq_length=64",
        "--max_query_length=16",
        "--doc_stride=16",
        "--train_batch_size=2",
        "--train_step=2",
        *extra,
    ]


# (name, command line(data, output dir), an existing output dir?, the error's fragment).
# Later flags override earlier ones, so each case appends its bad value.
CASES = [
    (
        "pretraining_negative_batch",
        lambda d, out: _pretraining(d, out, "--train_batch_size=-8"),
        False,
        "error: --train_batch_size=-8 must be >= 1",
    ),
    (
        "pretraining_grad_accum_zero",
        lambda d, out: _pretraining(d, out, "--grad_accum_steps=0"),
        True,
        "error: --grad_accum_steps=0 must be >= 1",
    ),
    (
        "pretraining_negative_learning_rate",
        lambda d, out: _pretraining(d, out, "--learning_rate=-0.001"),
        False,
        "error: --learning_rate=-0.001 must be >= 0",
    ),
    (
        "pretraining_negative_warmup",
        lambda d, out: _pretraining(d, out, "--num_warmup_steps=-5"),
        False,
        "error: --num_warmup_steps=-5 must be >= 0",
    ),
    (
        "pretraining_no_steps",
        lambda d, out: _pretraining(d, out, "--num_train_steps=0"),
        True,
        "error: --num_train_steps=0 must be >= 1",
    ),
    (
        "pretraining_records_longer_than_positions",
        lambda d, out: _pretraining(d, out, f"--input_file={d['records128']}"),
        False,
        "meta_data.json: the records' max_seq_length=128 is more than "
        "max_position_embeddings=64 of --albert_config_file=",
    ),
    (
        "pretraining_records_vocabulary_larger_than_config",
        lambda d, out: _pretraining(d, out, f"--albert_config_file={d['small_vocab']}"),
        True,
        f"meta_data.json: the records' vocabulary has {VOCAB} pieces, but vocab_size=100 in "
        "--albert_config_file=",
    ),
    (
        "pretraining_output_dir_under_a_file",
        lambda d, out: _pretraining(d, out / "a_file" / "run"),
        False,
        "/a_file/run cannot be created: ",
    ),
    (
        "classifier_zero_batch",
        lambda d, out: _classifier(d, out, "--train_batch_size=0"),
        False,
        "error: --train_batch_size=0 must be >= 1",
    ),
    (
        "classifier_zero_eval_batch",
        lambda d, out: _classifier(d, out, "--eval_batch_size=0"),
        True,
        "error: --eval_batch_size=0 must be >= 1",
    ),
    (
        "classifier_length_buckets_not_increasing",
        lambda d, out: _classifier(d, out, "--length_buckets=32,16"),
        True,
        "error: --length_buckets: length buckets '32,16': expected positive increasing integers",
    ),
    (
        "classifier_sequence_longer_than_positions",
        lambda d, out: _classifier(d, out, "--max_seq_length=128"),
        False,
        "error: --max_seq_length=128 is more than max_position_embeddings=64 of "
        "--albert_config_file=",
    ),
    (
        "classifier_vocabulary_larger_than_config",
        lambda d, out: _classifier(d, out, f"--albert_config_file={d['small_vocab']}"),
        False,
        f".model has {VOCAB} pieces, but vocab_size=100 in --albert_config_file=",
    ),
    (
        "classifier_unseen_dev_label",
        lambda d, out: _classifier(d, out),
        True,
        "dev.csv:4: label 'maybe' is not one of the training labels ['neg', 'pos']",
    ),
    (
        "classifier_truncated_init_checkpoint",
        lambda d, out: _classifier(d, out, f"--init_checkpoint={d['truncated_index']}"),
        True,
        "ckpt-1 cannot be used: its .index file is unreadable",
    ),
    (
        "pretraining_init_checkpoint_without_data",
        lambda d, out: _pretraining(d, out, f"--init_checkpoint={d['missing_data']}"),
        False,
        "ckpt-1 cannot be used: data files are missing",
    ),
    (
        "squad_zero_steps_per_loop",
        lambda d, out: _squad_run(d, out, "--steps_per_loop=0"),
        False,
        "error: --steps_per_loop=0 must be >= 1",
    ),
    (
        "squad_v2_file_without_version_2_with_negative",
        lambda d, out: _squad_run(d, out, f"--train_file={d['squad_v2']}"),
        True,
        "train-v2.0.json: question 'q2' is_impossible (SQuAD v2.0); pass --version_2_with_negative",
    ),
]


def _snapshot(root):
    """{relative path: (sha256 or 'dir', mtime)} of everything under `root`."""
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            path = os.path.join(directory, name)
            found[os.path.relpath(path, root)] = ("dir", None)
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            found[os.path.relpath(path, root)] = (digest, os.stat(path).st_mtime_ns)
    return found


def _prepare(tmp_path, name, existing):
    out = tmp_path / "out"
    if existing or name.endswith("under_a_file"):
        out.mkdir()
    if name.endswith("under_a_file"):
        (out / "a_file").write_text("not a directory\n")
    if existing:  # a run's directory from before: its files must stay as they are
        (out / "cache").mkdir()
        (out / "run_config.json").write_text('{"earlier": true}\n')
        (out / "cache" / "kept.tfrecord").write_bytes(b"\x00" * 16)
    return out


def _one_error_line(run, fragment):
    assert run.returncode == 1, run.report()
    assert "Traceback" not in run.stderr, run.report()
    lines = run.stderr.rstrip("\n").splitlines()
    assert lines and lines[-1].startswith("error: "), run.report()
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], run.report()
    assert fragment in lines[-1], run.report()
    print(lines[-1])  # (pytest -rP shows each case's message)


@pytest.mark.parametrize(
    "name, command, existing, fragment", CASES, ids=[case[0] for case in CASES]
)
def test_bad_input_is_one_error_line_and_writes_nothing(
    data, tmp_path, name, command, existing, fragment
):
    out = _prepare(tmp_path, name, existing)
    before = _snapshot(tmp_path)
    _one_error_line(run_command(*command(data, out)), fragment)
    assert _snapshot(tmp_path) == before


# The first case of each runner, as a process: what a user's shell sees.
PROCESS_CASES = [
    next(case for case in CASES if case[0].startswith(runner))
    for runner in ("pretraining", "classifier", "squad")
]


@pytest.mark.parametrize(
    "name, command, existing, fragment", PROCESS_CASES, ids=[c[0] for c in PROCESS_CASES]
)
def test_bad_input_in_a_process_is_exit_1_and_one_line(
    data, tmp_path, name, command, existing, fragment
):
    out = _prepare(tmp_path, name, existing)
    before = _snapshot(tmp_path)
    _one_error_line(run_cli(*command(data, out), timeout=240), fragment)
    assert _snapshot(tmp_path) == before


# --- the validators in-process ------------------------------------------------------------


def test_check_output_dir(tmp_path):
    from albert_tf.training.run_setup import check_output_dir

    check_output_dir(str(tmp_path))  # exists, writable
    check_output_dir(str(tmp_path / "new" / "deeper"))  # creatable
    check_output_dir("gs://bucket/run")  # remote: left to its first use
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="--output_dir=.*/file is not a directory"):
        check_output_dir(str(tmp_path / "file"))
    with pytest.raises(ValueError, match=r"file/run cannot be created: .*/file is not a dir"):
        check_output_dir(str(tmp_path / "file" / "run"))
    with pytest.raises(ValueError, match="--output_dir is required"):
        check_output_dir("")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ValueError, match="locked/run cannot be created: .* is not writable"):
            check_output_dir(str(locked / "run"))
        with pytest.raises(ValueError, match="locked is not writable"):
            check_output_dir(str(locked))


def test_check_sequence_length_and_vocab_size():
    from albert_tf.modeling.config import AlbertConfig
    from albert_tf.training.run_setup import check_sequence_length, check_vocab_size

    config = AlbertConfig(**CONFIG)
    check_sequence_length(config, 64, source="c.json")
    with pytest.raises(ValueError, match="^--max_seq_length=65 is more than max_position_emb"):
        check_sequence_length(config, 65, source="c.json")
    check_vocab_size(config, VOCAB, "spm.model", source="c.json")
    check_vocab_size(config, VOCAB - 1, "spm.model", source="c.json")  # a padded table is fine
    with pytest.raises(
        ValueError, match=f"^spm.model has {VOCAB + 1} pieces, but vocab_size={VOCAB} in c"
    ):
        check_vocab_size(config, VOCAB + 1, "spm.model", source="c.json")


def test_unseen_labels_are_named_by_file_and_line(tmp_path):
    from data_pipeline.classification.tasks import TaskSpec

    row = '{{"text_a": "{}", "label": "{}"}}\n'
    (tmp_path / "train.jsonl").write_text(row.format("a", "x") + row.format("b", "y"))
    (tmp_path / "dev.jsonl").write_text(row.format("a", "x") + "\n" + row.format("c", "z"))
    spec = TaskSpec("jsonl", data_dir=str(tmp_path))
    labels = spec.labels()
    spec.check_labels("train", labels)
    with pytest.raises(ValueError) as e:
        spec.check_labels("dev", labels)
    assert str(e.value) == (
        f"{tmp_path / 'dev.jsonl'}:3: label 'z' is not one of the training labels ['x', 'y']"
    )
    regression = TaskSpec("jsonl", data_dir=str(tmp_path), regression=True)
    regression.check_labels("dev", None)  # nothing to check


def test_squad_version_check(data):
    from data_pipeline.squad.examples import check_version, read_squad

    v1, v2 = str(data["squad_v1"]), str(data["squad_v2"])
    check_version(read_squad(v1), v1, False, answers=True)
    check_version(read_squad(v1), v1, True, answers=True)  # a v1.1 file in v2.0 mode is fine
    check_version(read_squad(v2), v2, True, answers=True)
    with pytest.raises(ValueError, match=r"train-v2.0.json: question 'q2' is_impossible"):
        check_version(read_squad(v2), v2, False, answers=False)
    # Questions without answers: unanswerable for training and scoring, fine to predict.
    unlabeled = data["root"] / "unlabeled.json"
    raw = json.loads(data["squad_v1"].read_text())
    raw["data"][0]["paragraphs"][0]["qas"][0]["answers"] = []
    unlabeled.write_text(json.dumps(raw))
    check_version(read_squad(str(unlabeled)), str(unlabeled), False, answers=False)
    with pytest.raises(ValueError, match="question 'q1' has no answers .* pass --version_2_w"):
        check_version(read_squad(str(unlabeled)), str(unlabeled), False, answers=True)


def _truncate(path, keep_bytes):
    with open(path, "r+b") as f:
        f.truncate(keep_bytes)


def _record_ends(path):
    """Byte offsets where the TFRecords of `path` end."""
    import struct

    ends, size = [], os.path.getsize(path)
    with open(path, "rb") as f:
        while not ends or ends[-1] < size:
            f.seek(ends[-1] if ends else 0)
            ends.append((ends[-1] if ends else 0) + 16 + struct.unpack("<Q", f.read(8))[0])
    return ends


def test_truncated_caches_are_rebuilt(data, tmp_path, capsys):
    """A feature cache cut short but with its metadata intact is rebuilt, not trusted."""
    from data_pipeline.classification.features import task_features
    from data_pipeline.classification.tasks import TaskSpec
    from data_pipeline.squad.feature_records import squad_features
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(data["spm"])
    spec = TaskSpec(
        "csv",
        train_file=str(data["train_csv"]),
        dev_file=str(data["dev_csv"]),
        text_a_column="text",
    )
    labels = spec.labels()
    cache = str(tmp_path / "cache")
    first = task_features(spec, "train", tokenizer, cache, 32, labels)
    assert not first.reused and first.count == 8
    again = task_features(spec, "train", tokenizer, cache, 32, labels)
    assert again.reused and again.count == 8
    size = os.path.getsize(first.path)
    ends = _record_ends(first.path)
    assert len(ends) == 8 and ends[-1] == size
    for keep in (size - 3, ends[-2]):  # inside the last record; one whole record fewer
        _truncate(first.path, keep)
        rebuilt = task_features(spec, "train", tokenizer, cache, 32, labels)
        assert not rebuilt.reused and rebuilt.count == 8
        assert os.path.getsize(rebuilt.path) == size
        note = "does not hold the 8 intact records its metadata says: rebuilding"
        assert note in capsys.readouterr().out

    squad = squad_features(str(data["squad_v1"]), tokenizer, cache, 64, 16, 16, True)
    assert not squad.reused
    _truncate(squad.path, os.path.getsize(squad.path) - 1)
    rebuilt = squad_features(str(data["squad_v1"]), tokenizer, cache, 64, 16, 16, True)
    assert not rebuilt.reused and rebuilt.count == squad.count
    assert "rebuilding" in capsys.readouterr().out
    assert squad_features(str(data["squad_v1"]), tokenizer, cache, 64, 16, 16, True).reused


def test_a_nonfinite_fine_tuning_run_writes_no_best_and_no_predictions(data, tmp_path):
    """--learning_rate 1e30 overflows the weights in the first steps: exit 1 with one line
    naming the step; no best/, no eval_results.json, no GLUE TSV or probabilities, no
    checkpoint (today's NaN model is never promoted or used)."""
    out = tmp_path / "out"
    test_file = tmp_path / "test.csv"
    test_file.write_text("text\nba ke\nke ba\n")
    dev_file = tmp_path / "dev.csv"
    dev_file.write_text("text,label\nba ke,pos\nke ba,neg\n")
    run = run_command(
        *_classifier(
            data,
            out,
            "--learning_rate=1e30",
            "--train_step=4",
            "--steps_per_loop=2",
            "--do_predict",
            f"--test_file={test_file}",
            f"--dev_file={dev_file}",
            f"--export_dir={tmp_path / 'export'}",
        ),
        timeout=240,
    )
    assert run.returncode == 1, run.report()
    lines = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "NaN/inf at step" in lines[0], run.report()
    assert "Traceback" not in run.stderr
    written = sorted(p.name for p in out.iterdir())
    assert not {"best", "eval_results.json", "checkpoints"} & set(written), written
    assert not list(out.glob("*.tsv")) and not list(out.glob("*.jsonl*")), written
    assert not (tmp_path / "export").exists()
