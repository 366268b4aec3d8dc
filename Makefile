# Two commands do everything on a fresh machine:
#   make demo   - set up .venv, install biasamp_nb, run `biasamp demo` (report in reports/demo/)
#   make test   - set up .venv, install biasamp_nb with its extras, run every notebook and the tests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench export clean-nbs readme docs-proc docs-preview chromium
.DEFAULT_GOAL := test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,train,scale]"
	touch $(STAMP)

demo: $(STAMP)
	MPLBACKEND=Agg $(BIN)/biasamp demo

test: $(STAMP) chromium
	MPLBACKEND=Agg $(BIN)/python -m pytest tests

# the documentation test opens every page in headless Chromium (Debian's package; needs root to install)
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium could not be installed here: the browser test will be skipped"

docs-preview: $(STAMP)
	$(BIN)/python tools/preview.py

bench: $(STAMP)
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

export: $(STAMP)
	$(BIN)/nbdev-export

clean-nbs: $(STAMP)
	$(BIN)/nbdev-clean

readme: $(STAMP)
	$(BIN)/python tools/make_readme.py

docs-proc: $(STAMP)
	$(BIN)/nbdev-proc-nbs
