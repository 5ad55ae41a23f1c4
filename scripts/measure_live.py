"""Where the live calculators' start-up time goes, measured in headless chromium, offline.

    .venv/bin/python scripts/measure_live.py [SITE]      # SITE defaults to _build/html

Serves the built book on 127.0.0.1 and, in a blank page of it, runs the same steps the live kernel
runs, timing each: load the Pyodide runtime, load the preloaded wheels (download and unpack), import
IPython (the kernel), import sympy, import pint, import llmcourse (which builds the pint registry and
the SymPy formulas), build a calculator and recompute it. Then it opens a chapter, clicks "Run live"
and times the first live widget, then a second one on another page in the same browser; and
prints the site's size and the bytes a first live start downloads. Requests that would leave 127.0.0.1 are blocked and counted.
"""

from __future__ import annotations

import functools
import json
import socketserver
import sys
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).parent))
from serve import CHROMIUM, CHROMIUM_FLAGS, Handler

ROOT = Path(__file__).resolve().parents[1]

STEPS_JS = """async (root) => {
  const t = [], mark = (name, t0) => t.push([name, (performance.now() - t0) / 1000]);
  const base = root + '/lite/pyodide/';
  const cfg = await (await fetch(root + '/lite/jupyter-lite.json')).json();
  const pkgs = cfg['jupyter-config-data'].litePluginSettings['@jupyterlite/pyodide-kernel-extension:kernel']
    .loadPyodideOptions.packages;
  let t0 = performance.now();
  const { loadPyodide } = await import(base + 'pyodide.mjs');
  const py = await loadPyodide({ indexURL: base });
  mark('Pyodide runtime (wasm + stdlib)', t0);
  t0 = performance.now(); await py.loadPackage(pkgs); mark(`load ${pkgs.length} preloaded wheels`, t0);
  const steps = [
    ['import IPython (the kernel)', 'import IPython'],
    ['import sympy', 'import sympy'],
    ['import pint', 'import pint'],
    ['pint registry: pint.UnitRegistry()', 'pint.UnitRegistry()'],
    ['import llmcourse (its registry, catalogs, formulas)', 'import llmcourse'],
    ['import ipywidgets', 'import ipywidgets'],
    ['build the first chapter calculator', 'from llmcourse.widgets.first_estimate import serving_plan_calculator as f\\nc = f()'],
    ['recompute it (a new prompt length)', 'c.set(prompt=3000)'],
  ];
  for (const [name, code] of steps) { t0 = performance.now(); py.runPython(code); mark(name, t0); }
  return t;
}"""


def main() -> None:
    site = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"

    served = [0]  # bytes the server sent (a file the browser had cached is not sent again)

    class Quiet(Handler):
        def log_message(self, *args: object) -> None:
            pass

        def copyfile(self, source, outputfile) -> None:
            start = source.tell()
            super().copyfile(source, outputfile)
            served[0] += source.tell() - start

    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    external: list[str] = []
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    lite = sum(f.stat().st_size for f in (site / "lite").rglob("*") if f.is_file())
    print(f"site: {size / 1e6:.1f} MB, of which the live site (lite/) {lite / 1e6:.1f} MB")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)

        def context():
            c = browser.new_context()
            c.route(
                "**/*",
                lambda r: (
                    r.continue_() if r.request.url.startswith(base) else (external.append(r.request.url), r.abort())
                ),
            )
            return c

        page = context().new_page()
        page.goto(f"{base}/book/intro.html")
        print("start-up steps in a blank page (s):")
        for name, secs in page.evaluate(STEPS_JS, base):
            print(f"  {secs:7.2f}  {name}")
        # Routing requests turns the browser's HTTP cache off (Playwright), so this context only
        # watches for requests leaving 127.0.0.1 (the machine is offline: they would fail anyway).
        c = browser.new_context()
        c.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:")) else external.append(r.url))
        nbytes: dict[str, int] = {}  # by URL: the service worker sees some responses a second time
        c.on("response", lambda r: nbytes.__setitem__(r.url.split("?")[0], int(r.headers.get("content-length") or 0)))

        def start_live(path: str) -> tuple[float, str | None]:
            """Open a chapter, click Run live, wait until its first calculator is live (or fails)."""
            page = c.new_page()
            t0 = time.monotonic()
            page.goto(f"{base}/{path}")
            page.locator(".llmcourse-live-run").first.click()
            page.wait_for_function(
                "document.querySelector('.llmcourse-live').dataset.state !== 'starting'", timeout=300_000
            )
            return time.monotonic() - t0, page.locator(".llmcourse-live").first.get_attribute("data-state")

        ready, state = start_live("book/00_first_estimate.html")
        print(
            f"first live widget after navigation: {ready:.1f} s ({state}); {len(nbytes)} files, "
            f"{sum(nbytes.values()) / 1e6:.1f} MB downloaded, of which"
        )
        kinds = {"Pyodide runtime": "/lite/pyodide/pyodide", "wheels": ".whl", "JupyterLite app (JS, CSS)": "/lite/"}
        left = dict(nbytes)
        for kind, key in kinds.items():
            mine = {u: n for u, n in left.items() if key in u}
            print(f"  {sum(mine.values()) / 1e6:5.1f} MB  {kind} ({len(mine)} files)")
            left = {u: n for u, n in left.items() if u not in mine}
        print(f"  {sum(left.values()) / 1e6:5.1f} MB  the book page itself ({len(left)} files)")
        # A reader who then starts a calculator on another page: same browser, files in its cache.
        served[0] = 0
        ready, state = start_live("book/10_queueing.html")
        print(
            f"next live widget, another page, same browser: {ready:.1f} s ({state}); "
            f"{served[0] / 1e6:.1f} MB sent by the server (the rest from the browser's cache)"
        )
        browser.close()
    print(json.dumps({"requests_leaving_127.0.0.1": len(external)}))
    srv.shutdown()


if __name__ == "__main__":
    main()
