"""Grade a completed exercise notebook from the shell: ``python -m llmcourse check NOTEBOOK [--seed S]``.

The notebook (``.ipynb`` or a MyST ``.md`` notebook) is executed cell by cell in an IPython kernel of its
own, which nbclient starts and drives (:mod:`llmcourse.exercises.kernel`); the cells' output is hidden and
their standard input empty. The grader's runner in the kernel reports each ``check(...)`` call it sees (the
exercise id and the answer, as a number and a unit) on a pipe of its own; the grader checks those answers
itself, in its own process, so nothing a cell does to the checker's state changes a score. Each exercise is
scored on the answer that counts as ``progress()`` says: its first right answer, else its last one (a later
experiment does not undo a solved exercise, however many tries follow); ``check(id)`` with no answer is heard as
a try without an answer (0/1, saying so).

* ``--seed S`` grades student S's variant, whatever the notebook does with ``student(...)`` or
  ``reset()``; without it, each answer is graded on the variant the notebook had chosen when it
  called ``check`` (the book's default unless it called ``student(...)``), and the header says which.
* A cell that fails in any way (an exception, even one whose message cannot be printed,
  ``KeyboardInterrupt``, ``SystemExit``, ``os._exit``, a crash, reading standard input, deep
  recursion) is reported for that cell, and the other cells are still graded (after a crash a new
  kernel re-runs the cells that had succeeded, then goes on).
* Each cell may run :data:`CELL_TIMEOUT` seconds (``--cell-timeout``), the whole notebook
  :data:`NOTEBOOK_TIMEOUT` seconds (``--timeout``); the kernel and each process it starts may use
  :data:`MEMORY` bytes (``--memory`` GiB; past it a cell fails with MemoryError), and every process the
  notebook started is killed when grading ends. Report lines are printable and at most 200 characters.
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
import asyncio
import concurrent.futures
import contextlib
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pint

from llmcourse.exercises import answers as answer_text
from llmcourse.exercises import engine

__all__ = ["CELL_TIMEOUT", "MEMORY", "NOTEBOOK_TIMEOUT", "Grading", "answer_key", "grade", "main"]

#: Seconds one cell may run before the grader stops it (``--cell-timeout``).
CELL_TIMEOUT = 30.0
#: Seconds a whole notebook may run, the kernel's start included (``--timeout``).
NOTEBOOK_TIMEOUT = 300.0
#: Bytes of address space the notebook's kernel (and each process it starts) may use (``--memory``, in GiB).
MEMORY = 4 << 30
_GRACE = 2.0  # after a cell's limit, the seconds the kernel has to stop it itself before it is killed
_MAX_KERNELS = 6  # kernels started for one notebook (one, plus one after each crash or hang)
_MOST_IDS = 1_000  # distinct exercise ids recorded for one notebook
#: The tries of one exercise the grader keeps (the first half and the latest ones): a loop of checks stays bounded.
_MOST_TRIES = 100
_TEXT_SENT = 10_000  # characters of a text answer (stripped) the runner sends the grader
_INT_BITS = 100_000  # bits of an int answer the runner sends (a longer one is sent as 2**_INT_BITS: too large anyway)
_WIDEST = 200  # characters of a printed report line (a longer one ends in ...)
_UNREAD = "the grader could not read this answer; give a number, e.g. Q_(value, unit)."

_CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([A-Za-z0-9_]+)["']""")


def _cells(path: Path) -> list[str]:
    """The source of every code cell of a notebook."""
    import jupytext

    nb = jupytext.read(path)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def _runnable(source: str) -> str:
    """Drop IPython magics and shell escapes, which plain Python cannot run."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


# --- inside the notebook's kernel: the grader's runner -----------------------------------------------------
class _CellTimeout(BaseException):
    """Raised in the kernel when a cell passes its time limit."""


def _describe(exc: BaseException, filename: str) -> str:
    """One line for a cell's exception, whatever its ``__str__`` does."""
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt (the cell raised it or was interrupted)"
    name = answer_text.type_name(exc)
    try:
        text = str(exc)
        text = answer_text.short_text(text, 300) if isinstance(text, str) else "(its message is not text)"
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


