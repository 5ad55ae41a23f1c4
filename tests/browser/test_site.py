"""The built book in a real headless browser (Debian's chromium driven by Playwright), offline.

The site (``_build/html``, or ``$LLMCOURSE_SITE``) is served on 127.0.0.1 on a free port. Every
request that would leave 127.0.0.1 is blocked and counted, and every page must load with none of
them, no failed request, no HTTP error and no script error; equations must be typeset by MathJax
and figures loaded. The slow tests start every calculator of the book live and compare the table
the browser computed (the real ``llmcourse`` under Pyodide) with what the same cell computes here in
CPython; on three chapters they also change an input and compare again (the queueing one re-runs
its seeded simulation of 10,000 requests in the browser).

Run after building the book: ``scripts/test.sh`` builds it first. Without a built site or without
``/usr/bin/chromium`` these tests are skipped, unless ``LLMCOURSE_REQUIRE_SITE=1`` (set by
``scripts/test.sh``), which turns that into a failure.
"""

from __future__ import annotations

import ast
import functools
import html
import json
import os
import re
import socketserver
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("LLMCOURSE_SITE", ROOT / "_build" / "html"))
sys.path.insert(0, str(ROOT / "scripts"))
from serve import CHROMIUM, CHROMIUM_FLAGS, Handler  # noqa: E402 (the server `make book` uses, the same flags)

REQUIRED = os.environ.get("LLMCOURSE_REQUIRE_SITE") == "1"
LIVE_TIMEOUT_MS = 240_000

pytestmark = pytest.mark.browser
TIMINGS: dict[str, float] = {}


def _missing() -> str | None:
    if not (SITE / "index.html").exists():
        return f"no built book at {SITE} (run `make book-only`)"
    if not Path(CHROMIUM).exists():
        return f"no {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


def _skip_or_fail() -> None:
    why = _missing()
    if why:
        if REQUIRED:
            pytest.fail(why)
        pytest.skip(why)


def pages() -> list[str]:
    """Every HTML page of the book (not the live site's own app pages)."""
    if not SITE.exists():
        return []
    return sorted(
        str(p.relative_to(SITE))
        for p in SITE.rglob("*.html")
        if p.relative_to(SITE).parts[0] not in ("lite", "_static", "_sources", "_images")
    )


class _Handler(Handler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    _skip_or_fail()
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(SITE)))
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


class Watch:
    """Blocks and records every request that leaves the server; records failures and script errors."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.external: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []

    def route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(self.base + "/") or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def attach(self, context: Any) -> None:
        context.route("**/*", self.route)
        context.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        context.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url} (HTTP {r.status})"))

    def page(self, page: Any) -> Any:
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text[:300]}"))
        return page


@pytest.fixture(scope="session")
def browser(server: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture
def watch(browser: Any, server: str) -> Iterator[tuple[Any, Watch]]:
    context = browser.new_context()
    w = Watch(server)
    w.attach(context)
    yield context, w
    context.close()


def test_site_has_pages() -> None:
    _skip_or_fail()
    found = pages()
    assert "index.html" in found and any(p.startswith("book/") for p in found), found
    assert (SITE / "lite" / "repl" / "index.html").exists(), "the live site (lite/) is missing from the book"
    assert (SITE / "lite" / "pyodide" / "pyodide.asm.wasm").exists(), "the Pyodide runtime is not served locally"
    # lab extensions the live REPL does not use are left out of the site (scripts/build_lite.py)
    assert not (SITE / "lite" / "extensions" / "jupyterlab-jupytext").exists()
    assert "jupyterlab-jupytext" not in (SITE / "lite" / "jupyter-lite.json").read_text()


@pytest.mark.parametrize("path", pages() or ["index.html"])
def test_page_loads_offline(watch: tuple[Any, Watch], server: str, path: str) -> None:
    context, w = watch
    page = w.page(context.new_page())
    page.goto(f"{server}/{path}", wait_until="load")
    page.wait_for_load_state("networkidle")
    source = (SITE / path).read_text(encoding="utf-8")
    if re.search(r'class="math[^"]*"', source):
        page.wait_for_selector("mjx-container", state="attached", timeout=20_000)
        assert page.locator(".math mjx-container, mjx-container").count() >= 1
        # no equation left as raw TeX
        raw = page.evaluate("""() => [...document.querySelectorAll('span.math, div.math')]
                                      .filter(e => !e.querySelector('mjx-container')).length""")
        assert raw == 0, f"{raw} equations not typeset on {path}"
    figures = re.findall(r'<img[^>]+src="([^"]+\.(?:png|svg|jpg))"', source)
    if figures:
        broken = page.evaluate("""() => [...document.querySelectorAll('img')]
                                         .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)""")
        assert page.locator("img").count() >= len(figures) and not broken, broken
    live = page.locator(".llmcourse-live")
    for i in range(live.count()):
        # every calculator snapshot says it is one, and offers to run live or says why it cannot
        root, text = live.nth(i), live.nth(i).inner_text()
        assert "snapshot" in text.lower() and "do not recompute" in text
        # and every calculator can run live (the build labels one that cannot; none may)
        assert root.get_attribute("data-state") == "snapshot", text
        assert "Run live" in text, text
    # no widget snapshot without its label
    assert page.locator(".cell:has(script[type='application/vnd.jupyter.widget-view+json'])").count() == live.count()
    if live.count():
        # the build-time snapshot is rendered (by the widgets HTML manager) and marked as such
        page.wait_for_selector(".llmcourse-snapshot .widget-vbox", state="attached", timeout=20_000)
    # the page names its icon, and the site serves it (so the browser's own /favicon.ico guess is not needed)
    icon = page.evaluate("async () => (await fetch(document.querySelector('link[rel=icon]').href)).status")
    assert icon == 200, icon
    page.wait_for_timeout(300)
    assert w.external == [], f"requests leaving 127.0.0.1 from {path}: {w.external}"
    assert w.failed == [], f"failed requests on {path}: {w.failed}"
    assert w.errors == [], f"script errors on {path}: {w.errors}"


def _result_rows(frame: Any) -> list[tuple[str, str]]:
    """The live calculator's result table, read in one step (it may be re-rendered at any moment)."""
    table = frame.locator(".jp-CodeConsole table.llmcourse-result").last
    rows = table.evaluate("t => [...t.rows].map(r => [...r.cells].map(c => c.innerText.trim()))")
    return [tuple(r) for r in rows]


