#!/usr/bin/env bash
# Copy the JavaScript the book's pages need from node_modules (npm ci) into _static/vendor,
# so the built site loads MathJax and the widget manager from itself, never from a CDN.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules/mathjax ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
fi
out=_vendor/vendor
rm -rf "$out"
mkdir -p "$out/mathjax" "$out/html-manager"
cp node_modules/mathjax/es5/tex-chtml.js "$out/mathjax/"
cp -r node_modules/mathjax/es5/input node_modules/mathjax/es5/output node_modules/mathjax/es5/a11y \
  node_modules/mathjax/es5/ui node_modules/mathjax/es5/adaptors "$out/mathjax/"
cp node_modules/@jupyter-widgets/html-manager/dist/embed-amd.js "$out/html-manager/"
find node_modules/@jupyter-widgets/html-manager/dist -maxdepth 1 \( -name "*.woff*" -o -name "*.ttf" -o -name "*.eot" -o -name "*.svg" \) -exec cp {} "$out/html-manager/" \;
cp node_modules/requirejs/require.js "$out/require.js"
echo "vendored JavaScript into $out ($(du -sh "$out" | cut -f1))"
