#!/usr/bin/env bash
# The book's execution cache is keyed on each chapter's own text: a change to the package (a formula,
# a catalog row) would leave old numbers in unchanged chapters. When the package, its data or the
# book config changed since the last build, drop the cache and Sphinx's saved state.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=_build/.package-hash
hash=$(find llmcourse -type f \( -name "*.py" -o -name "*.csv" -o -name "*.json" -o -name "*.md" \) -print0 | sort -z | xargs -0 cat _config.yml _toc.yml \
  | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
  exit 0
fi
rm -rf _build/.jupyter_cache _build/.doctrees _build/html
mkdir -p _build && echo "$hash" > "$stamp"
echo "package or config changed: the book is rebuilt and re-executed from scratch"
