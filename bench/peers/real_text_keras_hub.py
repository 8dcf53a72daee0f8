"""KerasHub's AlbertTextClassifier (ALBERT-base, with its preprocessor) on real GLUE text, the
way its users run it: one `RESULT {json}` line for bench/real_text.py.

    /work/peers/kh/bin/python bench/peers/real_text_keras_hub.py --task sst-2 --mode infer
    /work/peers/kh/bin/python bench/peers/real_text_keras_hub.py --task rte --mode train

Standalone (TensorFlow backend, keras-hub; nothing of this project). Model:
`AlbertTextClassifier(AlbertBackbone(ALBERT-base sizes), AlbertTextClassifierPreprocessor(
AlbertTokenizer(proto=--spm), sequence_length=128), num_classes)`, random weights (speed does
not depend on them), float32, dropout as KerasHub's defaults (backbone 0, classifier 0.1).
The tokenizer is the same SentencePiece model as ours; KerasHub's ALBERT tokenizer does not
lower-case (SentencePiece alone), so it sees more pieces than the lower-casing tokenizers:
its tokens present are its own. The preprocessor pads every sequence to sequence_length
(tokens computed = examples × 128). Pairs (MRPC, RTE, STS-B) go in as (text_a, text_b)
tuples; STS-B is regression (num_classes=1, mean squared error). XLA as bench_keras_hub.py
runs it: `compile(jit_compile=True)` (Keras 3's "auto" leaves XLA off on CPU).

infer  text → probabilities: `AlbertTextClassifier(activation="softmax")` (STS-B: the
       score), compiled with XLA.
       Batch > 1: `classifier.predict(texts, batch_size=B)` on the list of dev strings, as
       the KerasHub guides predict: it maps the preprocessor over a tf.data pipeline of the
       strings (in parallel with the model) and runs the compiled predict function per
       batch. One pass = the first `--limit` dev examples (0: all); a warm-up pass first
       (untimed: XLA compiles the full and the last, shorter batch), then `--reps` timed
       passes; examples/s = examples / median pass time.
       Batch 1: `classifier.predict_on_batch([text])` per example, Keras' API for one
       batch (it applies the preprocessor, then the same compiled function): a `predict`
       call per request would add building a dataset, an iterator and callbacks (tens of
       ms) that nobody serving single requests pays. p50/p95 request latency too.
train  `classifier.fit((texts), labels, batch_size=B, steps_per_epoch=warmup + reps ×
       steps, epochs=1)` after `compile(AdamW(2e-5), default loss, jit_compile=True)`:
       a callback stamps the end of every batch; the first `--warmup` steps (XLA compile)
       are untimed, then examples/s per rep of `--steps` steps, median over `--reps`.
       Examples: `--limit` drawn at random from train (seed 0; 0: as many as the steps
       need), in a seeded random order (given as a list: fit does not shuffle it).

tokens computed / present: rows × 128 against the preprocessor's padding-mask ones (counted
outside the timing), over one pass (infer) or the timed steps (train).

The GLUE reading, train subset, flags and RESULT line's common fields are shared with
real_text_hf.py in real_text_common.py beside it (standard library and numpy).
"""

from __future__ import annotations

import os
import platform
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from real_text_common import BASE, GLUE, finish, head, loadavg, parser, read_glue, train_order


