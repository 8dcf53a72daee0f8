"""What one shared `LiteModel` costs its callers now that its calls take turns under a lock
(albert_tf.serving.tflite_predict: one LiteRT interpreter keeps one set of input tensors,
so concurrent calls without the lock got other requests' rows or crashed).

    python -m bench.lite_threads                          # the workflows' tiny model
    python -m bench.lite_threads --hidden_size 256 --layers 4 --seconds 10

A classifier with random weights (SentencePiece model of ../shared/data/spm, text in) is
exported to a float32 .tflite; every interpreter gets one thread (--interpreter_threads),
so that 2 caller threads on 2 cores are not also racing the interpreter's own pool. Real
SST-2 dev sentences (../shared/data/glue), batches of --batch, are answered for --seconds by:

  1 thread, no lock    `LiteModel.classify` with the lock replaced by a no-op (as before)
  1 thread, lock       `LiteModel.classify` (the lock taken and released each call)
  2 threads, shared    both threads on one LiteModel: their invokes take turns
  2 threads, own       each thread its own LiteModel (an interpreter per thread)

The table gives calls per second and each row's ratio to "1 thread, lock"; the lock's
cost is "1 thread, lock" against "1 thread, no lock" (uncontended) and "2 threads,
shared" against "2 threads, own" (what sharing one model gives up at 2 threads). The
machine's load average is printed, as the figures are only comparable within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import sys
import tempfile
import threading
import time

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def _model(folder: str, hidden: int, layers: int, spm: str) -> str:
    """The float32 .tflite of a random-weight 2-label classifier."""
    import keras

    from albert_tf.checkpoints.finetuned import save_finetuned
    from albert_tf.checkpoints.task_info import TaskInfo
    from albert_tf.modeling.models import AlbertClassifier
    from albert_tf.serving.export import export_tflite
    from data_pipeline.tokenization.spec import TokenizerSpec
    from tests.support.tiny import WORKFLOW, tiny_config

    keras.utils.set_random_seed(0)
    config = tiny_config(
        WORKFLOW,
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_hidden_layers=layers,
        max_position_embeddings=128,
    )
    model = AlbertClassifier(config, 2, dropout=0.0)
    model.build()
    info = TaskInfo.build(
        "classifier", labels=["negative", "positive"], max_seq_length=128, do_lower_case=True
    )
    directory = save_finetuned(
        model, os.path.join(folder, "finetuned"), info, TokenizerSpec.from_files(spm)
    )
    paths = export_tflite("classifier", directory, os.path.join(folder, "lite"))
    return next(p for p in paths if p.endswith("float32.tflite"))


def _rate(calls, threads: int, seconds: float) -> float:
    """Calls per second of `threads` threads, thread i repeating calls[i] for `seconds`."""
    counts, stop, start = [0] * threads, threading.Event(), threading.Barrier(threads + 1)

    def worker(i):
        start.wait()
        while not stop.is_set():
            calls[i]()
            counts[i] += 1

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    [t.start() for t in pool]
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    [t.join() for t in pool]
    return sum(counts) / (time.perf_counter() - began)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hidden_size", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--interpreter_threads", type=int, default=1)
    args = p.parse_args(argv)
    spm, dev = DATA / "spm" / "de-30k-clean.model", DATA / "glue" / "SST-2" / "dev.tsv"
    if not (spm.exists() and dev.exists()):
        print(f"needs {spm} and {dev} (../shared/data)", file=sys.stderr)
        return 2
    from albert_tf.serving.tflite_predict import LiteModel

    sentences = [line.split("\t")[0] for line in dev.read_text().splitlines()[1:]]
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        path = _model(folder, args.hidden_size, args.layers, str(spm))
        models = [LiteModel(path, args.interpreter_threads) for _ in range(3)]
        models[2]._lock = contextlib.nullcontext()  # (one caller: nothing to guard)
        batches = [sentences[i : i + args.batch] for i in range(0, 256, args.batch)]

        def caller(model, offset: int):
            state = {"i": offset}

            def call():
                batch = batches[state["i"] % len(batches)]
                state["i"] += 1
                return model.classify(batch)

            return call

        for model in models:
            for _ in range(5):
                caller(model, 0)()
        rows = [
            ("1 thread, no lock", [caller(models[2], 0)], 1),
            ("1 thread, lock", [caller(models[0], 0)], 1),
            ("2 threads, shared", [caller(models[0], k * 7) for k in range(2)], 2),
            ("2 threads, own", [caller(models[k], k * 7) for k in range(2)], 2),
        ]
        rates = {name: _rate(calls, n, args.seconds) for name, calls, n in rows}
    base = rates["1 thread, lock"]
    print(
        f"H {args.hidden_size}, {args.layers} layers, batch {args.batch}, interpreter threads "
        f"{args.interpreter_threads}, {os.cpu_count()} cores; load average {load:.1f} → "
        f"{os.getloadavg()[0]:.1f}\n"
    )
    print("| callers | calls/s | × 1 thread, lock |\n|---|---:|---:|")
    for name, rate in rates.items():
        print(f"| {name} | {rate:.1f} | {rate / base:.2f} |")
    shared, own = rates["2 threads, shared"], rates["2 threads, own"]
    print(
        f"\nuncontended lock: {1e6 / base - 1e6 / rates['1 thread, no lock']:+.1f} µs a call; "
        f"2 threads sharing one model: {shared / own:.2f}× the calls/s of a model each"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
