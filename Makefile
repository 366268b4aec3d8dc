# Two commands do everything on a fresh machine:
#   make demo   - set up .venv, install biasamp_nb with its core dependencies only, run `biasamp demo` (reports/demo/)
#   make test   - set up .venv, install biasamp_nb with its extras, run every notebook and the tests
# Both install the versions pinned in requirements-lock.txt (pip constraints). `make test-latest` runs the
# suite against the newest releases in .venv-latest; `make lock` rewrites the lock from a fresh resolve.
PYTHON ?= python3
LOCK   := requirements-lock.txt
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORE   := $(VENV)/.installed-core
DOCS   := $(VENV)/.installed-notebooks

.PHONY: demo test lint test-latest lock bench studies export clean-nbs readme docs-proc docs-preview chromium
.DEFAULT_GOAL := test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade -c $(LOCK) pip
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e ".[dev,train,scale,fast]"
	touch $(STAMP)

# the demo needs the package and its core dependencies, nothing from the extras (no torch, JupyterLab or browser)
$(CORE): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade -c $(LOCK) pip
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e .
	touch $(CORE)

demo: $(CORE)
	MPLBACKEND=Agg $(BIN)/biasamp demo

# two worker processes (pytest-xdist), one per core here; the docs tests, which share one built site, stay on one
# (tests/conftest.py)
test: lint chromium
	MPLBACKEND=Agg $(BIN)/python -m pytest -n 2 --durations=30 tests

# rewrite the committed study tables in data/results/ by running the pages' slow cells (hours on a CPU; one page with
# NB=nbs/17_caption_leakage.ipynb); run by hand, those cells write to a cache folder instead (files.study_file)
NB ?= nbs
studies: $(STAMP)
	BIASAMP_RESULTS=$(CURDIR)/data/results MPLBACKEND=Agg $(BIN)/nbdev-test --flags slow --n-workers 1 $(NB)

# the linter's rules are in pyproject.toml ([tool.ruff]); .pre-commit-config.yaml runs the same check before a commit
lint: $(STAMP)
	$(BIN)/ruff check biasamp_nb tests bench tools

# the same suite against the newest releases that pyproject.toml's ranges allow (no lock)
test-latest: chromium
	rm -rf .venv-latest && $(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install --quiet --upgrade pip
	.venv-latest/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[dev,train,scale,fast]"
	.venv-latest/bin/python -m pip freeze --exclude-editable | grep -iE '^(numpy|pandas|scipy|scikit-learn|torch)=='
	MPLBACKEND=Agg .venv-latest/bin/python -m pytest -n 2 tests

# rewrite the lock from a fresh resolve of pyproject.toml's ranges (the CPU build of torch is pinned as torch==X)
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	.venv-lock/bin/python -m pip install --quiet -e ".[dev,train,scale,fast]"
	{ head -3 $(LOCK); .venv-lock/bin/python -m pip freeze --all --exclude-editable | grep -v '^biasamp' | \
	  sed 's/+cpu$$//'; } > $(LOCK).new && mv $(LOCK).new $(LOCK)
	rm -rf .venv-lock

# the documentation test opens every page in headless Chromium (Debian's package; needs root to install)
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium could not be installed here: the browser test will be skipped"

# the documentation needs the notebooks extra only (no PyTorch): pages that need it show their saved outputs
$(DOCS): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade -c $(LOCK) pip
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e ".[notebooks]"
	touch $(DOCS)

docs-preview: $(DOCS)
	$(BIN)/python tools/preview.py

# every hot path against its bound (the table the scale page shows), then the per-family benchmarks; the peer
# `bias-amplification` (torch) is installed for comparison, without its dependencies
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps -c $(LOCK) bias-amplification==0.2.1
	$(BIN)/python bench/bench_bounds.py --csv data/results/bench_bounds.csv
	for f in bench/bench_*.py; do [ $$f = bench/bench_bounds.py ] || $(BIN)/python $$f || exit 1; done

export: $(STAMP)
	$(BIN)/nbdev-export

clean-nbs: $(STAMP)
	$(BIN)/nbdev-clean

readme: $(STAMP)
	$(BIN)/python tools/make_readme.py

docs-proc: $(STAMP)
	$(BIN)/nbdev-proc-nbs
