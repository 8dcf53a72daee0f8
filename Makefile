# The two commands: `make demo` and `make test`. Both install what they need into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The Beam writer's own environment (requirements-beam.txt says why it is separate).
BEAM_VENV := .venv-beam
# Model Garden's own environment for the reference models of tests/checkpoints/test_model_garden.py
# (requirements-modelgarden.txt says why it is separate and why tf-models-official is --no-deps).
MODEL_GARDEN_VENV := .venv-modelgarden
MODEL_GARDEN := tf-models-official==2.20.0
export TF_CPP_MIN_LOG_LEVEL ?= 2
export PYTHONHASHSEED ?= 0
# Test processes: one test file per worker at a time (pytest-xdist --dist loadfile, so a
# file's module fixtures are built once); each worker holds a TensorFlow of ~1-2 GB. Files
# are handed out costliest first, in the order tests/support/tiers.py gives them
# (--no-loadscope-reorder: xdist's own order, by number of tests, puts long files last).
# Three workers on two cores: a worker often waits (on a runner's process, a checkpoint, a
# file), and two left 15% of the cores idle; the whole suite on the 2-core machine took
# 1,241 s with 2 and 1,080 s with 3.
TEST_WORKERS ?= 3
# One TensorFlow intra-op thread per test process (TF_NUM_INTRAOP_THREADS; runners' processes
# inherit it): three workers each with a two-thread pool per op oversubscribe two cores, and
# the pools' threads spin waiting for each other's work. Three files that start processes,
# train and export (run_classifier, what_is_served, onnx) took 238 and 222 s with the default
# pools and 198 s with one thread.
TEST_THREADS ?= 1

.PHONY: install install-dev install-beam install-modelgarden demo test test-fast lint format bench bench-model bench-data bench-train bench-serving clean

install: $(VENV)/.runtime-installed
install-dev: $(VENV)/.dev-installed
install-beam: $(BEAM_VENV)/.installed
install-modelgarden: $(MODEL_GARDEN_VENV)/.installed

$(VENV)/.runtime-installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt $(VENV)/.runtime-installed
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

$(BEAM_VENV)/.installed: requirements-beam.txt
	test -x $(BEAM_VENV)/bin/python || $(PYTHON) -m venv $(BEAM_VENV)
	$(BEAM_VENV)/bin/python -m pip install -q --upgrade pip
	$(BEAM_VENV)/bin/python -m pip install -q -r requirements-beam.txt
	touch $@

$(MODEL_GARDEN_VENV)/.installed: requirements-modelgarden.txt
	test -x $(MODEL_GARDEN_VENV)/bin/python || $(PYTHON) -m venv $(MODEL_GARDEN_VENV)
	$(MODEL_GARDEN_VENV)/bin/python -m pip install -q --upgrade pip
	$(MODEL_GARDEN_VENV)/bin/python -m pip install -q -r requirements-modelgarden.txt
	$(MODEL_GARDEN_VENV)/bin/python -m pip install -q --no-deps $(MODEL_GARDEN)
	touch $@

demo: install
	$(PY) -m albert_tf.tools.demo

test: install-dev install-beam install-modelgarden
	TF_NUM_INTRAOP_THREADS=$(TEST_THREADS) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=20 tests

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The unit tier (tests/support/tiers.py): in-process, tiny configs, no conversion; a unit test
# over its time budget fails the run.
test-fast: install-dev
	TF_NUM_INTRAOP_THREADS=$(TEST_THREADS) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m unit --durations=10 tests

bench: bench-model bench-data bench-train bench-serving

bench-model: install
	$(PY) -m bench.model

bench-data: install
	$(PY) -m bench.pretraining_data

bench-train: install
	$(PY) -m bench.train

bench-serving: install
	$(PY) -m bench.serving

clean:
	rm -rf $(VENV) $(BEAM_VENV) $(MODEL_GARDEN_VENV) .pytest_cache *.egg-info
