"""How fast the live calculators start and recompute, measured in headless chromium, offline.

    .venv/bin/python scripts/measure_live.py [SITE] [--updates N] [--repeat N] [--private]    # SITE: _build/html

About 7 minutes with the defaults (3 start-ups, 40 recomputes per calculator; 6 min 48 s on the 2-core machine).

Serves the built book on 127.0.0.1 and prints the figures below, each browser a fresh profile, as a reader's own
browser keeps one (its caches on disk), or with ``--private`` fresh contexts of one browser, as private windows,
where the browser keeps no compiled WebAssembly code between pages (so a restored page's first recomputes run
before V8 has optimised the runtime's code again):

* the floor: the bare Pyodide runtime started in a blank page of a fresh browser (cold cache);
* the first live calculator: in another fresh browser, a chapter is opened and "Run live" clicked; the
  time from the click to the live widget (the page's own clock, ``data-ready-ms``), its start-up steps
  (the worker's own clock), and the bytes it downloaded; then a second calculator on another page of the
  same browser (its files in the browser's cache), from its click. Both are repeated (``--repeat``),
  alternating with the floor, and the medians compared;
* each calculator's recompute on the page's own clock: every calculator the book offers live is started on
  its own page by its own "Run live" (a reader's page, restoring the first page's snapshot), then one of
  its controls is set N times to a new valid value (the control and values ``scripts/benchmark.py``'s
  UPDATES uses in CPython), the first ``--pause`` seconds (0: at once) after it went live, through the widget's model as
  the control's view does; each time is from the change to the last change of the calculator's live area (a
  MutationObserver), once it has been quiet for 0.4 s; beside it, the part Python took (the worker's clock
  around handling the change).

Requests that would leave 127.0.0.1 are blocked and counted. Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import socketserver
import statistics
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).parent))
from serve import CHROMIUM, CHROMIUM_FLAGS, Handler, live_cells

ROOT = Path(__file__).resolve().parents[1]

BARE_PYODIDE_JS = """async (root) => {
  const t0 = performance.now();
  const { loadPyodide } = await import(root + '/lite/pyodide/pyodide.mjs');
  await loadPyodide({ indexURL: root + '/lite/pyodide/' });
  return (performance.now() - t0) / 1000;
}"""

# Set a control (found by its description among the page's widget models) to each value in turn; time each
# from the change to the page's last DOM change, once quiet for `quiet` ms.
UPDATE_JS = """async ([el, description, values, quiet]) => {
  const manager = await window.llmcourseLive.manager();
  const models = await Promise.all(Object.values(manager._models));
  const out = document.querySelector(el);
  const control = models.filter((m) => m.get('description') === description && 'value' in m.attributes).pop();
  if (!control) return { error: `no control "${description}"` };
  const times = [], python = [];
  for (const value of values) {
    const handled = window.llmcourseLive.pythonMs.length;
    let last = null;
    const obs = new MutationObserver(() => { last = performance.now(); });
    obs.observe(out, { childList: true, subtree: true, characterData: true, attributes: true });
    const t0 = performance.now();
    control.set('value', value);
    control.save_changes();
    await new Promise((resolve) => {
      const check = () => (last !== null && performance.now() - last > quiet) || performance.now() - t0 > 30000
        ? resolve() : setTimeout(check, 20);
      setTimeout(check, 20);
    });
    obs.disconnect();
    times.push(last === null ? null : last - t0);
    python.push(window.llmcourseLive.pythonMs.slice(handled).reduce((a, b) => a + b, 0));
  }
  return { times, python };
}"""


def serve(site: Path) -> tuple[socketserver.TCPServer, str, list[int]]:
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
    return srv, f"http://127.0.0.1:{srv.server_address[1]}", served


def _count(nbytes: dict[str, int], response) -> None:
    """Bytes of each response, by URL (a file seen twice is counted once)."""
    nbytes[response.url.split("?")[0]] = int(response.headers.get("content-length") or 0)


def updates() -> dict[str, tuple[str, list[object]]]:
    """Per calculator factory name: the description of the control benchmark.py changes, and its values."""
    import benchmark

    out = {}
    for name, calc in benchmark.calculators():
        key, value = benchmark._update_control(name, calc)
        if key is None:
            continue
        out[name.split(".")[-1]] = (calc.controls[key].description, value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    ap.add_argument(
        "--updates",
        type=int,
        default=40,
        help="recomputes timed per calculator (40: the p95 is the third slowest; of 20 it would be the second, "
        "one busy moment of the machine away from the slowest)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="start-ups timed (each in fresh browsers)")
    ap.add_argument(
        "--pause",
        type=float,
        default=0.0,
        help="seconds from a calculator going live to its first change (a reader's hand reaching the control; "
        "0, the worst case: at once)",
    )
    ap.add_argument("--only", nargs="*", default=[], help="recompute only the calculators whose names contain one")
    ap.add_argument("--verbose", action="store_true", help="print each recompute's time and Python's part")
    ap.add_argument(
        "--private", action="store_true", help="fresh contexts of one browser, as private windows (see context())"
    )
    args = ap.parse_args()
    site = Path(args.site)
    srv, base, served = serve(site)
    external: list[str] = []
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    lite = sum(f.stat().st_size for f in (site / "lite").rglob("*") if f.is_file())
    print(f"site: {size / 1e6:.1f} MB, of which the live runtime (lite/) {lite / 1e6:.1f} MB")
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profiles:
        browser = None if not args.private else p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)

        def context():
            """A fresh browser profile, as a reader's own browser keeps it (its caches on disk: the HTTP cache,
            and V8's cache of the runtime's compiled and optimised WebAssembly code), or with ``--private`` a
            fresh context of one browser, as a private window (caches in memory; V8 keeps no compiled code)."""
            if browser is None:
                c = p.chromium.launch_persistent_context(
                    tempfile.mkdtemp(dir=profiles), executable_path=CHROMIUM, args=CHROMIUM_FLAGS
                )
            else:
                c = browser.new_context()
            c.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:")) else external.append(r.url))
            return c

        def start_live(c, path: str, i: int = 0):
            """Open ``path`` and press its ``i``-th "Run live": (page, seconds from the click, state)."""
            page = c.new_page()
            page.goto(f"{base}/{path}", wait_until="load")
            root = page.locator(".llmcourse-live").nth(i)
            root.locator(".llmcourse-live-run").click()
            page.wait_for_function("r => r.dataset.state !== 'starting'", arg=root.element_handle(), timeout=300_000)
            return page, int(root.get_attribute("data-ready-ms")) / 1000, root.get_attribute("data-state")

        bares, firsts, seconds = [], [], []
        for rep in range(args.repeat):  # alternated, so that a busy moment of the machine hits both
            page = context().new_page()
            page.goto(f"{base}/book/intro.html")
            bares.append(page.evaluate(BARE_PYODIDE_JS, base))
            page.context.close()
            c = context()
            nbytes: dict[str, int] = {}
            c.on("response", functools.partial(_count, nbytes))
            first, ready, state = start_live(c, "book/00_first_estimate.html")
            firsts.append(ready)
            steps = first.evaluate("window.llmcourseLive.steps")
            # the first page keeps a snapshot of its started runtime for other pages, after it is ready
            try:
                first.wait_for_function("window.llmcourseLive.snapshot.bytes > 0", timeout=30_000)
                kept = first.evaluate("window.llmcourseLive.snapshot.bytes") / 1e6
            except Exception:
                kept = 0.0
            served[0] = 0
            second, ready2, state2 = start_live(c, "book/10_queueing.html")
            seconds.append(ready2)
            second.close()
            print(
                f"run {rep + 1}: bare Pyodide start {bares[-1]:.2f} s (blank page, fresh context); first live "
                f"calculator {ready:.2f} s from its click ({state}; "
                + ", ".join(f"{name} {secs:.2f} s" for name, secs in steps)
                + f"; {sum(nbytes.values()) / 1e6:.1f} MB in {len(nbytes)} files); a second one on another page "
                f"{ready2:.2f} s ({state2}; the server sent {served[0] / 1e6:.1f} MB; "
                + (f"restored from the first's {kept:.0f} MB snapshot" if kept else "no snapshot kept")
                + ")"
            )
            if rep < args.repeat - 1:
                c.close()
        bare, ready, ready2 = (statistics.median(x) for x in (bares, firsts, seconds))
        print(f"median of {args.repeat}: bare Pyodide start {bare:.2f} s")
        print(f"  first live calculator, from its click: {ready:.2f} s = {ready / bare:.2f}x the bare start")
        print(
            f"  second live calculator, another page, same browser: {ready2:.2f} s = {ready2 / bare:.2f}x the bare "
            f"start, {ready2 / ready:.2f}x the first"
        )

        print(f"recompute on the page's clock, change -> last DOM change ({args.updates} per calculator, ms):")
        plan = updates()
        for path, i, code in live_cells(site):
            found = re.findall(r"(\w+_calculator)\(", code)
            if not found or found[-1] not in plan:
                print(f"  {path}: no update defined for {found}")
                continue
            if args.only and not any(name in found[-1] for name in args.only):
                continue
            description, value = plan[found[-1]]
            # on its own page, started by its own "Run live" (from the first page's snapshot), as a reader has it
            page, _ready, state = start_live(c, path, i)
            root = page.locator(".llmcourse-live").nth(i)
            if state != "live":
                print(f"  {found[-1]}: failed: {root.inner_text()[:300]}")
                page.close()
                continue
            el = f"live-measure-{i}"
            # the calculator's live area (not the cell's code block, whose tabindex the theme sets after a layout)
            root.evaluate(
                "(r, id) => { r.closest('.llmcourse-live-cell').querySelector('.llmcourse-live-output').id = id; }", el
            )
            values = [value(k + 1) for k in range(args.updates)]
            page.wait_for_timeout(args.pause * 1000)  # a reader's hand reaching the control
            got = page.evaluate(UPDATE_JS, [f"#{el}", description, values, 400])
            page.close()
            if "error" in got:
                print(f"  {found[-1]}: {got['error']}")
                continue
            times = [t for t in got["times"] if t is not None]
            p95 = sorted(times)[max(0, round(0.95 * len(times)) - 1)] if times else float("nan")
            med = statistics.median(times) if times else float("nan")
            py = statistics.median(got["python"])
            print(
                f"  {found[-1]:32s} median {med:6.1f}  p95 {p95:6.1f}  of which Python (median) {py:6.1f}  "
                f"({description!r}; {len(times)}/{len(values)} changed the page)"
            )
            if args.verbose:
                each = zip(got["times"], got["python"], strict=True)  # a time is None where the page did not change
                print(
                    "    each (ms, Python):", " ".join(f"{'-' if t is None else f'{t:.0f}'}/{q:.0f}" for t, q in each)
                )
        c.close()
        if browser is not None:
            browser.close()
    print(json.dumps({"requests_leaving_127.0.0.1": len(external)}))
    srv.shutdown()


if __name__ == "__main__":
    main()
