"""Shared test set-up: nbval checks each notebook cell against the book build's own execution.

``make test`` (``scripts/test.sh``) builds the book first, and the build executes every chapter and exercise
notebook with errors fatal (``_config.yml``: ``execute_notebooks: cache``, ``nb_execution_raise_on_error``),
recording each successful execution in ``_build/.jupyter_cache``. nbval (``--nbval-lax``) then checks that every
code cell of the same notebooks runs without an error. Running them all again would execute each notebook twice
per ``make test`` (about 150 s on two cores), so here each nbval cell item checks the build's execution of the
same notebook instead, when the cache holds one that is current:

* the cached notebook has the same code cells (jupyter-cache matches the hash of every code cell's source and
  metadata and the kernel), and
* it was executed after the last change to the package (``llmcourse/``: code and data) and the book config, so
  the figures it ran with are today's.

Each cell item then asserts that its cell's source is the notebook's and that its recorded outputs hold no error,
which is what ``--nbval-lax`` asserts of a fresh run. A notebook with no such cache entry (not built yet, changed
since the build, or a package change since) is executed by nbval as usual; ``LLMCOURSE_NBVAL_EXECUTE=1`` executes
every notebook again regardless.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# `make test` and CI (scripts/test.sh sets HYPOTHESIS_PROFILE=ci) draw the same examples at every run, so that a run's
# verdict depends on the code alone: a rare example that fails (a point at a formula's pole, say) cannot turn a run
# red at random. Run pytest without it to draw new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
_NBVAL: dict[str, set[str]] = {"cached": set(), "executed": set()}  # notebooks, by how nbval checked them
_LIVE_TIMINGS: list[tuple[str, float]] = []


def _newest_dependency() -> dt.datetime:
    """When a notebook's execution last changed besides its own cells: the package (code and data), the config."""
    depends = [ROOT / "_config.yml", ROOT / "_toc.yml", *(ROOT / "llmcourse").rglob("*")]
    newest = max(p.stat().st_mtime for p in depends if p.is_file() and "__pycache__" not in p.parts)
    return dt.datetime.fromtimestamp(newest, dt.UTC).replace(tzinfo=None)  # jupyter-cache stores naive UTC


def _cached_code_cells(cache: Any, nb: Any, newer_than: dt.datetime) -> list[Any] | None:
    """The code cells of the build's execution of ``nb``, if the cache holds a current one."""
    try:
        record = cache.match_cache_notebook(nb)
    except KeyError:
        return None
    if record.created <= newer_than:
        return None
    return [c for c in cache.get_cache_bundle(record.pk).nb.cells if c.cell_type == "code"]


def _check_cached_cell(item: Any, cached: Any) -> None:
    """What ``--nbval-lax`` checks of a cell (it runs without an error), on the build's execution of it."""
    assert cached.source == item.cell.source, f"{item.nodeid}: the cached execution has another cell here"
    errors = [o for o in cached.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{item.nodeid}: {errors[0].get('ename')}: {errors[0].get('evalue')}"


def _longest_files_first(items: list[pytest.Item]) -> None:
    """Order the files for pytest-xdist, which ``scripts/test.sh`` runs with ``--dist loadfile --no-loadscope-reorder``:
    each worker takes the next whole file as it runs out, in this order, so the longest files start first and the
    short ones fill in at the end (the run ends when its longest file does, at best). First the browser tests (the
    longest file), then every file with a test marked ``slow``, then the rest; collection order within each. A file's
    tests stay together and in their order."""
    slow = {i.path for i in items if i.get_closest_marker("slow")}
    browser = {i.path for i in items if i.get_closest_marker("browser")}
    items.sort(key=lambda i: 0 if i.path in browser else 1 if i.path in slow else 2)  # stable


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _longest_files_first(items)
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:
        return
    cells = [i for i in items if isinstance(i, IPyNbCell)]
    if not cells:
        return
    files: dict[Any, list[Any]] = {}
    for item in cells:
        files.setdefault(item.parent, []).append(item)
    cache = None
    if os.environ.get("LLMCOURSE_NBVAL_EXECUTE") != "1" and (CACHE / "global.db").exists():
        from jupyter_cache import get_cache

        cache = get_cache(CACHE)
    newest = _newest_dependency() if cache else None
    for nbfile, its in files.items():
        cached = _cached_code_cells(cache, nbfile.nb, newest) if cache else None
        reuse = cached is not None and len(cached) == len(its) and all(i.cell_num < len(cached) for i in its)
        for item in its:
            item.user_properties.append(("nbval", "cached" if reuse else "executed"))
        if not reuse:
            continue
        nbfile.setup = lambda: None  # no kernel: nothing is executed again
        for item in its:
            item.runtest = lambda item=item, cell=cached[item.cell_num]: _check_cached_cell(item, cell)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect what the tests report (here, or from pytest-xdist's workers): how nbval checked each notebook,
    and the browser tests' live timings."""
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == "nbval":
            _NBVAL[value].add(report.nodeid.split("::")[0])
        elif name == "live timing":
            _LIVE_TIMINGS.append(tuple(value))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    cached, executed = _NBVAL["cached"], _NBVAL["executed"]
    if cached or executed:
        terminalreporter.write_line(
            f"nbval: {len(cached)} notebooks checked on the book build's execution (_build/.jupyter_cache), "
            f"{len(executed)} executed here"
            + (f": {', '.join(sorted(Path(p).name for p in executed))}" if executed else "")
        )
    if _LIVE_TIMINGS:
        terminalreporter.write_line("live book timings (s):")
        for name, secs in _LIVE_TIMINGS:
            terminalreporter.write_line(f"  {secs:7.3f}  {name}")