def _start_live(
    context: Any, w: Watch, url: str, index: int = 0, shows: str = ".jp-CodeConsole table.llmcourse-result"
) -> tuple[Any, Any, float]:
    page = w.page(context.new_page())
    t0 = time.monotonic()
    page.goto(url, wait_until="load")
    root = page.locator(".llmcourse-live").nth(index)
    root.locator(".llmcourse-live-run").click()
    assert root.get_attribute("data-state") == "starting"
    page.wait_for_function(
        f"document.querySelectorAll('.llmcourse-live')[{index}].dataset.state !== 'starting'", timeout=LIVE_TIMEOUT_MS
    )
    assert root.get_attribute("data-state") == "live", root.inner_text()
    ready = time.monotonic() - t0
    frame = page.frame_locator(".llmcourse-live-frame").nth(0)
    frame.locator(shows).first.wait_for(timeout=30_000)
    return page, frame, ready


def _change_and_read(frame: Any, change: Any, expected: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], float]:
    """Make the change, then wait (30 s at most) for the browser's table to show ``expected``."""
    t0 = time.monotonic()
    change()
    rows: list[tuple[str, str]] = []
    while time.monotonic() < t0 + 30:
        rows = _result_rows(frame)
        if rows == expected:
            return rows, time.monotonic() - t0
        time.sleep(0.01)
    raise AssertionError(f"the live calculator did not show {expected} within 30 s; it shows {rows}")


def _text_box(frame: Any, label: str) -> Any:
    return (
        frame.locator(".jp-CodeConsole .widget-text")
        .filter(has=frame.locator("label", has_text=label))
        .locator("input")
    )


@pytest.mark.slow
def test_live_first_estimate(watch: tuple[Any, Watch], server: str) -> None:
    from llmcourse.widgets import SNAPSHOT_NOTE
    from llmcourse.widgets.first_estimate import serving_plan_calculator

    context, w = watch
    _page, frame, ready = _start_live(context, w, f"{server}/book/00_first_estimate.html")
    TIMINGS["first live widget, first_estimate"] = ready
    calc = serving_plan_calculator()
    start = list(calc.rows)
    assert _result_rows(frame) == start  # the live start agrees with the package
    # the package's "this is a snapshot" note is shown on the static page, hidden in the live one
    frame.get_by_text(SNAPSHOT_NOTE).wait_for(state="hidden", timeout=10_000)
    longer = list(calc.set(prompt=4000).rows)  # computed here, by llmcourse in CPython
    assert longer != start
    box = _text_box(frame, "Prompt tokens")
    _rows, dt = _change_and_read(frame, lambda: (box.fill("4000"), box.press("Enter")), longer)
    TIMINGS["recompute after typing a prompt length"] = dt
    int4 = list(calc.set(precision="int4").rows)
    assert int4 != longer
    select = (
        frame.locator(".jp-CodeConsole .widget-dropdown")
        .filter(has=frame.locator("label", has_text="Precision"))
        .locator("select")
    )
    _rows, dt = _change_and_read(frame, lambda: select.select_option("int4"), int4)
    TIMINGS["recompute after choosing a precision"] = dt
    assert w.external == [] and w.failed == [] and w.errors == [], (w.external, w.failed, w.errors)


