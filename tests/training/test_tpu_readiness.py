"""What a TPU requires of the training step, checked on CPU (docs/design/tpu.md says what
this shows and what only a TPU can).

- The whole `steps_per_loop` loop — every optimizer step with its all-reduce, clipping,
  gradient accumulation and the NaN/inf guard — compiles as ONE XLA computation once its
  batches come from the device (`TrainStep.run_loop` with a tensor `next_batch`, as a TPU's
  infeed provides them): `jit_compile=True` is must-compile (an op XLA cannot compile
  raises; there is no silent fallback to TensorFlow kernels), and the HLO holds one loop
  and no host transfer (send/recv, infeed/outfeed) or custom call.
- That compiled loop computes what the trainer's own loop computes on the same batches.
- The trainer's loop graph has exactly one host operation: reading the input iterator.
"""

import collections
import re

import numpy as np
import pytest

from tests.support.harness import tiny_config
from tests.training.test_training_numerics import PREDS, SEQ, _examples

STEPS = 3  # optimizer steps in one loop


def _classifier_examples(n=64, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 99, (n, SEQ)).astype(np.int32)
    return {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
        "label_ids": (ids[:, 1] % 2).astype(np.int32),
    }


def _squad_examples(n=64, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 99, (n, SEQ)).astype(np.int32)
    start = rng.integers(0, SEQ - 2, n).astype(np.int32)
    return {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
        "start_positions": start,
        "end_positions": start + 1,
    }


CASES = {  # between them: accumulation, both NaN guards, float32 and bfloat16, every head
    "pretraining-accum2": dict(data=_examples, accum=2),
    "classifier-bf16-skip": dict(
        data=_classifier_examples, accum=1, on_nonfinite="skip_step", dtype="bfloat16"
    ),
    "squad": dict(data=_squad_examples, accum=1),
}