def _wire(answer: Any, unit: str) -> Any:
    """The answer as the runner sends it to the grader (JSON), for the grader to read and check itself: a text
    stripped as the checker strips it (over :data:`_TEXT_SENT` characters, only its length: the checker refuses it
    whatever it says), an ``int`` in hexadecimal (the grader rebuilds it, and says itself if it is too large), no
    answer at all (``check(id)``) as such, anything else as :func:`~llmcourse.exercises.answers.portable` writes
    it; the reason the kernel gives for refusing an answer is not sent (the grader gives its own: a notebook could
    write any)."""
    if answer is engine.NO_ANSWER:
        return {"missing": True}
    if isinstance(answer, str):
        text = str.__getitem__(answer, slice(None)).strip()
        return {"text": text} if len(text) <= _TEXT_SENT else {"length": len(text)}
    if type(answer) is int:
        n = answer if answer.bit_length() <= _INT_BITS else (1 << _INT_BITS) * (1 if answer > 0 else -1)
        return {"int": format(n, "x")}
    sent = answer_text.portable(answer, unit)
    return {"refused": True} if isinstance(sent, dict) and "refused" in sent else sent


def _unwire(obj: Any, unit: str = "") -> Any:
    """The answer :func:`_wire` sent, rebuilt in the grader (whatever the message held): ``None``, a text, an
    int, a quantity, :data:`~llmcourse.exercises.engine.NO_ANSWER`, or an
    :class:`~llmcourse.exercises.answers.UnreadableAnswer` with the grader's own reason (for a long text, the
    checker's, with its true length: ``unit`` is the exercise's, for the example it gives)."""
    if isinstance(obj, dict) and len(obj) == 1:
        (kind, value), *_ = obj.items()
        if kind == "missing" and value is True:
            return engine.NO_ANSWER
        if kind == "length" and type(value) is int and _TEXT_SENT < value < 1 << 62:
            return answer_text.UnreadableAnswer(answer_text.long_text(value, unit))
        if kind == "int" and type(value) is str and 0 < len(value) <= _INT_BITS // 4 + 2:
            try:
                return int(value, 16)
            except ValueError:
                pass
        if kind == "text" and type(value) is str:
            if len(value) <= _TEXT_SENT:
                return value
            return answer_text.UnreadableAnswer(answer_text.long_text(len(value.strip()), unit))
        if kind in ("int", "text", "refused", "missing", "length"):
            return answer_text.UnreadableAnswer(_UNREAD)
    return answer_text.from_portable(obj)


def _no_input(prompt: Any = "") -> str:
    """``input()`` in a graded cell: its standard input is empty."""
    raise EOFError("EOF when reading a line")


