# The two commands of README.md. Each sets up what it needs first (idempotent).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: setup lite browser-setup book book-only serve test lint bench exercises formulas-cache clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

_vendor/vendor/.installed: package.json package-lock.json scripts/vendor_js.sh
	bash scripts/vendor_js.sh
	touch $@

setup: $(VENV)/.installed _vendor/vendor/.installed

## The live calculators' in-browser Python (Pyodide and the wheels, served by the book): _build/lite.
## Downloads the pure-Python wheels once (PyPI); rebuilds only when the package or the config changed.
lite: setup
	$(PY) scripts/build_lite.py

## Debian's chromium for the browser tests (Playwright drives it; never `playwright install`).
browser-setup:
	@test -x /usr/bin/chromium || { apt-get update -qq && apt-get install -y -qq chromium; }

## Build the book (executing every chapter; warnings are errors), then serve it on 127.0.0.1.
## A live calculator needs http (not file://): open the printed address.
book: book-only serve

book-only: setup lite
	bash scripts/fresh_cache.sh
	$(PY) scripts/execute_book.py 2>&1 | grep -v "IPKernelApp"
	time $(VENV)/bin/jupyter-book build . -W --keep-going
	@echo "Built: $(CURDIR)/_build/html/index.html"

serve:
	$(PY) scripts/serve.py --port $(PORT) _build/html

## Lint; build the book; unit and property tests, doctests, nbval over every chapter and exercise
## notebook, and the browser tests of the built book (headless chromium, offline, live calculators).
test: setup lite browser-setup
	bash scripts/test.sh

## Regenerate the auto-checked exercise notebooks (exercises/*.md) from llmcourse/exercises/defs_*.py.
exercises: setup
	$(PY) -m llmcourse.exercises.notebooks

## Regenerate llmcourse/formulas/cache.py (SymPy's results and lambdify's code for the formulas) after changing a
## formula or a derivation; tests/test_formulas_cache.py fails while it is stale.
formulas-cache: setup
	$(PY) scripts/build_formulas_cache.py

bench: setup
	$(PY) scripts/benchmark.py

clean:
	rm -rf _build _vendor
