"""Shared fixtures (the helpers themselves live in tests/support/harness.py)."""

import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# A suite started in the background (`nohup make test &`, a job without a terminal) inherits
# SIGINT ignored, and an exec'd child keeps an ignored signal: the Ctrl-C tests' runners
# would then never see their SIGINT. A handled signal is reset to its default at exec, so
# the runners start as a terminal's foreground job does, wherever the suite runs.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import pytest

from tests.support.harness import SHARED_DATA
from tests.support.tiers import PhaseCpuTime, UnitDurations, charge_to_harness, mark_tiers


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the markers given here
def pytest_collection_modifyitems(config, items):
    """Every test gets its cost tier (tests/support/tiers.py) from what it uses."""
    mark_tiers(items)


def pytest_configure(config):
    """`-m unit` (make test-fast): the unit tier's CPU time per test is measured (in each
    worker, where the tests run) and checked (where the reports arrive)."""
    if (config.option.markexpr or "").strip() == "unit":
        config.pluginmanager.register(PhaseCpuTime(), "phase_cpu_time")
        config.pluginmanager.register(UnitDurations(), "unit_durations")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    durations = session.config.pluginmanager.get_plugin("unit_durations")
    if durations is not None and durations.verdict() and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    durations = config.pluginmanager.get_plugin("unit_durations")
    if durations is not None and durations.verdict():
        terminalreporter.section("unit tests over budget")
        for line in durations.verdict():
            terminalreporter.write_line(line)


@pytest.fixture
def shared_data():
    """../shared/data, or skip: a user's fresh clone has no ../shared."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tok():
    """The German ALBERT SentencePiece model of ../shared/data (lower-cased), or skip."""
    from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

    path = SHARED_DATA / "spm" / "de-30k-clean.model"
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    return AlbertTokenizer(str(path))


@pytest.fixture(autouse=True, scope="module")
def _collect_per_file():
    """Garbage collection at file granularity. At a file's start a collection frees the
    previous file's cycles (and their traced functions from TensorFlow's function library),
    then what survives is frozen for the rest of the worker's life (gc.freeze): every later
    collection — this one at the next file's start, `run_command`'s after each command —
    walks only what was created since, never the whole heap of a worker that has run
    hundreds of tests (4-40 s per collection measured there). The price: a cycle that
    reaches a frozen object is never freed (memory only)."""
    import gc
    import time

    start = time.process_time()
    gc.collect()
    gc.freeze()
    charge_to_harness(time.process_time() - start)


@pytest.fixture(autouse=True)
def _float32_policy():
    """Tests that switch Keras to mixed precision must not leak it into others."""
    import keras

    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="session")
def wordpiece_vocab(tmp_path_factory):
    """A 21,128-entry WordPiece vocab.txt like the official Chinese one, learned from the zh
    and en corpora of the real data by tests/support/wordpiece_reference.py:build_vocab (as
    tests/data_pipeline/tokenization/test_wordpiece.py's), or skip."""
    from tests.support import wordpiece_reference

    if not (SHARED_DATA / "corpus").is_dir():
        pytest.skip(f"real data not available: {SHARED_DATA} is absent")
    path = tmp_path_factory.mktemp("wordpiece-vocab") / "vocab.txt"
    files = [f for fs in wordpiece_reference.corpus_files(str(SHARED_DATA)).values() for f in fs]
    wordpiece_reference.build_vocab(files, str(path))
    return str(path)