class _Cells:
    """The grader's runner inside the notebook's kernel, made by the grader's set-up cell (see
    :mod:`llmcourse.exercises.kernel`): runs one cell at a time (:meth:`run`) in a namespace of its own,
    under ``cell_timeout`` seconds, its standard input empty and its output going nowhere, and reports each
    ``check(...)`` call and how each cell ended as JSON lines on descriptor ``fd``, the pipe the grader gave
    the kernel (which no output of the notebook reaches). With ``forced``, every answer is checked on student
    ``seed``'s variant, whatever the notebook does."""

    def __init__(self, fd: int, seed: str | None, forced: bool, cell_timeout: float) -> None:
        self._out = os.dup(fd)  # not inherited by the processes a cell starts
        os.close(fd)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)  # descriptors 1 and 2 already go nowhere: the kernel was started so
        os.close(null)
        sys.argv = [""]  # not the kernel's command line (a cell's argparse sees none, as in the worker's python -c)
        sys.stdin = open(os.devnull)  # noqa: SIM115 (the notebook's, for the kernel's life)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except Exception:  # pragma: no cover - not on every platform
            pass
        self._dumps = json.JSONEncoder(ensure_ascii=True).encode
        self._timeout = float(cell_timeout)
        self._armed = self._late = False  # a time-out may strike now; one came while it could not
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        engine.grade_as(answer_text.seed_text(seed) if forced else None, self._observe)

    def _send(self, **msg: Any) -> None:
        armed, self._armed = self._armed, False  # a time-out waits until the message is whole
        try:
            data = (self._dumps(msg) + "\n").encode()
            while data:
                data = data[os.write(self._out, data) :]
        except OSError:  # the grader is gone, or a cell closed the pipe
            os._exit(3)
        except Exception:  # a message that cannot be written as JSON: not sent
            pass
        finally:
            self._armed = armed
        if armed and self._late:  # the time-out that came meanwhile
            self._late = False
            raise _CellTimeout

    def _observe(self, exercise_id: Any, answer: Any, seed: str | None) -> None:
        eid = (
            exercise_id if type(exercise_id) is str and len(exercise_id) <= 100 else answer_text.short_text(exercise_id)
        )
        try:
            unit = engine.get(eid).unit
        except Exception:
            unit = ""
        self._send(kind="check", id=eid, answer=_wire(answer, unit), seed=seed, chosen=engine.notebook_student())

    def _alarm(self, signum: int, frame: Any) -> None:
        if self._armed:
            raise _CellTimeout
        self._late = True  # in the middle of a message: struck once it is sent

    def _limit(self, seconds: float) -> None:
        """Stop the cell with :class:`_CellTimeout` after ``seconds`` (0: no limit any more). The timer strikes
        once: a cell that swallows the time-out is the grader's to stop."""
        import signal

        if not hasattr(signal, "setitimer"):  # pragma: no cover - then only the grader's limit holds
            return
        self._armed = self._late = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        if seconds > 0:
            signal.signal(signal.SIGALRM, self._alarm)
            self._armed = True
            signal.setitimer(signal.ITIMER_REAL, seconds)

    def run(self, n: int, source: str) -> None:
        """Run code cell ``n``; report how it ended (``error``: None, ``"timeout"`` or one line)."""
        import _sitebuiltins
        import asyncio
        import builtins

        builtins.input = _no_input  # ipykernel puts its own back before each cell, IPython hides exit() and quit()
        builtins.exit, builtins.quit = (_sitebuiltins.Quitter(name, "Ctrl-D (i.e. EOF)") for name in ("exit", "quit"))
        filename = f"<cell {n}>"
        error = None
        kernels_loop = asyncio._get_running_loop()
        try:
            try:
                code = compile(source, filename, "exec")
                asyncio._set_running_loop(None)  # the cell's code runs as in plain Python: asyncio.run() works
                self._limit(self._timeout)
                try:
                    exec(code, self.namespace)
                finally:
                    self._limit(0)
                    asyncio._set_running_loop(kernels_loop)
            except _CellTimeout:
                error = "timeout"
            except BaseException as exc:  # a cell may raise anything
                self._limit(1)
                try:
                    error = _describe(exc, filename)
                finally:
                    self._limit(0)
        except _CellTimeout:  # the limit struck while the cell's exception was being described
            error = error or "timeout"
        self._armed = False  # (if a strike came before its limit was lifted)
        self._send(kind="end", error=error)


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
            return (
                "the book's default variants"
                if self.seed is None
                else f"student {answer_text.short_text(self.seed, 80)}"
            )
        seeds = list(dict.fromkeys(self.variants))
        if not [s for s in seeds if s is not None]:
            return "the book's default variants"
        names = ", ".join("the book's default" if s is None else answer_text.short_text(s, 80) for s in seeds)
        if len(seeds) == 1:
            return f"student {names}, chosen in the notebook with student(); no --seed given"
        return f"variants chosen in the notebook: {names}; no --seed given"


def _exercise_id(typed: str) -> str:
    """An exercise id as the checker reads it (case, spaces and hyphens do not matter: ``'Tokens-Ex2 '`` is
    ``tokens_ex2``), so the tries of one exercise are graded as one; an id that names no exercise, as typed."""
    try:
        return engine.get(typed).id
    except KeyError:
        return typed


