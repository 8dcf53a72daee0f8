"""One `LiteModel` shared by 8 threads answers every call exactly as the same calls made
one at a time (L03 / L04: the interpreter's input tensors were shared with no lock, so
concurrent calls got other requests' rows, reshape errors, or a segmentation fault). The
text-in classifier file (tensorflow-text's ops in the file) and a long-document file that
takes ids (the runner tokenizes and windows in Python, then calls the file per batch)."""

import random
import threading

import numpy as np
import pytest

from tests.serving.test_export import _finetuned, spm  # noqa: F401  (spm: a fixture)

THREADS, CALLS = 8, 6
WORDS = (
    "the people of this nation have chosen a new government and its first duty is to "
    "keep faith with those who sent it here under a constitution older than any of us"
).split()


def _texts(n=24):
    r = random.Random(0)
    return [" ".join(r.choice(WORDS) for _ in range(r.choice([1, 3, 8, 20, 40]))) for _ in range(n)]


def _shared_calls(call, texts):
    """(reference, answers): each thread's batches answered one call at a time first, then
    by THREADS threads at once, all on one object; errors are collected, not raised."""
    plans = []
    for seed in range(THREADS):
        r = random.Random(seed)
        plans.append([r.sample(range(len(texts)), r.choice([1, 2, 5, 9])) for _ in range(CALLS)])
    reference = [[call([texts[i] for i in batch]) for batch in plan] for plan in plans]
    answers, errors = [[None] * CALLS for _ in range(THREADS)], []
    start = threading.Barrier(THREADS)

    def worker(t):
        start.wait()
        for c, batch in enumerate(plans[t]):
            try:
                answers[t][c] = call([texts[i] for i in batch])
            except Exception as e:  # noqa: BLE001  (counted: the test shows them all)
                errors.append(repr(e)[:160])

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return reference, answers, errors


def _lite(tmp_path, spm, **task):  # noqa: F811
    from albert_tf.serving.export import export_tflite
    from albert_tf.serving.tflite_predict import LiteModel

    _, directory = _finetuned(tmp_path, spm, **task)
    (path,) = [
        p
        for p in export_tflite("classifier", directory, str(tmp_path / "lite"))
        if p.endswith("float32.tflite")
    ]
    return LiteModel(path, num_threads=1)


@pytest.mark.parametrize(
    "task",
    [{}, {"max_seq_length": 16, "doc_stride": 8, "max_windows": 64}],
    ids=["text-in", "windows-of-ids"],
)
def test_one_model_shared_by_8_threads_answers_as_one_at_a_time(tmp_path, spm, task):  # noqa: F811
    model = _lite(tmp_path, spm, **task)
    texts = _texts()
    call = lambda batch: model.classify(batch)["probabilities"]  # noqa: E731
    one = np.concatenate([call([t]) for t in texts])[:, 1]
    assert len(np.unique(one)) > len(texts) // 2  # the texts' answers tell them apart
    reference, answers, errors = _shared_calls(call, texts)
    assert errors == []
    differ = sum(
        not np.array_equal(a, r) for ta, tr in zip(answers, reference) for a, r in zip(ta, tr)
    )
    assert differ == 0, f"{differ} of {THREADS * CALLS} calls differ"
