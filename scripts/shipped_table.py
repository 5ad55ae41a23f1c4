"""The frame of the scripts that write a table shipped in ``llmcourse/data`` (``make_bands.py``,
``make_vendor_factors.py``): build the table, then write it, or with ``--check`` compare it with the shipped file.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def render(table: dict) -> str:
    """The file's text: sorted keys, two-space indents, a final newline (stable diffs)."""
    return json.dumps(table, indent=2, sort_keys=True) + "\n"


def write_or_check(
    script: str,
    doc: str,
    out: Path,
    build: Callable[[], dict],
    report: Callable[[dict], Iterable[str]],
    argv: list[str] | None = None,
) -> int:
    """The ``main`` of ``script`` (its ``__file__``; ``doc``: its docstring): ``build()`` the table, then write it to
    ``out`` and print ``report(table)``'s lines, or with ``--check`` write nothing and return 1 if the shipped file
    differs."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file; write nothing")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    table = build()
    took = time.perf_counter() - t
    name = out.relative_to(ROOT)
    if args.check:
        same = out.exists() and json.loads(out.read_text(encoding="utf-8")) == table
        run = Path(script).resolve().relative_to(ROOT)
        print(f"{name}: {'up to date' if same else f'STALE: run {run}'} ({took:.0f} s)")
        return 0 if same else 1
    out.write_text(render(table), encoding="utf-8")
    print(f"wrote {name} ({took:.0f} s)")
    for line in report(table):
        print(f"  {line}")
    return 0
