"""Execute the book's notebooks two at a time into its execution cache, before ``jupyter-book build``.

    .venv/bin/python scripts/execute_book.py [--jobs N]

``jupyter-book build`` (``_config.yml``: ``execute_notebooks: cache``) executes each notebook the cache does not
hold, one after another, while it reads the sources: on two cores, one core idles for most of a build from scratch
(about 120 s of the 150 s). This script does that execution first, ``--jobs`` notebooks at a time (2 by default,
one per core), exactly as the build's myst-nb would: each table-of-contents file that is a notebook is read with
myst-nb's own reader and the book's MyST extensions, run by jupyter-cache's ``single_nb_execution`` in the
notebook's folder with the book's time limit and errors fatal, and stored in ``_build/.jupyter_cache`` as the build
stores it. The build then finds every notebook in the cache (its log says "Using cached notebook") and only renders.

A notebook that fails here is not stored: the build executes it again itself and fails there, with the error, as
without this script. A notebook the cache already holds is not executed again (the cache is dropped by
``scripts/fresh_cache.sh`` when the package or the config changed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _config() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def toc_files() -> list[Path]:
    """The sources the book builds (``_toc.yml``: the root and every ``file:``), as paths."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names: list[str] = [toc["root"]]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                names.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc.get("parts", toc.get("chapters", [])))
    out = []
    for name in names:
        found = [ROOT / f"{name}{s}" for s in (".md", ".ipynb") if (ROOT / f"{name}{s}").exists()]
        out += found[:1]
    return out


def read(path: Path) -> tuple[Any, dict[str, str] | None] | None:
    """The notebook myst-nb reads from ``path`` for the build (None: not a notebook), and its reader's name."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    extensions = set(_config().get("parse", {}).get("myst_enable_extensions", []))
    text = path.read_text(encoding="utf-8")
    reader = create_nb_reader(str(path), MdParserConfig(enable_extensions=extensions), NbParserConfig(), text)
    if reader is None:
        return None
    return reader.read(text), reader.read_fmt


def _execute(path: str, nb: Any, timeout: int) -> tuple[str, Any, float, str | None]:
    """Run one notebook as myst-nb's cache client does (in its folder, errors fatal); in a worker process."""
    from jupyter_cache.executors.utils import single_nb_execution

    result = single_nb_execution(
        nb, cwd=str(Path(path).parent), allow_errors=False, timeout=timeout, meta_override=True
    )
    error = None if result.err is None else f"{type(result.err).__name__}: {str(result.err)[-2000:]}"
    return path, nb, result.time, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="notebooks at a time")
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    execute = _config().get("execute", {})
    if execute.get("execute_notebooks") != "cache":
        print("execute_book: the book does not execute into a cache (_config.yml): nothing to do")
        return 0
    cache = get_cache(ROOT / execute.get("cache", "_build/.jupyter_cache"))
    todo, notebooks = [], 0
    for path in toc_files():
        got = read(path)
        if got is None:
            continue
        notebooks += 1
        try:
            cache.match_cache_notebook(got[0])
        except KeyError:
            todo.append((path, got[0]))
    # longest first (the validation chapter takes a quarter of the whole): the last one to start is a short one
    todo.sort(key=lambda p: -p[0].stat().st_size)
    t0, failed = time.monotonic(), []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        jobs = [pool.submit(_execute, str(p), nb, int(execute.get("timeout", 30))) for p, nb in todo]
        for job in as_completed(jobs):
            path, nb, seconds, error = job.result()
            name = Path(path).relative_to(ROOT)
            if error is not None:  # not stored: the build runs it again and reports the error
                failed.append(str(name))
                print(f"execute_book: {name} failed ({error.splitlines()[-1] if error else ''})", file=sys.stderr)
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(nb, path, data={"execution_seconds": seconds}), check_validity=False, overwrite=True
            )
    print(
        f"execute_book: {len(todo) - len(failed)} of {notebooks} notebooks executed into the cache "
        f"({notebooks - len(todo)} were there), {args.jobs} at a time, "
        f"in {time.monotonic() - t0:.0f} s"
        + (f"; failed (the build runs them again): {', '.join(failed)}" if failed else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
