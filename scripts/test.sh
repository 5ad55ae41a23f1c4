#!/usr/bin/env bash
# The whole test suite: what `make test` and CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${VENV:-.venv}/bin
export PYTHONHASHSEED=0
start=$(date +%s)
last=$start
phase() { # how long the step since the last one took
  local now
  now=$(date +%s)
  echo "-- $1: $((now - last)) s"
  last=$now
}

echo "== ruff (lint and format)"
"$PY/ruff" check llmcourse tests scripts _ext
"$PY/ruff" format --check llmcourse tests scripts _ext
phase "ruff"

echo "== the floors of the package (import-linter: .importlinter)"
"$PY/lint-imports" --no-cache
phase "lint-imports"

echo "== the book: live runtime (Pyodide and the wheels) and the HTML build, for the browser tests"
"$PY/python" scripts/build_lite.py
bash scripts/fresh_cache.sh
# the notebooks two at a time into the build's cache (the build executes one at a time); the kernels' start-up
# warning, which the build's log holds, is left out here
"$PY/python" scripts/execute_book.py 2>&1 | grep -v "IPKernelApp"
mkdir -p _build && log=_build/book-build.log
if ! "$PY/jupyter-book" build . -W --keep-going >"$log" 2>&1; then
  grep -E "WARNING|ERROR|Error|Traceback" "$log" | grep -v IPKernelApp || true
  echo "the book build failed (full log: $log)"
  exit 1
fi
grep -E "^live calculators|not available live" "$log" || true
echo "notebooks the build executed itself (not found in the cache): $(grep -c "Executing notebook" "$log" || true)"
phase "the book (live site, HTML build)"
export LLMCOURSE_REQUIRE_SITE=1  # tests/browser: a missing site or chromium is a failure, not a skip

echo "== notebooks for nbval (MyST -> ipynb with jupytext, all in one process)"
out=_build/nbval
rm -rf "$out" && mkdir -p "$out/book" "$out/exercises"
"$PY/python" - "$out" <<'PY'
import sys
from pathlib import Path

import jupytext

out = Path(sys.argv[1])
chapters = [f for f in sorted(Path("book").glob("*.md")) if "jupytext" in "".join(f.read_text().splitlines(True)[:3])]
for f in [*chapters, *sorted(Path("exercises").glob("*.md")), *sorted(Path("exercises").glob("*.ipynb"))]:
    jupytext.write(jupytext.read(f), out / f.parent.name / f"{f.stem}.ipynb", fmt="ipynb")
PY
phase "the notebooks for nbval"

# Two workers, one per core (PYTEST_WORKERS=0: one process). --dist loadfile keeps a file's tests on one worker:
# a notebook's cells share its kernel, and the browser tests share one live Python (tests/browser/test_site.py).
# --no-loadscope-reorder hands the files out in collection order (xdist's default sorts them by their number of
# tests), which tests/conftest.py makes longest first: tests/browser (the longest file) starts at once on one
# worker, the files with tests marked slow on the other, and the short files fill in at the end.
# nbval checks each cell on the book build's own execution of it, when that is current (tests/conftest.py).
export MPLBACKEND=Agg  # pytest draws figures off screen; the book build above keeps the kernels' inline plots
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}  # the same examples at every run (tests/conftest.py)
echo "== pytest: unit, property and conformance tests, doctests, nbval, browser (headless chromium)"
workers=${PYTEST_WORKERS:-2}
parallel=()
if [ "$workers" != 0 ]; then parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder); fi
"$PY/python" -m pytest tests/browser tests --doctest-modules llmcourse --nbval-lax "$out" -p no:cacheprovider "${parallel[@]}" "$@"
phase "pytest"
echo "test time: $(($(date +%s) - start)) s"
