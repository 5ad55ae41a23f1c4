#!/usr/bin/env bash
# Build only some pages of the book into a private folder (for authors working in parallel):
#   scripts/build_part.sh NAME book/05_decode.md [book/06_prefill.md ...]
# Writes /tmp/llmcourse-part-NAME/_build/html; warnings are errors, as in the full build.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1; shift
dir=/tmp/llmcourse-part-$name
mkdir -p "$dir"
{
  echo "format: jb-book"
  echo "root: book/intro"
  echo "chapters:"
  for f in "$@"; do echo "  - file: ${f%.*}"; done
} > "$dir/_toc.yml"
# The copy lives in /tmp: paths relative to the repository become absolute.
sed -e "s#cache: \"_build/.jupyter_cache\"#cache: \"$dir/cache\"#" \
    -e "s#: _ext\$#: $PWD/_ext#" -e "s#live_lite_dir: _build/lite#live_lite_dir: $PWD/_build/lite#" \
    _config.yml > "$dir/_config.yml"
.venv/bin/jupyter-book build . --toc "$dir/_toc.yml" --config "$dir/_config.yml" --path-output "$dir" -W --keep-going 2>&1 \
  | grep -v -E "IPKernelApp|^\s*$" | grep -v NbParserConfig | grep -E "WARNING|ERROR|Error|succeeded|Traceback" || true
test -f "$dir/_build/html/index.html" && echo "built: $dir/_build/html"