def main():
    p = parser(__doc__)
    p.add_argument("--jit", type=int, default=1, help="1: compile(jit_compile=True) (XLA)")
    args = p.parse_args()

    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    labels = GLUE[args.task][4]
    regression = labels is None
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
        keras_hub.models.AlbertTokenizer(proto=args.spm), sequence_length=args.seq
    )
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=BASE["vocab"],
        num_layers=BASE["layers"],
        num_heads=BASE["heads"],
        embedding_dim=BASE["embedding"],
        hidden_dim=BASE["hidden"],
        intermediate_dim=BASE["intermediate"],
        num_groups=1,
        num_inner_repetitions=1,
        max_sequence_length=512,
    )
    classifier = keras_hub.models.AlbertTextClassifier(
        backbone,
        num_classes=1 if regression else len(labels),
        preprocessor=preprocessor,
        activation="softmax" if args.mode == "infer" and not regression else None,
    )
    result = dict(
        **head("kh", args),
        versions=dict(
            keras_hub=keras_hub.__version__,
            keras=keras.__version__,
            tensorflow=tf.__version__,
            numpy=np.__version__,
            python=platform.python_version(),
        ),
        jit_compile=bool(args.jit),
        cpu_count=os.cpu_count(),
        loadavg_at_start=loadavg(),
    )

    def inputs(a, b):
        """Text for the preprocessor: a list, or for pairs a tuple of string tensors (a
        tuple of lists is taken for (x, y), as KerasHub's docstring warns)."""
        return a if b is None else (tf.constant(a), tf.constant(b))

    def present_tokens(a, b):
        """Padding-mask ones the preprocessor gives (in chunks, outside the timing)."""
        total = 0
        for i in range(0, len(a), 256):
            chunk = inputs(a[i : i + 256], b[i : i + 256] if b else None)
            total += int(tf.reduce_sum(tf.cast(preprocessor(x=chunk)["padding_mask"], tf.int32)))
        return total

    if args.mode == "infer":
        classifier.compile(jit_compile=bool(args.jit))
        texts_a, texts_b, _ = read_glue(args.data, args.task, "dev")
        n = args.limit or len(texts_a)
        a, b = texts_a[:n], texts_b[:n] if texts_b else None
        if args.batch == 1:
            requests = [inputs([a[i]], [b[i]] if b else None) for i in range(n)]

            def one_pass(latencies):
                for x in requests:
                    t = time.perf_counter()
                    np.asarray(classifier.predict_on_batch(x))
                    latencies.append(time.perf_counter() - t)

            api = "predict_on_batch([text]) per request (preprocessor + compiled predict)"
        else:

            def one_pass(latencies):
                classifier.predict(inputs(a, b), batch_size=args.batch, verbose=0)

            api = "predict(list of strings, batch_size) (tf.data + preprocessor map)"
        start = time.perf_counter()
        one_pass([])
        first = time.perf_counter() - start
        passes, latencies = [], []
        for _ in range(args.reps):
            start = time.perf_counter()
            one_pass(latencies)
            passes.append(time.perf_counter() - start)
        computed, present = n * args.seq, present_tokens(a, b)
        result.update(api=api, examples=n, warmup_pass_s=round(first, 3))
    else:
        texts_a, texts_b, targets = read_glue(args.data, args.task, "train")
        total, keep, order = train_order(args, len(texts_a))
        order = [order[j % len(order)] for j in range(args.batch * total)]  # cycle if short
        a = [texts_a[i] for i in order]
        b = [texts_b[i] for i in order] if texts_b else None
        y = np.array([targets[i] for i in order], np.float32 if regression else np.int32)
        classifier.compile(
            optimizer=keras.optimizers.AdamW(2e-5),
            **({"loss": keras.losses.MeanSquaredError(), "metrics": []} if regression else {}),
            jit_compile=bool(args.jit),
        )
        stamps, losses = [], []

        class Stamp(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                stamps.append(time.perf_counter())
                losses.append(float(logs["loss"]))

        start = time.perf_counter()
        classifier.fit(
            inputs(a, b),
            y[:, None] if regression else y,
            batch_size=args.batch,
            steps_per_epoch=total,
            epochs=1,
            verbose=0,
            callbacks=[Stamp()],
        )
        if len(stamps) != total:
            sys.exit(f"fit ran {len(stamps)} steps, expected {total}")
        ends = stamps[args.warmup - 1 :] if args.warmup else [start] + stamps
        passes = [ends[(r + 1) * args.steps] - ends[r * args.steps] for r in range(args.reps)]
        latencies = []
        n = args.batch * args.steps
        timed = slice(args.batch * args.warmup, args.batch * total)
        computed = args.batch * args.reps * args.steps * args.seq
        present = present_tokens(a[timed], b[timed] if b else None)
        result.update(
            api="fit(texts, labels, batch_size, steps_per_epoch) after "
            "compile(AdamW(2e-5), jit_compile)",
            examples=len(keep),
            warmup_steps=args.warmup,
            steps_per_rep=args.steps,
            warmup_s=round((ends[0] - start), 3),
            loss_first_last=[round(losses[0], 4), round(losses[-1], 4)],
        )
    finish(result, args, n, passes, latencies, computed, present)


if __name__ == "__main__":
    main()
