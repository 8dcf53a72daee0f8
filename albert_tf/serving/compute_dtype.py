"""The compute dtype of an exported SavedModel (`--export_dtype`, albert_tf.serving.formats):
the Keras policy its model is rebuilt under, the dtype the SavedModel records, and the
one-line notice when a bfloat16 SavedModel is loaded on a CPU without bfloat16 instructions.

A bfloat16 export takes the project's mixed-precision path (docs/design/precision.md), not
bfloat16 weights: the model is rebuilt under the `mixed_bfloat16` policy and given the
float32 weights, so its variables stay float32 (the checkpoint's exact values) and every
forward pass casts each distinct weight to bfloat16 once (ALBERT's shared block: once per
pass, not once per layer), computes the matmuls in bfloat16 and the LayerNorms, softmax and
residual stream in float32 — the path training and its tests already cover, so the
exported graph is no new numerics. The signatures take the same inputs and return float32.

The dtype is recorded as the string variable `compute_dtype` of the SavedModel's root
object (beside the tokenizer's `vocabulary_sha256` and `tokenizer_kind`): any client reads it
after `tf.saved_model.load` (`loaded.compute_dtype.numpy()`), nothing else needed. An export
made before it existed has none: float32.

Whether the CPU computes bfloat16 natively is read from /proc/cpuinfo's flags: x86's
avx512_bf16 (AVX-512 BF16 dot products) or amx_bf16 (AMX tiles), aarch64's bf16. TensorFlow
exposes no such test to Python (its `_pywrap_util_port` has none; oneDNN picks its kernels
from CPUID itself, and without these instructions it converts bfloat16 in software, which
works and is slower). Without /proc/cpuinfo (not Linux) the answer is unknown and nothing
is said.
"""

from __future__ import annotations

import contextlib
import sys

from albert_tf.serving.formats import EXPORT_DTYPES

POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}
# /proc/cpuinfo flags of native bfloat16 arithmetic (x86 AVX-512 BF16 and AMX; aarch64 BF16).
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
CPUINFO = "/proc/cpuinfo"


def check_dtype(dtype: str) -> str:
    """`dtype` when it is one of EXPORT_DTYPES; ValueError (one line naming the flag) else."""
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"--export_dtype {dtype!r} is not one of {', '.join(EXPORT_DTYPES)}")
    return dtype


@contextlib.contextmanager
def dtype_policy(dtype: str):
    """Keras' global dtype policy set to `dtype`'s (float32 / mixed_bfloat16) while models
    are built inside, restored after: an export after a bfloat16 training run still builds
    float32 models unless asked."""
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(POLICIES[check_dtype(dtype)])
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def model_dtype(model) -> str:
    """The dtype `model` computes in ("float32", "bfloat16")."""
    return str(getattr(model, "compute_dtype", None) or "float32")


def rebuilt(task, model, dtype: str):
    """`model` (a TaskInfo `task`'s model, or a standalone kind's) as it computes in `dtype`:
    itself when it already does, else the same model rebuilt under `dtype_policy(dtype)`
    holding the same float32 weights (no file read again)."""
    if model_dtype(model) == check_dtype(dtype):
        return model
    with dtype_policy(dtype):
        twin = task.model(model.config)
        twin.build()
    twin.set_weights(model.get_weights())
    return twin


def native_bf16(cpuinfo: str = CPUINFO) -> bool | None:
    """Whether this CPU has bfloat16 arithmetic instructions (`NATIVE_BF16_FLAGS` among the
    flags of `cpuinfo`); None when the file cannot be read (not Linux): unknown."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    words = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            words.update(value.split())
    return bool(words & NATIVE_BF16_FLAGS)


def recorded_dtype(loaded) -> str:
    """The compute dtype a loaded SavedModel records (its root's `compute_dtype`), float32
    for one that records none."""
    variable = getattr(loaded, "compute_dtype", None)
    if variable is None:
        return "float32"
    value = variable.numpy()
    return value.decode() if isinstance(value, bytes) else str(value)


def slow_notice(path: str, dtype: str, native: bool | None) -> str | None:
    """The one line to print when a `dtype` SavedModel at `path` runs on a CPU whose bfloat16
    support is `native` (None: unknown → nothing), or None."""
    if dtype != "bfloat16" or native is not False:
        return None
    return (
        f"note: {path} computes in bfloat16, but this CPU has no bfloat16 instructions "
        f"({', '.join(sorted(NATIVE_BF16_FLAGS - {'bf16'}))}): it works, slower than a "
        "float32 export (--export_dtype float32)"
    )


def load_saved_model(path: str, cpuinfo: str = CPUINFO):
    """`tf.saved_model.load(path)` as our serving clients load it: tensorflow-text imported
    first (the tokenizer's op kernels), and the `slow_notice` line on stderr when a bfloat16
    SavedModel meets a CPU without bfloat16 instructions."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SentencePiece / WordPiece op kernels)

    loaded = tf.saved_model.load(str(path))
    notice = slow_notice(str(path), recorded_dtype(loaded), native_bf16(cpuinfo))
    if notice:
        print(notice, file=sys.stderr, flush=True)
    return loaded