def _task(name):
    from albert_tf.training import ClassificationTask, PretrainingTask, SquadTask

    config = tiny_config(
        num_hidden_layers=2,
        max_position_embeddings=SEQ,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    if name.startswith("pretraining"):
        return PretrainingTask(config, SEQ, PREDS)
    if name.startswith("classifier"):
        return ClassificationTask(config, num_labels=2)
    return SquadTask(config)


def _trainer(tmp_path, name, case, directory):
    """A Trainer whose per-replica step is XLA-compiled (`jit_compile`), as on a TPU."""
    import tensorflow as tf

    from albert_tf.training import Trainer, TrainerConfig

    data = case["data"]()

    def fn(ctx):
        return (
            tf.data.Dataset.from_tensor_slices(data)
            .repeat()
            .batch(ctx.get_per_replica_batch_size(8), drop_remainder=True)
        )

    config = TrainerConfig(
        output_dir=str(tmp_path / directory),
        num_train_steps=STEPS,
        steps_per_loop=STEPS,
        learning_rate=1e-3,
        optimizer="lamb",
        grad_accum_steps=case["accum"],
        on_nonfinite=case.get("on_nonfinite", "stop"),
        dtype=case.get("dtype", "float32"),
        jit_compile=True,
        seed=3,
    )
    return Trainer(_task(name), config, tf.distribute.get_strategy(), fn, log=lambda *_: None)


def _staged(trainer, count):
    """`count` batches of the trainer's pipeline stacked on the device, and a `next_batch`
    that reads them in order inside a compiled function (a step counter in a variable)."""
    import tensorflow as tf

    batches = [next(trainer.train_iterator) for _ in range(count)]
    stacked = {k: tf.stack([b[k] for b in batches]) for k in batches[0]}
    cursor = tf.Variable(0, dtype=tf.int32, trainable=False)

    def next_batch():
        i = cursor.value()
        cursor.assign_add(1)
        return {k: tf.gather(v, i) for k, v in stacked.items()}

    return next_batch


def _op_types(concrete):
    """Op type → count over a concrete function's graph and every function it calls."""
    counts = collections.Counter()
    seen = set()

    def walk(graph):
        for op in graph.get_operations():
            counts[op.type] += 1
        for name, f in getattr(graph, "_functions", {}).items():
            if name not in seen and hasattr(f, "graph"):
                seen.add(name)
                walk(f.graph)

    walk(concrete.graph)
    return counts


@pytest.mark.integration  # a training loop of tens of steps: over the unit tier's 5 s
@pytest.mark.parametrize("name", list(CASES))
def test_the_whole_loop_compiles_as_one_xla_computation_and_trains_like_the_trainer(tmp_path, name):
    import tensorflow as tf

    case = CASES[name]
    compiled = _trainer(tmp_path, name, case, "xla")
    next_batch = _staged(compiled, STEPS * case["accum"])
    whole = tf.function(lambda n: compiled.train_step.run_loop(next_batch, n), jit_compile=True)
    # Must-compile: raises (InvalidArgumentError naming the op) if any op of any step is
    # not XLA-compilable; nothing falls back to a TensorFlow kernel.
    totals = {k: v.numpy() for k, v in whole(tf.constant(STEPS)).items()}
    assert compiled.step == STEPS and totals["count"] == STEPS

    hlo = whole.experimental_get_compiler_ir(tf.constant(STEPS))(stage="hlo")
    kinds = _hlo_opcodes(hlo)
    assert kinds["while"] == 1, "the steps_per_loop loop is one on-device loop"
    host = {k: n for k, n in kinds.items() if k in HOST_INSTRUCTIONS}
    assert not host, f"host transfers or custom calls in the compiled loop: {host}"

    # The trainer's own loop (per-replica step compiled, batches from its iterator: the
    # same pipeline, so the same batches) ends with the same weights and totals.
    reference = _trainer(tmp_path, name, case, "trainer")
    expected = reference._train_loop(reference.train_iterator, tf.constant(STEPS))
    expected = {k: v.numpy() for k, v in expected.items()}
    assert reference.step == STEPS
    assert set(expected) == set(totals)
    tol = 2e-2 if case.get("dtype") == "bfloat16" else 2e-5
    for key in expected:
        np.testing.assert_allclose(totals[key], expected[key], rtol=tol, atol=tol, err_msg=key)
    for a, b in zip(compiled.model.trainable_variables, reference.model.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol, err_msg=a.path)


def _hlo_opcodes(hlo: str) -> collections.Counter:
    """Opcode → count over an HLO module's text (`%name = SHAPE opcode(operands), ...`)."""
    counts = collections.Counter()
    for line in hlo.splitlines():
        head = line.split(", metadata=")[0]
        if re.match(r"\s+(ROOT\s+)?%\S+ = ", head):
            match = re.search(r"[\]})]\s([a-z][a-z0-9-]*)\(", head)
            if match:
                counts[match.group(1)] += 1
    return counts


HOST_INSTRUCTIONS = {
    "send",
    "send-done",
    "recv",
    "recv-done",
    "infeed",
    "outfeed",
    "custom-call",
}


def test_the_trainer_loop_has_one_host_operation_the_input_iterator(tmp_path):
    """Everything in the trainer's loop graph but the iterator read is device computation;
    on a TPU that read becomes the infeed."""
    import tensorflow as tf

    name = "pretraining-accum2"
    trainer = _trainer(tmp_path, name, CASES[name], "host-ops")
    concrete = trainer._train_loop.get_concrete_function(trainer.train_iterator, tf.constant(STEPS))
    counts = _op_types(concrete)
    host = {
        t: n
        for t, n in counts.items()
        if re.search(r"Iterator|Print|PyFunc|String|Summary|Write|Save|Restore|Optional", t)
    }
    assert host == {"IteratorGetNext": 2}, host  # two micro-batches a step


def test_an_op_xla_cannot_compile_fails_loudly():
    """jit_compile=True is must-compile: the tests above would fail, not fall back, if a host
    op (a print, a string op, Python) entered the step."""
    import tensorflow as tf

    printing = tf.function(lambda x: (tf.print(x), x * 2)[1], jit_compile=True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="StringFormat|PrintV2"):
        printing(tf.constant(1.0))
