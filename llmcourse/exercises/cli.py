"""Grade a completed exercise notebook from the shell: ``python -m llmcourse check NOTEBOOK [--seed S]``.

The notebook (``.ipynb`` or a MyST ``.md`` notebook) is executed cell by cell in a process of its own
(a *worker*), its output hidden and its standard input empty. The worker reports each ``check(...)``
call it sees (the exercise id and the answer, as a number and a unit); the grader checks those answers
itself, in its own process, so nothing a cell does to the checker's state changes a score. The last
answer per exercise is scored.

* ``--seed S`` grades student S's variant, whatever the notebook does with ``student(...)`` or
  ``reset()``; without it, each answer is graded on the variant the notebook had chosen when it
  called ``check`` (the book's default unless it called ``student(...)``), and the header says which.
* A cell that fails in any way (an exception, even one whose message cannot be printed,
  ``KeyboardInterrupt``, ``SystemExit``, ``os._exit``, a crash, reading standard input, deep
  recursion) is reported for that cell, and the other cells are still graded (after a crash a new
  worker re-runs the cells that had succeeded, then goes on).
* Each cell may run :data:`CELL_TIMEOUT` seconds (``--cell-timeout``), the whole notebook
  :data:`NOTEBOOK_TIMEOUT` seconds (``--timeout``).
* A notebook with no ``check(...)`` call says "no exercises found" and exits with status 1; an
  unreadable notebook exits with 2, an interrupted run (Ctrl-C) with 130.

The answer key is the teacher's: ``python -m llmcourse check --key kv_cache_ex1 --seed S`` (an exercise
or a whole chapter) prints the expected answers of that student's variants (:func:`answer_key`).

Examples
--------
>>> import pathlib, tempfile
>>> nb = pathlib.Path(tempfile.mkdtemp()) / "nb.md"
>>> _ = nb.write_text('''```python
... from llmcourse import Q_
... from llmcourse.exercises import check
... check("kv_cache_ex1", Q_(1, "KiB"))
... check("kv_cache_ex2", None)
... ```''')
>>> main([str(nb)])  # doctest: +NORMALIZE_WHITESPACE
grading nb.md (the book's default variants)
  kv_cache_ex1  0/1  Not yet: about 300x too small.
  kv_cache_ex2  0/1  not answered
score: 0/2
0
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pint

from llmcourse.exercises import engine

__all__ = ["CELL_TIMEOUT", "NOTEBOOK_TIMEOUT", "Grading", "answer_key", "grade", "main"]

#: Seconds one cell may run before the grader stops it (``--cell-timeout``).
CELL_TIMEOUT = 30.0
#: Seconds a whole notebook may run, the worker's start included (``--timeout``).
NOTEBOOK_TIMEOUT = 300.0
_GRACE = 2.0  # after a cell's limit, the seconds the worker has to stop it itself before it is killed
_MAX_WORKERS = 6  # workers started for one notebook (one, plus one after each crash or hang)
_LONGEST_LINE = 1 << 20
_MOST_IDS = 1_000  # distinct exercise ids recorded for one notebook

_CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([A-Za-z0-9_]+)["']""")


def _cells(path: Path) -> list[str]:
    """The source of every code cell of a notebook."""
    import jupytext

    nb = jupytext.read(path)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def _runnable(source: str) -> str:
    """Drop IPython magics and shell escapes, which plain Python cannot run."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


# --- the worker: runs the notebook's cells in its own process ---------------------------------------------
class _CellTimeout(BaseException):
    """Raised in the worker when a cell passes its time limit."""


def _describe(exc: BaseException, filename: str) -> str:
    """One line for a cell's exception, whatever its ``__str__`` does."""
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt (the cell raised it or was interrupted)"
    name = engine._type_name(exc)
    try:
        text = str(exc)
        text = engine._text(text, 300) if isinstance(text, str) else "(its message is not text)"
    except BaseException:  # a message that cannot be printed, even by raising KeyboardInterrupt
        text = "(its message could not be printed)"
    if isinstance(exc, SystemExit):
        return f"SystemExit: the cell called exit() or sys.exit({text})"
    line = None
    try:
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
    except Exception:
        line = None
    return f"{name}: {text}" + (f" (line {line})" if line else "")


