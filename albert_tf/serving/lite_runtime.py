"""Running an ids-in LiteRT file on the CPU with each weight matrix packed once.

ALBERT shares one layer's weights across all its layers, and the file stores them once; but
the interpreter's XNNPack delegate packs the weights of every FULLY_CONNECTED node for
itself: an ALBERT-base file holds twelve packed copies of the layer's 27 MB, and every call
reads all twelve from memory instead of one copy from cache. LiteRT's CompiledModel with
XNNPack's weight cache (kept in memory: `CACHE_IN_MEMORY`) packs each matrix once and lets
every node that uses it share the copy: the process holds one packed layer, and every call
reads 27 MB of weights instead of 324 (figures: docs/performance.md).

`CompiledRunner(path, threads).get_signature_runner(signature)(**inputs)` answers as the
interpreter's does: numpy inputs of any batch and length (the file's dynamic dimensions),
numpy outputs of the computed shapes, equal to the interpreter's bit for bit
(tests/serving/test_token_classifier_serving.py). Files with custom ops (the text-in files'
tokenizers) stay on the interpreter: CompiledModel registers none."""

from __future__ import annotations

import functools
import os
import tempfile

import numpy as np

# The ids-in files that run this way: those whose outputs are all sized at allocation (a
# classifier's file takes ids when it windows long documents). The top-k outputs of
# fill_mask and the ALBERT SQuAD head are allocated while the file runs, which
# CompiledModel's caller-owned output buffers cannot hold: those stay on the interpreter.
COMPILED_TASKS = ("token_classifier", "classifier")
CACHE_IN_MEMORY = ":memory:"  # XNNPack's name for a weight cache that is never written


def ids_in_runtime(path: str, task: str, threads: int):
    """The runtime of an ids-in file: a CompiledRunner for COMPILED_TASKS, else the
    interpreter. Either has get_signature_list() and get_signature_runner(name)."""
    if task in COMPILED_TASKS:
        return CompiledRunner(path, threads)
    from ai_edge_litert.interpreter import Interpreter

    return Interpreter(model_path=path, num_threads=threads)


class CompiledRunner:
    """Signatures of one LiteRT file through ai-edge-litert's CompiledModel, `threads` CPU
    threads, XNNPack's weight cache in memory."""

    def __init__(self, path: str, threads: int):
        import ai_edge_litert
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.cpu_options import CpuOptions
        from ai_edge_litert.environment import Environment, EnvironmentOptions
        from ai_edge_litert.hardware_accelerator import HardwareAccelerator
        from ai_edge_litert.options import Options

        cpu = CpuOptions(num_threads=threads, xnnpack_weight_cache_path=CACHE_IN_MEMORY)
        # The CPU alone: the environment's vendor directories are an empty one, so no NPU
        # compiler plugin shipped in the wheel is loaded (each fails or warns on a CPU host).
        with tempfile.TemporaryDirectory(prefix="albert-litert-") as nothing:
            here = os.path.dirname(os.path.abspath(ai_edge_litert.__file__))
            environment = Environment.create(
                options=EnvironmentOptions(
                    runtime_path=here, compiler_plugin_path=nothing, dispatch_library_path=nothing
                )
            )
            self.model = CompiledModel.from_file(
                path,
                environment=environment,
                options=Options(HardwareAccelerator.CPU, cpu_options=cpu),
            )
        self.signatures = self.model.get_signature_list()
        self._outputs = output_signatures(path)
        self._shapes = {}  # signature → the input shapes it was last resized to

    def get_signature_list(self) -> dict:
        """{signature: {"inputs": [...], "outputs": [...]}}, as the interpreter's."""
        return self.signatures

    def get_signature_runner(self, signature: str):
        """`fn(**inputs) → {output: array}` for one signature, as the interpreter's."""
        if signature not in self.signatures:
            raise ValueError(f"no signature {signature!r}; the file has {sorted(self.signatures)}")
        return functools.partial(self, signature)

    def __call__(self, signature: str, **inputs) -> dict:
        from ai_edge_litert.tensor_buffer import TensorBuffer

        m, index = self.model, self.model.get_signature_index(signature)
        names = self.signatures[signature]["inputs"]
        if set(inputs) != set(names):
            raise ValueError(f"signature {signature} takes {sorted(names)}, got {sorted(inputs)}")
        arrays = {k: np.ascontiguousarray(v) for k, v in inputs.items()}
        shapes = tuple(arrays[n].shape for n in names)
        if self._shapes.get(signature) != shapes:
            for name, shape in zip(names, shapes):
                m.resize_input_tensor_by_name(signature, name, list(shape))
            self._shapes[signature] = shapes
        buffers = m.create_input_buffers(index)
        for name, buffer in zip(names, buffers):
            buffer.write(arrays[name])
        # An output's shape is known only once the model has run at these input shapes, so
        # each output gets room for its largest possible size: every dimension the file
        # leaves open (-1 in its shape signature) at most the largest input dimension.
        bound = max((d for s in shapes for d in s), default=1)
        outputs = self.signatures[signature]["outputs"]
        room = {}
        for name in outputs:
            dims, dtype = self._outputs[signature][name]
            size = int(np.prod([bound if d < 0 else d for d in dims], dtype=np.int64))
            room[name] = np.zeros([max(size, 1)], dtype)
        out_buffers = [TensorBuffer.create_from_host_memory(room[n]) for n in outputs]
        m.run_by_index(index, buffers, out_buffers)
        details = m.get_output_tensor_details(signature)
        result = {}
        for name, buffer in zip(outputs, out_buffers):
            shape = details[name]["shape"]
            count = int(np.prod(shape, dtype=np.int64))
            if count > room[name].size:  # (a file whose outputs break the bound's rule)
                raise RuntimeError(
                    f"{signature}: output {name} has shape {shape}, larger than its open "
                    "dimensions at most the largest input dimension; run it with the interpreter"
                )
            result[name] = buffer.read(count, room[name].dtype).reshape(shape)
        return result


def output_signatures(path: str) -> dict:
    """{signature: {output: (shape signature, numpy dtype)}} of a LiteRT file, read from its
    flatbuffer (-1: a dimension the file leaves open)."""
    from ai_edge_litert import schema_py_generated as schema

    with open(path, "rb") as f:
        model = schema.Model.GetRootAs(f.read(), 0)
    t = schema.TensorType
    types = {t.FLOAT32: np.float32, t.INT32: np.int32, t.INT64: np.int64, t.BOOL: np.bool_,
             t.FLOAT16: np.float16, t.INT8: np.int8, t.UINT8: np.uint8}  # fmt: skip
    out = {}
    for i in range(model.SignatureDefsLength()):
        signature = model.SignatureDefs(i)
        graph = model.Subgraphs(signature.SubgraphIndex())
        outputs = {}
        for j in range(signature.OutputsLength()):
            entry = signature.Outputs(j)
            tensor = graph.Tensors(entry.TensorIndex())
            dims = tensor.ShapeSignatureAsNumpy()
            if not isinstance(dims, np.ndarray):  # (no signature: a static shape)
                dims = tensor.ShapeAsNumpy()
            dtype = np.dtype(types[tensor.Type()])
            outputs[entry.Name().decode()] = ([int(d) for d in dims], dtype)
        out[signature.SignatureKey().decode()] = outputs
    return out
