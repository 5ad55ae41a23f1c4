#!/usr/bin/env bash
# The whole test suite: what `make test` and CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${VENV:-.venv}/bin
export MPLBACKEND=Agg PYTHONHASHSEED=0
start=$(date +%s)

echo "== ruff (lint and format)"
"$PY/ruff" check llmcourse tests scripts _ext
"$PY/ruff" format --check llmcourse tests scripts _ext

echo "== the book: live site (JupyterLite + Pyodide) and the HTML build, for the browser tests"
"$PY/python" scripts/build_lite.py
bash scripts/fresh_cache.sh
mkdir -p _build && log=_build/book-build.log
if ! "$PY/jupyter-book" build . -W --keep-going >"$log" 2>&1; then
  grep -E "WARNING|ERROR|Error|Traceback" "$log" | grep -v IPKernelApp || true
  echo "the book build failed (full log: $log)"
  exit 1
fi
grep -E "^live calculators|not available live" "$log" || true
export LLMCOURSE_REQUIRE_SITE=1  # tests/browser: a missing site or chromium is a failure, not a skip

echo "== notebooks for nbval (MyST -> ipynb with jupytext)"
out=_build/nbval
rm -rf "$out" && mkdir -p "$out/book" "$out/exercises"
for f in book/*.md; do
  head -3 "$f" | grep -q jupytext && "$PY/jupytext" --quiet --to ipynb --output "$out/book/$(basename "${f%.md}").ipynb" "$f"
done
shopt -s nullglob
for f in exercises/*.md exercises/*.ipynb; do
  "$PY/jupytext" --quiet --to ipynb --output "$out/exercises/$(basename "${f%.*}").ipynb" "$f"
done

echo "== pytest: unit, property and conformance tests, doctests, nbval, browser (headless chromium)"
"$PY/python" -m pytest tests --doctest-modules llmcourse --nbval-lax "$out" -p no:cacheprovider "$@"
echo "test time: $(( $(date +%s) - start )) s"
