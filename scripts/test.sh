#!/usr/bin/env bash
# The whole test suite: what `make test` and CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${VENV:-.venv}/bin
export MPLBACKEND=Agg PYTHONHASHSEED=0
start=$(date +%s)

echo "== ruff (lint and format)"
"$PY/ruff" check llmcourse tests scripts
"$PY/ruff" format --check llmcourse tests scripts

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

echo "== pytest: unit, property and conformance tests, doctests, nbval"
"$PY/python" -m pytest tests --doctest-modules llmcourse --nbval-lax "$out" -p no:cacheprovider "$@"
echo "test time: $(( $(date +%s) - start )) s"
