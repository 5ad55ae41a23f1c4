"""Grade a completed exercise notebook from the shell: ``python -m llmcourse check NOTEBOOK [--seed S]``.

The notebook (``.ipynb`` or a MyST ``.md`` notebook) is executed cell by cell in a fresh namespace,
its output hidden; every ``check(...)`` it makes is recorded and the last result per exercise is
scored. ``--seed`` grades the variant of that student whatever the notebook sets with ``student(...)``.
A cell that raises is reported and the next cells still run.

Examples
--------
>>> import pathlib, tempfile
>>> nb = pathlib.Path(tempfile.mkdtemp()) / "nb.md"
>>> _ = nb.write_text('''```python
... from llmcourse import Q_
... from llmcourse.exercises import check
... check("kv_cache_ex1", Q_(320, "KiB"))
... check("kv_cache_ex2", None)
... ```''')
>>> main([str(nb)])  # doctest: +NORMALIZE_WHITESPACE
grading nb.md (the book's default variants)
  kv_cache_ex1  1/1  correct
  kv_cache_ex2  0/1  not answered
score: 1/2
0
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from pathlib import Path
from typing import Any

from llmcourse.exercises import engine

__all__ = ["grade", "main"]

_CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([A-Za-z0-9_]+)["']""")


def _cells(path: Path) -> list[str]:
    """The source of every code cell of a notebook."""
    import jupytext

    nb = jupytext.read(path)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def _runnable(source: str) -> str:
    """Drop IPython magics and shell escapes, which plain Python cannot run."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def grade(path: str | Path, seed: Any = None) -> tuple[list[tuple[str, engine.Result | None]], list[str]]:
    """Execute a notebook and return ([(exercise id, last result or None)], [cell errors])."""
    path = Path(path)
    sources = _cells(path)
    ids = list(dict.fromkeys(m for s in sources for m in _CHECK_CALL.findall(s)))
    engine.reset()
    engine._SESSION.forced_seed = seed
    errors: list[str] = []
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        for n, source in enumerate(sources, 1):
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    exec(compile(_runnable(source), f"{path.name}, cell {n}", "exec"), namespace)
            except BaseException as exc:  # a student's cell may raise anything, even SystemExit
                if isinstance(exc, KeyboardInterrupt):
                    raise
                errors.append(f"code cell {n}: {type(exc).__name__}: {exc}")
        results = dict(engine._SESSION.last)
    finally:
        engine.reset()
    ids += [i for i in results if i not in ids]
    return [(i, results.get(i)) for i in ids], errors


def _line(exercise_id: str, result: engine.Result | None) -> str:
    if result is None:
        return f"  {exercise_id}  0/1  not run (its cell did not reach check)"
    if result.correct:
        return f"  {exercise_id}  1/1  correct"
    if result.status == "blank":
        return f"  {exercise_id}  0/1  not answered"
    return f"  {exercise_id}  0/1  {result.message}"


def main(argv: list[str] | None = None) -> int:
    """``check NOTEBOOK [--seed S]``: print a score per exercise; 0 when the notebook could be graded."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        argv = argv[1:]
    parser = argparse.ArgumentParser(
        prog="python -m llmcourse check", description="Grade a completed exercise notebook (.ipynb or .md)."
    )
    parser.add_argument("notebook", help="the notebook to grade, e.g. exercises/03_kv_cache.ipynb")
    parser.add_argument("--seed", default=None, help="grade this student's variant (student number or name)")
    args = parser.parse_args(argv)
    path = Path(args.notebook)
    if not path.is_file():
        print(f"error: no notebook at {path}", file=sys.stderr)
        return 2
    try:
        rows, errors = grade(path, args.seed)
    except Exception as exc:  # an unreadable notebook
        print(f"error: could not read {path}: {exc}", file=sys.stderr)
        return 2
    which = f"student {args.seed}" if args.seed is not None else "the book's default variants"
    print(f"grading {path.name} ({which})")
    for exercise_id, result in rows:
        print(_line(exercise_id, result))
    for e in errors:
        print(f"  error in {e}")
    print(f"score: {sum(1 for _, r in rows if r is not None and r.correct)}/{len(rows)}")
    return 0
