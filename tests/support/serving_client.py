"""A SavedModel asked as a serving client asks it: `served` in this process, `client` in a
fresh process that imports only tensorflow and tensorflow_text (the contract a server
relies on: nothing of this project is needed to answer). One test keeps the fresh-process
proof (tests/serving/test_export.py); the others ask in-process, where `served` also
refuses a graph that calls back into Python (PyFunc), the one way an in-process answer
could depend on this process' state.

A LiteRT or ONNX file asked as an app asks it: `lite_client` runs requests through the
on-device runner (albert_tf.serving.tflite_predict.LiteModel, or onnx_predict.OnnxModel for
a `.onnx` file: the same call interface) in a fresh process and checks that nothing heavier
was imported (no model, export or training code; for ONNX, no TensorFlow either)."""

from __future__ import annotations

import json
import os

import numpy as np

PYTHON_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}

CLIENT = """\
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SentencePiece op kernels)
path, signature, inputs, out = sys.argv[1:5]
model = tf.saved_model.load(path)
fn = model.signatures[signature]
with open(inputs) as f:
    args = {k: tf.constant(v) for k, v in json.load(f).items()}
result = fn(**args)
assert not [m for m in sys.modules if m.split(".")[0] in ("albert_tf", "data_pipeline")]
np.savez(out, **{k: v.numpy() for k, v in result.items()})
"""


def op_types(fn) -> set[str]:
    """Every op type of a concrete function's graph and of the functions it calls."""
    graph = fn.graph.as_graph_def()
    found = {node.op for node in graph.node}
    for function in graph.library.function:
        found.update(node.op for node in function.node_def)
    return found


def served(saved_model, inputs: dict, signature: str = "serving_default") -> dict:
    """The SavedModel's `signature` on `inputs` (name → list), loaded in this process:
    outputs as numpy arrays (strings as object arrays of bytes), as `client` returns them.
    Loaded as our serving clients load (`compute_dtype.load_saved_model`)."""
    import tensorflow as tf

    from albert_tf.serving.compute_dtype import load_saved_model

    fn = load_saved_model(str(saved_model)).signatures[signature]
    python = op_types(fn) & PYTHON_OPS
    assert not python, f"{saved_model} calls back into Python: {sorted(python)}"
    result = fn(**{k: tf.constant(v) for k, v in inputs.items()})
    return {k: v.numpy() for k, v in result.items()}


def client(tmp_path, saved_model, inputs, signature="serving_default"):
    """`served`, in a fresh process (tensorflow + tensorflow_text only)."""
    from tests.support.harness import run_cli

    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    out = tmp_path / "out.npz"
    run = run_cli(
        script,
        saved_model,
        signature,
        tmp_path / "inputs.json",
        out,
        env=dict(os.environ, PYTHONPATH=""),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.report()
    return dict(np.load(out, allow_pickle=True))  # (string outputs are object arrays)


LITE_CLIENT = """\
import json, sys
import numpy as np
from albert_tf.serving.tflite_predict import LiteModel
requests = json.load(open(sys.argv[1]))
out = {}
for name, r in requests.items():
    if r["model"].endswith(".onnx"):
        from albert_tf.serving.onnx_predict import OnnxModel as LiteModel
    model = LiteModel(r["model"], num_threads=1)
    result = getattr(model, r["method"])(*r["args"], **r.get("kwargs", {}))
    if isinstance(result, list):
        out[name + "/answers"] = np.array(json.dumps(result))
    else:
        out.update({f"{name}/{k}": v for k, v in result.items()})
heavy = [m for m in sys.modules if m.startswith(tuple(json.loads(sys.argv[3])))]
assert not heavy, heavy
np.savez(sys.argv[2], **out)
"""
# What no LiteRT client imports: the model, export and training code, KerasHub.
HEAVY = (
    "albert_tf.modeling",
    "albert_tf.serving.export",
    "albert_tf.serving.litert",
    "albert_tf.training",
    "keras_hub",
)
# An ONNX client imports neither TensorFlow nor Keras either.
ONNX_HEAVY = (*HEAVY, "tensorflow", "keras")


def lite_client(tmp_path, requests, heavy=HEAVY) -> dict:
    """Runs `requests` ({name: {model, method, args[, kwargs]}}: LiteModel(model).method(...),
    OnnxModel for a `.onnx` model) in a fresh process that must not import any module under
    `heavy`; {name/output: array}, a list answer as {name/answers: its JSON}."""
    from tests.support.harness import ROOT, run_cli

    (tmp_path / "requests.json").write_text(json.dumps(requests))
    script = tmp_path / "lite_client.py"
    script.write_text(LITE_CLIENT)
    out = tmp_path / "lite_out.npz"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = run_cli(script, tmp_path / "requests.json", out, json.dumps(heavy), env=env, cwd=tmp_path)
    assert run.returncode == 0, run.report()
    return dict(np.load(out, allow_pickle=True))
