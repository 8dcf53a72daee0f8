"""`--export_dtype bfloat16` (albert_tf.serving.compute_dtype): a tiny classifier fine-tuned
briefly on SST-2, exported float32 (by the run) and bfloat16 (by albert-export), answering 64
SST-2 dev sentences through our client; the dtype recorded and read
back; the flag on every exporting command; the notice on a CPU without bfloat16
instructions (its detection pointed at hand-written cpuinfo files)."""

import numpy as np
import pytest

from tests.support.harness import SHARED_DATA, WORKFLOW_CONFIG
from tests.support.in_process import run_command
from tests.support.serving_client import served
from tests.support.tf_serving_ops import SENTENCEPIECE_OPS, assert_stock_server_links

# Tolerance of the bfloat16 SavedModel against the float32 one. bfloat16 keeps 8 bits of
# mantissa: each matmul input is rounded by up to 2^-9 (0.2%) relative, products are summed
# in float32, LayerNorms and softmax are float32, the logits leave the head rounded to
# bfloat16 (spacing 2^-7 at 1-2). Through this model's 2 layers the logits (|logit| ≤ 1.3)
# moved by 3.7e-3 and the probabilities by 1.0e-3 (measured); held to 0.03 + 2% and 0.01:
# bounds with room (~8×), not a fit.
LOGITS_ATOL, LOGITS_RTOL, PROBABILITIES_ATOL = 0.03, 0.02, 0.01


@pytest.fixture(scope="module")
def sst2():
    path = SHARED_DATA / "glue" / "SST-2" / "dev.tsv"
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    return [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()[1:65]]


@pytest.fixture(scope="module")
def exports(tmp_path_factory, sst2):
    """{"float32": version, "bfloat16": version} of one tiny classifier (the workflows'
    model) fine-tuned briefly by run_classifier.py on 8,000 SST-2 training sentences (so
    its logits depend on the sentence and an argmax means something), exported float32 by
    the run's --export_dir and bfloat16 by `python -m albert_tf.serving.export
    --export_dtype bfloat16` from the fine-tuned directory inside that export."""
    import json

    tmp = tmp_path_factory.mktemp("dtype")
    train = (SHARED_DATA / "glue" / "SST-2" / "train.tsv").read_text(encoding="utf-8")
    (tmp / "data").mkdir()
    (tmp / "data" / "train.tsv").write_text("\n".join(train.splitlines()[:8001]) + "\n")
    dev = (SHARED_DATA / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8")
    (tmp / "data" / "dev.tsv").write_text("\n".join(dev.splitlines()[:65]) + "\n")
    (tmp / "config.json").write_text(json.dumps(WORKFLOW_CONFIG))
    ran = run_command(
        "run_classifier.py",
        "--task_name=sst-2",
        f"--data_dir={tmp / 'data'}",
        f"--output_dir={tmp / 'run'}",
        f"--spm_model_file={SHARED_DATA / 'spm' / 'de-30k-clean.model'}",
        f"--albert_config_file={tmp / 'config.json'}",
        "--max_seq_length=64",
        "--train_batch_size=32",
        "--train_step=500",
        "--steps_per_loop=500",
        "--learning_rate=1e-3",
        "--do_train",
        f"--export_dir={tmp / 'fp32'}",
    )
    assert ran.returncode == 0, ran.report()
    ran = run_command(
        "-m",
        "albert_tf.serving.export",
        "--task=classifier",
        f"--init_checkpoint={tmp / 'fp32' / '1' / 'assets.extra' / 'finetuned'}",
        f"--export_dir={tmp / 'bf16'}",
        "--export_dtype=bfloat16",
    )
    assert ran.returncode == 0, ran.report()
    return {"float32": str(tmp / "fp32" / "1"), "bfloat16": str(tmp / "bf16" / "1")}


def test_bfloat16_savedmodel_agrees_with_float32(exports, sst2):
    out = {d: served(v, {"text_a": sst2}) for d, v in exports.items()}
    fp32, bf16 = out["float32"], out["bfloat16"]
    for name in ("logits", "probabilities"):
        assert fp32[name].dtype == bf16[name].dtype == np.float32  # (outputs unchanged)
    np.testing.assert_allclose(bf16["logits"], fp32["logits"], LOGITS_RTOL, LOGITS_ATOL)
    np.testing.assert_allclose(bf16["probabilities"], fp32["probabilities"], 0, PROBABILITIES_ATOL)
    # The same argmax wherever the float32 decision is not within twice the largest logit
    # difference of a tie (a closer row may round either way), and that is nearly every row.
    error = np.abs(bf16["logits"] - fp32["logits"]).max()
    decided = np.abs(fp32["logits"][:, 1] - fp32["logits"][:, 0]) > 2 * error
    assert decided.mean() >= 0.9, (decided.mean(), error)
    argmax = bf16["probabilities"].argmax(-1), fp32["probabilities"].argmax(-1)
    assert (argmax[0] == argmax[1])[decided].all()
    assert (bf16["label"] == fp32["label"])[decided].all()
    assert 10 <= argmax[1].sum() <= 54  # (both labels, many times: the argmax is tested)
    # Not the same graph: the bfloat16 one differs from float32 (it rounds somewhere).
    assert np.abs(bf16["logits"] - fp32["logits"]).max() > 1e-4


def test_dtype_recorded_and_read_back(exports):
    from tensorflow.core.protobuf import saved_model_pb2

    from albert_tf.serving.compute_dtype import load_saved_model, recorded_dtype

    for dtype, version in exports.items():
        assert recorded_dtype(load_saved_model(version)) == dtype
        proto = saved_model_pb2.SavedModel()
        with open(f"{version}/saved_model.pb", "rb") as f:
            proto.ParseFromString(f.read())
        matmul_types = {
            node.attr["T"].type
            for function in proto.meta_graphs[0].graph_def.library.function
            for node in function.node_def
            if node.op in ("MatMul", "BatchMatMulV2")
        }
        bf16 = 14  # (types.proto DT_BFLOAT16)
        assert (bf16 in matmul_types) == (dtype == "bfloat16"), matmul_types
        # Either dtype runs on the stock TF Serving model server's ops.
        assert SENTENCEPIECE_OPS <= assert_stock_server_links(version), dtype


def test_notice_on_a_cpu_without_bfloat16(exports, tmp_path, capsys):
    from albert_tf.serving.compute_dtype import load_saved_model

    without = tmp_path / "old"
    without.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n")
    with_bf16 = tmp_path / "new"
    with_bf16.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 amx_tile\n")
    load_saved_model(exports["bfloat16"], cpuinfo=str(without))
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"note: {exports['bfloat16']} computes in bf")
    assert "it works, slower than a float32 export" in lines[0]
    load_saved_model(exports["bfloat16"], cpuinfo=str(with_bf16))
    load_saved_model(exports["float32"], cpuinfo=str(without))
    load_saved_model(exports["bfloat16"], cpuinfo=str(tmp_path / "absent"))  # (unknown)
    assert capsys.readouterr().err == ""