@dataclass
class _Tally:
    """What a notebook's ``count`` code cells did, as the kernels that ran them tell it (see
    :class:`llmcourse.exercises.kernel.Kernel`): the next cell to run (``first``), the cells that ran
    without error (``ok``: a new kernel runs them again after a crash, unheard), an error line per failed
    cell, and every answer checked (with the variant it was checked on) per exercise, in the order first heard
    (:data:`_MOST_TRIES` of them at the most: the first half and the latest ones, and always the first right one,
    which is the one that counts; ``seed`` and ``forced`` say which variant a try is checked on to know)."""

    count: int
    cell_timeout: float
    timeout: float
    first: int = 1
    current: int | None = None  # the cell the present kernel runs (None: it has not reached one)
    ok: list[int] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    answers: dict[str, list[tuple[Any, str | None]]] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    chosen: set[str] = field(default_factory=set)  # the students the notebook's student() chose (a few at most)
    seed: str | None = None
    forced: bool = False
    solved: set[str] = field(default_factory=set)  # exercises whose first right try is kept: later ones never count
    wrong: set[str] = field(default_factory=set)  # tries (as sent) found wrong when dropped (a few thousand at most)

    def start(self, cell: int) -> None:
        self.current = cell

    def check(self, cell: int, msg: dict) -> None:
        """A ``check(...)`` call in ``cell``: ``msg`` has the exercise ``id``, the ``answer`` and the ``seed``."""
        eid, s = msg.get("id"), msg.get("seed")
        if cell < self.first or type(eid) is not str:  # a cell run again after a crash: heard the first time
            return
        eid = _exercise_id(eid)
        if eid not in self.answers:
            if len(self.answers) >= _MOST_IDS:  # a loop checking made-up ids: keep the first ones
                return
            self.seen.append(eid)
        chosen = msg.get("chosen")
        if type(chosen) is str and len(chosen) <= 1_000 and len(self.chosen) < 3:
            self.chosen.add(chosen)
        tries = self.answers.setdefault(eid, [])
        if eid in self.solved:  # its first right try is kept: a later one never counts (engine.best_of)
            return
        if len(tries) >= _MOST_TRIES:  # a loop checking one exercise: keep the first tries and the latest ones
            dropped = tries.pop(_MOST_TRIES // 2)
            if self._right(eid, dropped):  # ... and the first right one, whatever comes after
                tries[_MOST_TRIES // 2 :] = [dropped]
                self.solved.add(eid)
                return
        tries.append((msg.get("answer"), s if type(s) is str else None))

    def _right(self, eid: str, tried: tuple[Any, str | None]) -> bool:
        """Whether a try (as heard) is right: checked as :func:`_score` checks it, in a session of the grader's."""
        key = json.dumps([eid, tried], sort_keys=True, default=str)
        if key in self.wrong:
            return False
        answer, s = tried
        try:
            unit = engine.get(eid).unit
        except KeyError:
            return False
        found = engine.best_of(eid, [(_unwire(answer, unit), self.seed if self.forced else s)])
        if found is not None and found[2].correct:
            return True
        if len(self.wrong) < 4_096:
            self.wrong.add(key)
        return False

    def end(self, cell: int, error: str | None) -> None:
        """``cell`` ran to its end: ``error`` None, ``"timeout"`` (the runner stopped it) or one line."""
        if cell < self.first:
            return
        if error is None:
            self.ok.append(cell)
        elif error == "timeout":
            self.errors[cell] = (
                f"stopped after {self.cell_timeout:g} s, the time limit of a cell (--cell-timeout): an endless loop?"
            )
        else:
            self.errors[cell] = answer_text.short_text(error, 300)
        self.first = cell + 1

    def stopped(self, how: str, status: int | None) -> None:
        """The kernel is done: ``"done"`` (no cell left), ``"notebook"`` (the notebook's time limit),
        ``"timeout"`` (a cell did not stop at its limit) or ``"exit"`` (it died, with ``status``, or never
        started)."""
        count, current = self.count, self.current
        if how == "done":
            self.first = count + 1
        elif how == "notebook":
            where = current if current is not None and current >= self.first else self.first
            self.errors[where] = f"stopped: the notebook's time limit of {self.timeout:g} s was reached (--timeout)"
            if where < count:
                self.errors[where + 1] = f"cells {where + 1} to {count} not run (the notebook's time limit)"
            self.first = count + 1
        elif current is None or current < self.first:  # the kernel failed before it reached the notebook's cells
            self.errors[self.first] = "the grader's kernel failed before this cell ran"
            self.first = count + 1 if current is None else self.first
        elif how == "timeout":
            self.errors[current] = (
                f"stopped after {self.cell_timeout:g} s, the time limit of a cell (--cell-timeout), "
                "and did not stop when asked: an endless loop?"
            )
            self.first = current + 1
        else:
            self.errors[current] = (
                f"the notebook's process ended during this cell (exit status {status}): os._exit(), "
                "a crash, or too little memory"
            )
            self.first = current + 1


async def _execute(path: Path, sources: list[str], tally: _Tally, job: dict) -> None:
    """Run the notebook's cells in a kernel, and in a new one after each crash or hang (running again the
    cells that had succeeded), until every cell is accounted for."""
    from llmcourse.exercises import kernel  # nbclient takes half a second to import

    kernels = 0
    while tally.first <= tally.count:
        if kernels == _MAX_KERNELS:
            tally.errors[tally.first] = f"not run: the notebook's process failed {kernels} times"
            return
        kernels += 1
        tally.current = None
        todo = [n for n in tally.ok if n < tally.first] + list(range(tally.first, tally.count + 1))
        await kernel.run(path, [(n, _runnable(sources[n - 1])) for n in todo], tally, job)


def _sync(coro: Any) -> Any:
    """Run a coroutine to its end from synchronous code, in a thread of its own where an event loop already
    runs (a teacher's Jupyter notebook; interrupting the caller then cancels the coroutine)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    running: list[asyncio.Task] = []

    async def main() -> Any:
        running.append(asyncio.current_task())
        return await coro

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(asyncio.run, main())
        try:
            return future.result()
        except BaseException:
            if running:
                with contextlib.suppress(RuntimeError):  # (its loop may be closed already)
                    running[0].get_loop().call_soon_threadsafe(running[0].cancel)
            raise


def _score(
    ids: list[str],
    answers: dict[str, list[tuple[Any, str | None]]],
    seed_text: str | None,
    forced: bool,
    tally_chosen: set[str] = frozenset(),
) -> tuple[list[tuple[str, engine.Result | None]], list[str | None], list[str]]:
    """Check the answers heard, in a session of the grader's own (nothing a notebook did to its own counts): of
    each exercise's tries, the one that counts as :func:`~llmcourse.exercises.engine.progress` says (the first
    right one, else the last; :func:`~llmcourse.exercises.engine.best_of`), so a later experiment does not undo a
    solved exercise. The rows, the variants graded and a note per id that names no exercise."""
    notes: list[str] = []
    rows: list[tuple[str, engine.Result | None]] = []
    variants: list[str | None] = []
    if forced:
        chosen = sorted(c for c in tally_chosen if c != seed_text)
        if chosen:
            names = ", ".join(answer_text.short_text(c, 40) for c in chosen[:3])
            notes.append(
                f"the notebook chose student {names} with student(), not --seed {answer_text.short_text(seed_text, 40)}"
                ": graded as --seed (check that the id is the student's)"
            )
    with engine.own_session():
        for eid in ids:
            try:
                engine.get(eid)
            except KeyError:
                notes.append(f"check({answer_text.quoted(eid)}, ...) names no exercise")
                continue
            if eid not in answers:
                rows.append((eid, None))
                continue
            unit = engine.get(eid).unit
            tries = [(_unwire(answer, unit), seed_text if forced else s) for answer, s in answers[eid]]
            _, graded, result = engine.best_of(eid, tries)
            variants.append(graded)
            rows.append((eid, result))
    return rows, variants, notes


def _load_checker() -> None:
    """Import every exercise definition and every module the checker uses now, before any cell runs: the grade
    is computed with these (a notebook that rewrites the package's files on disk changes nothing)."""
    import difflib  # noqa: F401 (engine.get's suggestions)

    with engine.own_session():
        for ex in engine.exercises():
            engine.expected_answer(ex, ex.variant(None))
            for answer in (None, "1", _unwire({"int": "1"}), _unwire({"refused": True}), engine.NO_ANSWER):
                engine.check(ex.id, answer)


def grade(
    path: str | Path,
    seed: Any = None,
    *,
    cell_timeout: float = CELL_TIMEOUT,
    timeout: float = NOTEBOOK_TIMEOUT,
    memory: int = MEMORY,
) -> Grading:
    """Execute a notebook in a kernel of its own (its address space at most ``memory`` bytes) and grade the
    answers its ``check`` calls gave (see the module)."""
    path = Path(path)
    sources = _cells(path)
    forced = seed is not None
    seed_text = answer_text.seed_text(seed) if forced else None
    tally = _Tally(len(sources), cell_timeout, timeout, seed=seed_text, forced=forced)
    _load_checker()
    job = {"deadline": time.monotonic() + timeout, "cell_timeout": cell_timeout, "grace": _GRACE, "memory": memory}
    if any("check" in s for s in sources):  # no check(...) anywhere: nothing to grade, nothing to run
        _sync(_execute(path, sources, tally, {**job, "seed": seed_text, "forced": forced}))
    ids = list(dict.fromkeys([_exercise_id(m) for s in sources for m in _CHECK_CALL.findall(s)] + tally.seen))
    rows, variants, notes = _score(ids, tally.answers, seed_text, forced, tally.chosen)
    lines = [f"code cell {n}: {e}" for n, e in sorted(tally.errors.items())]
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
    return [(ex.id, engine.expected_answer(ex, ex.variant(seed))) for ex in found]


def _shown(line: str) -> str:
    """A report line as printed: characters that do not print as ``?``, at most :data:`_WIDEST` characters."""
    return answer_text.short_text(line, _WIDEST)


def _seconds(flag: str) -> Any:
    """The argparse type of a time flag: a finite, positive number of seconds, or an error naming ``flag``."""

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(
                f"{flag} must be a finite number of seconds above 0, e.g. {flag} 30; got {answer_text.quoted(text)}"
            )
        return value

    return read


def _gib(text: str) -> int:
    """The argparse type of ``--memory``: a finite number of GiB (at least 1: a kernel alone takes about 0.7 GiB of
    address space, and below 1 it could not start), as bytes."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 1 <= value <= 1 << 20):
        raise argparse.ArgumentTypeError(
            f"--memory must be a finite number of GiB from 1 up (a kernel alone takes about 0.7), e.g. --memory 4; "
            f"got {answer_text.quoted(text)}"
        )
    return int(value * (1 << 30))


def _line(exercise_id: str, result: engine.Result | None) -> str:
    if result is None:
        return f"  {exercise_id}  0/1  not run (its cell did not reach check)"
    if result.correct:
        return f"  {exercise_id}  1/1  correct"
    if result.status == "blank" and result.message.startswith("No answer given"):
        return f"  {exercise_id}  0/1  checked without an answer: give it as check({exercise_id!r}, your_answer)"
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
    print(f"answer key ({'the book' if seed is None else 'student ' + answer_text.short_text(seed, 80)}'s variants)")
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
        type=_seconds("--cell-timeout"),
        default=CELL_TIMEOUT,
        help=f"seconds one cell may run (default {CELL_TIMEOUT:g})",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds("--timeout"),
        default=NOTEBOOK_TIMEOUT,
        help=f"seconds the whole notebook may run (default {NOTEBOOK_TIMEOUT:g})",
    )
    parser.add_argument(
        "--memory",
        type=_gib,
        default=MEMORY,
        metavar="GIB",
        help=f"GiB of memory the notebook's kernel may use (default {MEMORY / (1 << 30):g}); a cell past it fails",
    )
    parser.add_argument(
        "--key",
        metavar="EXERCISE|CHAPTER",
        help="print the expected answers (the teacher's key) of an exercise or a chapter for --seed's variants",
    )
    args = parser.parse_args(argv)
    if args.key is not None:
        return _print_key(args.key, answer_text.seed_text(args.seed))
    if args.notebook is None:
        parser.error("give a notebook to grade (or --key EXERCISE for the answer key)")
    path = Path(args.notebook)
    if not path.is_file():
        print(f"error: no notebook at {path}", file=sys.stderr)
        return 2
    try:
        try:
            result = grade(path, args.seed, cell_timeout=args.cell_timeout, timeout=args.timeout, memory=args.memory)
        except Exception as exc:  # an unreadable notebook
            print(f"error: could not read {path}: {answer_text.short_text(exc, 200)}", file=sys.stderr)
            return 2
        print(_shown(f"grading {path.name} ({result.graded_on()})"))
        if not result.rows:
            print("  no exercises found: the notebook makes no check(...) call")
            for e in result.errors:
                print(_shown(f"  error in {e}"))
            return 1
        for exercise_id, r in result.rows:
            print(_shown(_line(exercise_id, r)))
        for e in result.errors:
            print(_shown(f"  error in {e}"))
        print(f"score: {result.score}/{len(result.rows)}")
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