def _worker() -> None:
    """Run the cells a grader sends on standard input; report on the descriptor that was standard output."""
    import signal

    write, dumps = os.write, json.JSONEncoder(ensure_ascii=True).encode
    job = json.loads(sys.stdin.buffer.read())
    out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the notebook's input is empty and its output goes nowhere
        os.dup2(null, fd)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except Exception:  # pragma: no cover - not on every platform
        pass
    timed = hasattr(signal, "setitimer")
    mask = getattr(signal, "pthread_sigmask", None)

    def send(**msg: Any) -> None:
        try:
            data = (dumps(msg) + "\n").encode()
        except Exception:
            return
        if timed and mask:
            mask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            while data:
                data = data[write(out, data) :]
        except OSError:
            os._exit(3)
        finally:
            if timed and mask:
                mask(signal.SIG_UNBLOCK, {signal.SIGALRM})

    def alarm(signum: int, frame: Any) -> None:
        raise _CellTimeout

    def limit(seconds: float) -> None:
        if timed:
            signal.signal(signal.SIGALRM, alarm)
            signal.setitimer(signal.ITIMER_REAL, seconds)

    start, cell_timeout = int(job["start"]), float(job["cell_timeout"])
    current = [0]
    if job["forced"]:
        engine._GRADING_SEED = engine._seed_text(job["seed"])

    def observe(exercise_id: Any, answer: Any, seed: str | None) -> None:
        if current[0] < start:  # a cell re-run after a crash: its checks were reported the first time
            return
        eid = exercise_id if type(exercise_id) is str and len(exercise_id) <= 100 else engine._text(exercise_id)
        try:
            unit = engine.get(eid).unit
        except Exception:
            unit = ""
        send(kind="check", cell=current[0], id=eid, answer=engine._portable(answer, unit), seed=seed)

    engine._OBSERVER = observe
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for n, source in job["cells"]:
        current[0] = n
        send(kind="start", cell=n)
        filename = f"<cell {n}>"
        error = None
        try:
            try:
                code = compile(_runnable(source), filename, "exec")
                limit(cell_timeout)
                try:
                    exec(code, namespace)
                finally:
                    limit(0)
            except _CellTimeout:
                error = "timeout"
            except BaseException as exc:  # a cell may raise anything
                limit(1)
                try:
                    error = _describe(exc, filename)
                finally:
                    limit(0)
        except _CellTimeout:  # the limit struck while the cell's exception was being described
            error = error or "timeout"
        send(kind="end", cell=n, error=error)
    send(kind="done")
    os._exit(0)  # no exit handlers or threads of the notebook's


_WORKER = "import sys; sys.path.insert(0, {root!r}); from llmcourse.exercises.cli import _worker; _worker()"