def test_native_bf16_reads_cpu_flags(tmp_path):
    from albert_tf.serving.compute_dtype import native_bf16

    cases = {
        "flags\t\t: fpu avx2 avx512f avx512bw avx512_vnni\n": False,
        "flags\t\t: fpu avx512f avx512_bf16\n": True,
        "flags\t\t: fpu amx_bf16 amx_tile\n": True,
        "Features\t: fp asimd sve bf16 i8mm\n": True,  # (aarch64)
        "Features\t: fp asimd\n": False,
        "model name\t: avx512_bf16 in a name, not a flag\n": False,
    }
    for i, (text, expected) in enumerate(cases.items()):
        path = tmp_path / f"cpuinfo{i}"
        path.write_text("processor\t: 0\n" + text)
        assert native_bf16(str(path)) is expected, text
    assert native_bf16(str(tmp_path / "absent")) is None


def test_export_dtype_on_every_exporting_command():
    from albert_tf.runners.driver import command
    from albert_tf.runners.families import FAMILIES
    from albert_tf.serving.export_command import COMMAND
    from albert_tf.serving.formats import export_formats
    from data_pipeline.command import UsageError

    run = ["run_classifier.py", "--task_name=sst-2", "--data_dir=d", "--output_dir=o"]
    for family in FAMILIES.values():
        runner = command(family)
        given = ["run.py", *(f"--{name}=x" for name in runner.required)]
        assert export_formats(runner.parse(given))["dtype"] == "float32"
        s = runner.parse(given + ["--export_dtype=bfloat16"])
        assert export_formats(s)["dtype"] == "bfloat16"
    s = COMMAND.parse_tool(
        ["albert-export", "--task=classifier", "--init_checkpoint=c", "--export_dir=d"]
    )
    assert s.export_dtype == "float32"
    with pytest.raises(
        UsageError, match="--export_dtype=float16: value should be one of <float32|bfloat16>"
    ):
        command(FAMILIES["classifier"]).parse(run + ["--export_dtype=float16"])


def test_exports_build_float32_under_a_leftover_policy():
    """A bfloat16 training run leaves Keras' global policy mixed_bfloat16; `dtype_policy`
    builds under the asked one and restores the caller's."""
    import keras

    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.serving.compute_dtype import dtype_policy, model_dtype
    from tests.support.harness import tiny_config

    keras.config.set_dtype_policy("mixed_bfloat16")
    with dtype_policy("float32"):
        model = AlbertClassifier(tiny_config(), 2)
    assert model_dtype(model) == "float32"
    assert keras.config.dtype_policy().name == "mixed_bfloat16"
    with pytest.raises(ValueError, match="--export_dtype 'int8' is not one of float32, bfloat16"):
        with dtype_policy("int8"):
            pass
