"""Serve the built book on 127.0.0.1 (what `make serve` runs): `serve.py [--port 8000] [DIR]`.

Like ``python -m http.server`` but with the MIME types the live calculators need whatever the
machine's /etc/mime.types says (a browser refuses ``.mjs`` modules and streams ``.wasm`` only when
they come with the right type). A live calculator needs http, not file://.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html
import http.server
import json
import re
from pathlib import Path

TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".whl": "application/zip",
}


#: Debian's chromium, and the flags the browser tests and scripts/measure_live.py start it with: headless,
#: and with no background requests (on a closed network they fail, many at a time).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


#: a calculator the built book offers to run live: its "Run live" area, with the cell's code (JSON, HTML-escaped)
LIVE_CELL = re.compile(r'<div class="llmcourse-live"[^>]*data-code="([^"]*)"')


def live_cells(site: Path) -> list[tuple[str, int, str]]:
    """(page, index on the page, code) of every calculator the book built at ``site`` offers to run live."""
    out = []
    for path in sorted(site.rglob("*.html")):
        codes = LIVE_CELL.findall(path.read_text(encoding="utf-8"))
        out += [(path.relative_to(site).as_posix(), i, json.loads(html.unescape(c))) for i, c in enumerate(codes)]
    return out


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}  # noqa: RUF012


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("directory", nargs="?", default="_build/html")
    args = ap.parse_args()
    root = Path(args.directory)
    if not (root / "index.html").exists():
        raise SystemExit(f"no built book in {root}: run `make book-only` first")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), functools.partial(Handler, directory=str(root)))
    print(f"Serving the book at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