def _messages(path: Path, job: dict, deadline: float, cell_timeout: float) -> Iterator[dict]:
    """Start a worker on ``job`` and yield its messages, then one ``{"kind": "timeout", "limit": "cell" |
    "notebook"}`` or ``{"kind": "exit", "status": N}`` if it does not finish. The worker is killed at the end."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER.format(root=root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=path.resolve().parent,
        env=env,
        start_new_session=os.name == "posix",
    )
    try:
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except OSError:
            pass
        fd = proc.stdout.fileno()
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        buf = b""
        cell_deadline = None
        while True:
            now = time.monotonic()
            end = min(deadline, cell_deadline) if cell_deadline is not None else deadline
            if now >= end:
                yield {"kind": "timeout", "limit": "notebook" if end == deadline else "cell"}
                return
            if not sel.select(end - now):
                continue
            chunk = os.read(fd, 65_536)
            if not chunk:
                try:
                    status = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    status = None
                yield {"kind": "exit", "status": status}
                return
            buf += chunk
            *lines, buf = buf.split(b"\n")
            if len(buf) > _LONGEST_LINE:
                buf = b""
            for line in lines:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(msg, dict) or not isinstance(msg.get("kind"), str):
                    continue
                if msg["kind"] == "start":
                    cell_deadline = time.monotonic() + cell_timeout + _GRACE
                elif msg["kind"] == "end":
                    cell_deadline = None
                yield msg
                if msg["kind"] == "done":
                    return
    finally:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, 9)
            else:  # pragma: no cover
                proc.kill()
        except (OSError, ProcessLookupError):
            pass
        proc.wait()
        proc.stdout.close()


# --- the grader ---------------------------------------------------------------------------------------------
@dataclass
class Grading:
    """What :func:`grade` found: ``rows`` (exercise id, the last answer's result, or None if its check was
    never reached), ``errors`` (one line per failed cell or unknown exercise) and ``variants`` (the student
    ids the answers were graded on, None for the book's default)."""

    rows: list[tuple[str, engine.Result | None]]
    errors: list[str]
    variants: list[str | None] = field(default_factory=list)
    seed: str | None = None
    forced: bool = False

    @property
    def score(self) -> int:
        return sum(1 for _, r in self.rows if r is not None and r.correct)

    def graded_on(self) -> str:
        """Which variants were graded, in words."""
        if self.forced:
            return "the book's default variants" if self.seed is None else f"student {engine._text(self.seed, 80)}"
        seeds = list(dict.fromkeys(self.variants))
        if not [s for s in seeds if s is not None]:
            return "the book's default variants"
        names = ", ".join("the book's default" if s is None else engine._text(s, 80) for s in seeds)
        if len(seeds) == 1:
            return f"student {names}, chosen in the notebook with student(); no --seed given"
        return f"variants chosen in the notebook: {names}; no --seed given"


def grade(
    path: str | Path,
    seed: Any = None,
    *,
    cell_timeout: float = CELL_TIMEOUT,
    timeout: float = NOTEBOOK_TIMEOUT,
) -> Grading:
    """Execute a notebook in a worker process and grade the answers its ``check`` calls gave (see the module)."""
    path = Path(path)
    sources = _cells(path)
    forced = seed is not None
    seed_text = engine._seed_text(seed) if forced else None
    deadline = time.monotonic() + timeout
    errors: dict[int, str] = {}
    ok: list[int] = []  # cells that ran without error, re-run by a new worker after a crash
    answers: dict[str, tuple[Any, str | None]] = {}
    seen: list[str] = []
    first, workers = 1, 0
    if not any("check" in s for s in sources):  # no check(...) anywhere: nothing to grade, nothing to run
        first = len(sources) + 1
    while first <= len(sources):
        if workers == _MAX_WORKERS:
            errors[first] = f"not run: the notebook's process failed {workers} times"
            break
        workers += 1
        todo = [n for n in ok if n < first] + list(range(first, len(sources) + 1))
        job = {
            "cells": [[n, sources[n - 1]] for n in todo],
            "start": first,
            "seed": seed_text,
            "forced": forced,
            "cell_timeout": cell_timeout,
        }
        current = None
        for msg in _messages(path, job, deadline, cell_timeout):
            kind, cell = msg["kind"], msg.get("cell")
            if kind == "start" and type(cell) is int:
                current = cell
            elif kind == "check" and type(cell) is int and cell >= first and type(msg.get("id")) is str:
                s, eid = msg.get("seed"), msg["id"]
                if eid not in answers:
                    if len(answers) >= _MOST_IDS:  # a loop checking made-up ids: keep the first ones
                        continue
                    seen.append(eid)
                answers[eid] = (msg.get("answer"), s if type(s) is str else None)
            elif kind == "end" and type(cell) is int and cell >= first:
                err = msg.get("error")
                if err is None:
                    ok.append(cell)
                else:
                    errors[cell] = (
                        f"stopped after {cell_timeout:g} s, the time limit of a cell (--cell-timeout): an endless loop?"
                        if err == "timeout"
                        else engine._text(err, 300)
                    )
                first = cell + 1
            elif kind == "done":
                first = len(sources) + 1
            elif kind == "timeout" and msg.get("limit") == "notebook":
                where = current if current is not None and current >= first else first
                errors[where] = f"stopped: the notebook's time limit of {timeout:g} s was reached (--timeout)"
                if where < len(sources):
                    errors[where + 1] = f"cells {where + 1} to {len(sources)} not run (the notebook's time limit)"
                first = len(sources) + 1
            elif kind in ("timeout", "exit"):
                if current is None or current < first:  # the worker failed before reaching the notebook's cells
                    errors[first] = "the grader's worker process failed before this cell ran"
                    first = len(sources) + 1 if current is None else first
                elif kind == "timeout":
                    errors[current] = (
                        f"stopped after {cell_timeout:g} s, the time limit of a cell (--cell-timeout), "
                        "and did not stop when asked: an endless loop?"
                    )
                    first = current + 1
                else:
                    status = msg.get("status")
                    errors[current] = (
                        f"the notebook's process ended during this cell (exit status {status}): os._exit(), "
                        "a crash, or too little memory"
                    )
                    first = current + 1
    ids = list(dict.fromkeys([m for s in sources for m in _CHECK_CALL.findall(s)] + seen))
    notes = []
    rows: list[tuple[str, engine.Result | None]] = []
    variants: list[str | None] = []
    saved = engine._SESSION, engine._GRADING_SEED, engine._OBSERVER
    engine._SESSION, engine._GRADING_SEED, engine._OBSERVER = engine._Session(), engine._UNSET, None
    try:
        for eid in ids:
            try:
                engine.get(eid)
            except KeyError:
                notes.append(f"check({engine._quoted(eid)}, ...) names no exercise")
                continue
            if eid not in answers:
                rows.append((eid, None))
                continue
            answer, s = answers[eid]
            graded = seed_text if forced else s
            variants.append(graded)
            rows.append((eid, engine.check(eid, engine._from_portable(answer), seed=graded)))
    finally:
        engine._SESSION, engine._GRADING_SEED, engine._OBSERVER = saved
    lines = [f"code cell {n}: {e}" for n, e in sorted(errors.items())]
    return Grading(rows, lines + notes, variants, seed_text, forced)


def answer_key(which: str | None = None, seed: Any = None) -> list[tuple[str, pint.Quantity]]:
    """The teacher's answer key: (exercise id, expected answer) for one exercise, a chapter (its key, e.g.
    ``"kv_cache"``) or every exercise (None), for student ``seed``'s variants (None: the book's)."""
    if which is None:
        found = engine.exercises()
    elif which in engine.CHAPTERS:
        found = engine.exercises(which)
    else:
        found = [engine.get(which)]
    return [(ex.id, engine._expected(ex, ex.variant(seed))) for ex in found]


def _line(exercise_id: str, result: engine.Result | None) -> str:
    if result is None:
        return f"  {exercise_id}  0/1  not run (its cell did not reach check)"
    if result.correct:
        return f"  {exercise_id}  1/1  correct"
    if result.status == "blank":
        return f"  {exercise_id}  0/1  not answered"
    return f"  {exercise_id}  0/1  {result.message}"


def _print_key(which: str, seed: str | None) -> int:
    from llmcourse.units import sig

    try:
        key = answer_key(which, seed)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    print(f"answer key ({'the book' if seed is None else 'student ' + engine._text(seed, 80)}'s variants)")
    for eid, q in key:
        ex = engine.get(eid)
        value = f"{q.m:,.0f}" if ex.integer else sig(float(q.m), 4)
        print(f"  {eid}  {value} {ex.unit}".rstrip())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``check NOTEBOOK [--seed S] [--cell-timeout T] [--timeout T]`` prints a score per exercise (exit 0;
    1 when the notebook has no exercise); ``check --key EXERCISE|CHAPTER [--seed S]`` prints the answer key."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        argv = argv[1:]
    parser = argparse.ArgumentParser(
        prog="python -m llmcourse check", description="Grade a completed exercise notebook (.ipynb or .md)."
    )
    parser.add_argument("notebook", nargs="?", help="the notebook to grade, e.g. exercises/03_kv_cache.ipynb")
    parser.add_argument("--seed", default=None, help="grade this student's variant (student number or name)")
    parser.add_argument(
        "--cell-timeout",
        type=float,
        default=CELL_TIMEOUT,
        help=f"seconds one cell may run (default {CELL_TIMEOUT:g})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=NOTEBOOK_TIMEOUT,
        help=f"seconds the whole notebook may run (default {NOTEBOOK_TIMEOUT:g})",
    )
    parser.add_argument(
        "--key",
        metavar="EXERCISE|CHAPTER",
        help="print the expected answers (the teacher's key) of an exercise or a chapter for --seed's variants",
    )
    args = parser.parse_args(argv)
    if args.key is not None:
        return _print_key(args.key, engine._seed_text(args.seed))
    if args.notebook is None:
        parser.error("give a notebook to grade (or --key EXERCISE for the answer key)")
    if not args.cell_timeout > 0 or not args.timeout > 0:
        parser.error("--cell-timeout and --timeout must be positive numbers of seconds")
    path = Path(args.notebook)
    if not path.is_file():
        print(f"error: no notebook at {path}", file=sys.stderr)
        return 2
    try:
        try:
            result = grade(path, args.seed, cell_timeout=args.cell_timeout, timeout=args.timeout)
        except Exception as exc:  # an unreadable notebook
            print(f"error: could not read {path}: {engine._text(exc, 200)}", file=sys.stderr)
            return 2
        print(f"grading {path.name} ({result.graded_on()})")
        if not result.rows:
            print("  no exercises found: the notebook makes no check(...) call")
            for e in result.errors:
                print(f"  error in {e}")
            return 1
        for exercise_id, r in result.rows:
            print(_line(exercise_id, r))
        for e in result.errors:
            print(f"  error in {e}")
        print(f"score: {result.score}/{len(result.rows)}")
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
