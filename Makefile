# The two commands of README.md. Each sets up what it needs first (idempotent).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: setup book book-only serve test lint bench clean

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

## Build the book (executing every chapter; warnings are errors), then serve it on 127.0.0.1.
book: book-only serve

book-only: setup
	time $(VENV)/bin/jupyter-book build . -W --keep-going
	@echo "Built: $(CURDIR)/_build/html/index.html"

serve:
	@echo "Serving the book at http://127.0.0.1:$(PORT)/ (Ctrl-C to stop)"
	$(PY) -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

## Lint, unit and property tests, doctests, and nbval over every chapter and exercise notebook.
test: setup
	bash scripts/test.sh

bench: setup
	$(PY) scripts/benchmark.py

clean:
	rm -rf _build _vendor