@pytest.mark.slow
def test_live_tokens(watch: tuple[Any, Watch], server: str) -> None:
    from llmcourse.widgets.tokens import traffic_calculator

    context, w = watch
    _page, frame, ready = _start_live(context, w, f"{server}/book/01_tokens.html")
    TIMINGS["first live widget, tokens"] = ready
    calc = traffic_calculator()
    start = list(calc.rows)
    assert _result_rows(frame) == start
    busier = list(calc.set(requests_per_day=1_234_567).rows)  # computed here, by llmcourse in CPython
    assert busier != start
    box = _text_box(frame, "Requests per day")
    _rows, dt = _change_and_read(frame, lambda: (box.fill("1234567"), box.press("Enter")), busier)
    TIMINGS["recompute after typing requests per day"] = dt
    assert w.external == [] and w.failed == [] and w.errors == [], (w.external, w.failed, w.errors)


def calculator_cells() -> list[tuple[str, int, str]]:
    """(page, index on the page, code) of every calculator the built book offers to run live."""
    out = []
    for path in pages():
        source = (SITE / path).read_text(encoding="utf-8")
        codes = re.findall(r'<div class="llmcourse-live"[^>]*data-code="([^"]*)"', source)
        out += [(path, i, json.loads(html.unescape(c))) for i, c in enumerate(codes)]
    return out


def _calculator_here(code: str) -> Any:
    """Run a live cell's code here, in CPython, and return its last expression (the calculator)."""
    tree = ast.parse(code)
    last = tree.body.pop()
    assert isinstance(last, ast.Expr), code
    scope: dict[str, Any] = {}
    exec(compile(tree, "<live cell>", "exec"), scope)
    return eval(compile(ast.Expression(last.value), "<live cell>", "eval"), scope)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "index", "code"),
    calculator_cells() or [("index.html", 0, "")],
    ids=lambda v: v if isinstance(v, str) and v.endswith(".html") else str(v) if isinstance(v, int) else "",
)
def test_every_calculator_starts_live(watch: tuple[Any, Watch], server: str, path: str, index: int, code: str) -> None:
    """Each calculator, started live from its page, shows what llmcourse computes here for the same cell."""
    if not code:
        _skip_or_fail()
        pytest.fail(f"no calculator found in the built book at {SITE}")
    context, w = watch
    here = _calculator_here(code)
    if hasattr(here, "rows"):
        _page, frame, ready = _start_live(context, w, f"{server}/{path}", index)
        assert _without_wall_time(_result_rows(frame)) == _without_wall_time(list(here.rows))
        if "weights_calculator" in code:  # its memory bar (SVG) is drawn live too, for the same inputs
            bar = frame.locator(".jp-CodeConsole svg.llmcourse-memory-bar").last
            bar.wait_for(timeout=10_000)
            assert bar.get_attribute("aria-label") in here.widget.children[-1].value
    else:  # the estimate drill: the same first question, and the planner's own answer passes
        _page, frame, ready = _start_live(context, w, f"{server}/{path}", index, shows=".jp-CodeConsole .widget-html")
        frame.get_by_text(here.problem.text).wait_for(timeout=30_000)
        box = _text_box(frame, "Answer")
        box.fill(here.problem.answer_text)
        box.press("Enter")
        frame.locator(".jp-CodeConsole button", has_text="Check").click()
        frame.get_by_text("Pass:").first.wait_for(timeout=30_000)
    TIMINGS[f"first live widget, {path}#{index}"] = ready
    assert w.external == [] and w.failed == [] and w.errors == [], (w.external, w.failed, w.errors)


def _without_wall_time(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A simulation's rows without the one that reports how long the run took (it differs per machine)."""
    return [r for r in rows if "wall time" not in r[0]]


@pytest.mark.slow
def test_live_queueing_simulation(watch: tuple[Any, Watch], server: str) -> None:
    """The queueing calculator simulates 10,000 requests in the browser and gets the same percentiles as
    CPython here for the same seed (the simulation uses only the standard library's seeded random)."""
    from llmcourse.widgets.queueing import queueing_calculator

    context, w = watch
    _page, frame, ready = _start_live(context, w, f"{server}/book/10_queueing.html")
    TIMINGS["first live widget, queueing"] = ready
    calc = queueing_calculator()
    start = _without_wall_time(list(calc.rows))
    assert _without_wall_time(_result_rows(frame)) == start
    longer = list(calc.set(answer_tokens=400).rows)
    assert _without_wall_time(longer) != start
    box = _text_box(frame, "Mean answer tokens")
    t0 = time.monotonic()
    box.fill("400")
    box.press("Enter")
    while time.monotonic() < t0 + 60:
        rows = _without_wall_time(_result_rows(frame))
        if rows == _without_wall_time(longer):
            break
        time.sleep(0.01)
    else:
        raise AssertionError(f"the live queueing calculator did not show {longer}; it shows {rows}")
    TIMINGS["recompute: simulate 10,000 requests live"] = time.monotonic() - t0
    assert w.external == [] and w.failed == [] and w.errors == [], (w.external, w.failed, w.errors)


@pytest.fixture(scope="session", autouse=True)
def _print_timings(request: Any) -> Iterator[None]:
    """After the session, print the live timings measured (shown even when output is captured)."""
    yield
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if TIMINGS and capture:
        with capture.global_and_fixture_disabled():
            print("\nlive book timings (s):")
            for k, v in TIMINGS.items():
                print(f"  {v:7.3f}  {k}")
