"""A fuzz test of the grader (``python -m llmcourse check``): a battery of hostile student notebooks, dealt by a seeded
generator, each graded through the command line, bounded in time (a short cell limit, a notebook limit) and in
memory (``--memory``). Whatever the cells do, the grader

* ends within its time bound and returns a report (exit status 0, a score line, no traceback);
* scores only real answers: an exercise is 1/1 exactly where a cell gave its right answer (hand arithmetic below),
  whatever the notebook did to the checker, printed or sent meanwhile;
* prints report lines of at most 200 printable characters (no escape sequence the notebook wrote);
* leaves no process the notebook started alive, even one started in a session of its own with an empty
  environment just before the kernel crashed, or one that keeps forking away from its parent;
* leaves no child of its own behind (no kernel, no orphan, no zombie).

The battery is :data:`CASES` (hostile cells) and :data:`GARBAGE` (answers that are not answers, each checked
against an exercise), dealt over :data:`NOTEBOOKS` notebooks; the module's last test counts them.

Hand arithmetic of the right answers (the book's default variants):

* ``tokens_ex2``: 2,000 prompt tokens / 300 answer tokens = 6.667;
* ``kv_cache_ex1``: Qwen2.5-72B's KV bytes per token, 2 (K and V) x 80 layers x 8 KV heads x 128 x 2 bytes
  = 327,680 B = 320 KiB.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

import pytest
from processes import running

from llmcourse.exercises.cli import main as cli_main

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; the kill is Linux's")

RIGHT = {"tokens_ex2": "6.667", "kv_cache_ex1": "Q_(320, 'KiB')"}  # see the module's docstring
NEVER_RIGHT = ("tokens_ex4", "kv_cache_ex2")  # given only garbage and wrong answers
SEED = 36
NOTEBOOKS = 5
CELL_TIMEOUT = 3  # seconds
NOTEBOOK_TIMEOUT = 90  # seconds: reached by no notebook of the battery (each cell is stopped at CELL_TIMEOUT)
MEMORY_GIB = 1.5

#: Answers that are not answers: each checked (by a cell of its own) against an exercise, right or never right.
GARBAGE = [
    "None",
    "True",
    "...",
    "float('nan')",
    "float('inf')",
    "-float('inf')",
    "10**5000",
    "-(10**5000)",
    "'x' * 1_000_000",
    "'6.667' * 5_000",
    "'6.667 ' + 'x' * 50_000",
    "'\\x1b[2J correct 1/1 score: 99/99'",
    "''",
    "'   '",
    "[6.667]",
    "(6.667,)",
    "{'tokens_ex2': 6.667}",
    "{6.667}",
    "b'6.667'",
    "6.667j",
    "object()",
    "Q_(float('nan'), 'KiB')",
    "Q_(float('inf'), '')",
    "Q_(6.667, 'GiB')",  # a size where a ratio is asked
    "Q_(320, 'ms')",  # a time where a size is asked
    "Q_(320, 'KB')",  # kB for KiB: a slip, wrong
    "Q_([1, 2], 'KiB')",
    "__import__('pint').UnitRegistry().Quantity(6.667, 'm')",
    "__import__('decimal').Decimal('NaN')",
    "Raises()",
    "Lies()",
    "Tower()",
]

_HELPERS = """
class Raises:  # every method raises, even the ones a message would call
    def __float__(self): raise KeyboardInterrupt
    def __str__(self): raise SystemExit(1)
    __repr__ = __str__
    def __getattr__(self, name): raise RuntimeError(name)
class Lies(float):  # a float that says it equals everything
    def __eq__(self, other): return True
    def __str__(self): return '6.667'
    __hash__ = float.__hash__
class Tower:
    def __index__(self): return 10**6
    def __int__(self): return 10**6
"""


def _cases(pids: Path, helper: Path, sleep: str) -> list[tuple[str, str, str]]:
    """The hostile cells: (name, code, how it ends: "cell" in the kernel, "kill" the kernel, "last" only at the
    end: it keeps the grader from hearing what follows). Each process a cell starts writes its number to ``pids``."""
    p, h, s = str(pids), str(helper), sleep
    record = f"\nwith open({p!r}, 'a') as f:\n    f.write(f'{{child.pid}}\\n')"
    return [
        ("raise ValueError with an escape sequence", "raise ValueError('\\x1b[2J' + 'y' * 5000)", "cell"),
        ("raise KeyboardInterrupt", "raise KeyboardInterrupt", "cell"),
        ("raise SystemExit", "raise SystemExit('\\x1b]0;title\\x07')", "cell"),
        ("exit()", "exit()", "cell"),
        (
            "an exception whose message raises",
            "class E(Exception):\n    def __str__(self): raise E()\nraise E()",
            "cell",
        ),
        ("deep recursion", "def f(): return f()\nf()", "cell"),
        ("input()", "input('your answer? ')", "cell"),
        ("an endless loop", "while True:\n    pass", "cell"),
        ("forged verdict lines on stdout", "print('  tokens_ex4  1/1  correct\\nscore: 99/99\\n' * 100)", "cell"),
        ("escape sequences on fd 1 and 2", "os.write(1, b'\\x1b[2J' * 1000)\nos.write(2, b'score: 9/9\\n')", "cell"),
        ("a huge output", "sys.stdout.write('z' * 20_000_000)", "cell"),
        ("an allocation past --memory", "big = bytearray(3 << 30)", "cell"),
        ("a slow allocation past --memory", "big = [bytearray(1 << 24) for _ in range(200)]", "cell"),
        ("the environment cleared", "os.environ.clear()", "cell"),
        ("the checker's rule patched", "engine._close = lambda *a: True\ncheck('tokens_ex4', 1)", "cell"),
        (
            "the expected answer patched",
            "engine.expected_answer = lambda ex, v: Q_(1, ex.unit or '')\ncheck('kv_cache_ex2', 1)",
            "cell",
        ),
        ("Result.correct patched", "engine.Result.correct = property(lambda r: True)\ncheck('tokens_ex4', 2)", "cell"),
        (
            "a forged end of cell",
            "g = grader()\ng._send(kind='end', error=None)\ng._send(kind='end', error=[1])",
            "cell",
        ),
        ("a forged refusal", "grader()._send(kind='check', id='kv_cache_ex2', answer={'refused': 'ok: 1/1'})", "cell"),
        ("a made-up id", "check('tokens_ex99', 6.667)\ncheck(12, 6.667)\ncheck('\\x1b[2J' * 50, 1)", "cell"),
        ("check() without an answer", "check('kv_cache_ex2')\ncheck()", "cell"),
        ("a loop of wrong tries", "for i in range(300):\n    check('tokens_ex4', i + 1000)", "cell"),
        (
            "start_new_session child",
            f"child = subprocess.Popen([{s!r}, '300'], start_new_session=True){record}",
            "cell",
        ),
        (
            "setsid child with no environment",
            f"child = subprocess.Popen([{s!r}, '301'], preexec_fn=os.setsid, env={{}}){record}",
            "cell",
        ),
        (
            "an orphan (double fork)",
            f"subprocess.run([sys.executable, {h!r}, 'orphan', {p!r}, {s!r}], env={{}}, timeout=20)",
            "cell",
        ),
        (
            "a process that keeps forking away",
            f"subprocess.Popen([sys.executable, {h!r}, 'hop', {p!r}, {s!r}], start_new_session=True)\ntime.sleep(0.5)",
            "cell",
        ),
        (
            "a forked kernel child in a new session",
            f"pid = os.fork()\nif pid == 0:\n    os.setsid()\n    os.execv({s!r}, [{s!r}, '303'])\n"
            f"with open({p!r}, 'a') as f:\n    f.write(f'{{pid}}\\n')",
            "cell",
        ),
        ("os._exit", "os._exit(1)", "kill"),
        ("SIGKILL to itself", "os.kill(os.getpid(), 9)", "kill"),
        (
            "a new-session child with no environment, then a crash",
            f"child = subprocess.Popen([{s!r}, '304'], start_new_session=True, env={{}}){record}\nos._exit(7)",
            "kill",
        ),
        (
            "an orphan, then SIGKILL",
            f"subprocess.run([sys.executable, {h!r}, 'orphan', {p!r}, {s!r}], env={{}}, timeout=20)\nos.kill(os.getpid(), 9)",
            "kill",
        ),
        (
            "a loop that swallows the time limit",
            "while True:\n    try:\n        time.sleep(60)\n    except BaseException:\n        pass",
            "kill",
        ),
        ("the grader's pipe closed", "g = grader()\nos.close(g._out)\ncheck('tokens_ex4', 3)", "last"),
        ("check replaced", "import llmcourse.exercises as x\nx.check = lambda *a, **k: True\ncheck = x.check", "last"),
    ]


_HELPER = """
import os, sys, time
pids, sleep = sys.argv[2], sys.argv[3]
def record(pid):
    with open(pids, 'a') as f:
        f.write(f'{pid}\\n')
if sys.argv[1] == 'orphan':  # a grandchild in a session of its own; its parent ends at once
    if os.fork() == 0:
        os.setsid()
        grandchild = os.fork()
        if grandchild == 0:
            os.execve(sleep, [sleep, '302'], {})
        record(grandchild)
        os._exit(0)
    os.wait()
else:  # 'hop': every 50 ms a new process in a new session, and the old one ends (for up to 300 s)
    for _ in range(6000):
        record(os.getpid())
        if os.fork() != 0:
            os._exit(0)
        os.setsid()
        time.sleep(0.05)
"""


def _deal(cases: list[tuple[str, str, str]]) -> list[list[tuple[str, str]]]:
    """The battery dealt over the notebooks (seeded: the same notebooks at every run): each notebook's cells as
    (what, code), with each right answer given in a cell of its own in some notebooks, and the cells that kill the
    kernel at most two to a notebook (the grader starts at most six kernels for one)."""
    rng = random.Random(SEED)
    kills = [c for c in cases if c[2] == "kill"]
    last = [c for c in cases if c[2] == "last"]
    cells = [(name, code) for name, code, how in cases if how == "cell"]
    ids = [*RIGHT, *NEVER_RIGHT]
    cells += [(f"garbage {g}", f"check({ids[i % len(ids)]!r}, {g})") for i, g in enumerate(GARBAGE)]
    rng.shuffle(cells)
    rng.shuffle(kills)
    books: list[list[tuple[str, str]]] = [[] for _ in range(NOTEBOOKS)]
    for i, cell in enumerate(cells):
        books[i % NOTEBOOKS].append(cell)
    for i, (name, code, _) in enumerate(kills):
        books[i % NOTEBOOKS].append((name, code))
    for i, (name, code, _) in enumerate(last):
        books[(i + 1) % NOTEBOOKS].append((name, code))
    for i, book in enumerate(books):
        tail = [c for c in book if c[0] in {n for n, _, _ in last}]
        body = [c for c in book if c not in tail]
        rng.shuffle(body)
        if i % 2 == 0:  # the right answers, in some notebooks, somewhere among the hostile cells
            for eid, right in RIGHT.items():
                body.insert(rng.randrange(len(body) + 1), (f"right {eid}", f"check({eid!r}, {right})"))
        book[:] = body + tail
    return books


def _setup(helpers: str) -> str:
    return (
        "import gc, os, subprocess, sys, time\nfrom llmcourse import Q_\nfrom llmcourse.exercises import check, engine\n"
        "def grader():\n    return next(o for o in gc.get_objects() if type(o).__name__ == '_Cells')\n" + helpers
    )


def _children() -> set[int]:
    """The processes whose parent is this one (zombies included)."""
    out = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                out.add(int(name))
    return out


def _battery(tmp_path: Path) -> tuple[list[list[tuple[str, str]]], Path]:
    pids, helper = tmp_path / "pids", tmp_path / "helper.py"
    sleep = shutil.which("sleep") or "/bin/sleep"
    helper.write_text(_HELPER)
    cases = _cases(pids, helper, sleep)
    return _deal(cases), pids


@pytest.mark.slow
@pytest.mark.parametrize("index", range(NOTEBOOKS))
def test_hostile_notebooks_are_graded_and_leave_nothing(tmp_path, capsys, index):
    books, pids = _battery(tmp_path)
    book = books[index]
    cells = [_setup(_HELPERS)] + [code for _, code in book]
    nb = tmp_path / "nb.md"
    nb.write_text("".join(f"```python\n{c}\n```\n\n" for c in cells))
    before = _children()
    start = time.monotonic()
    code = cli_main(
        [str(nb), "--cell-timeout", str(CELL_TIMEOUT), "--timeout", str(NOTEBOOK_TIMEOUT), "--memory", str(MEMORY_GIB)]
    )
    took = time.monotonic() - start
    out = capsys.readouterr().out
    what = "\n".join(f"  cell {i + 2}: {name}" for i, (name, _) in enumerate(book))
    assert code == 0, f"{out}\n{what}"
    # within its bound: the notebook's limit, plus the grace after a cell's limit and the kernels' kills (a bound,
    # not a timing: the battery's notebooks end well before their limit)
    assert took < NOTEBOOK_TIMEOUT + 30, f"{took:.0f} s\n{what}"
    assert "Traceback" not in out and re.search(r"^score: \d+/\d+$", out, re.M), out
    assert "time limit of 90 s was reached" not in out, f"{out}\n{what}"
    assert all(len(line) <= 200 and line.isprintable() for line in out.splitlines()), out
    scores = dict(re.findall(r"^  (\S+)\s+([01])/1\b", out, re.M))
    given = {eid for eid in RIGHT if any(name == f"right {eid}" for name, _ in book)}
    assert {eid for eid, s in scores.items() if s == "1"} == given, f"{out}\n{what}"
    assert "99/99" not in out and "9/9" not in out
    # what the notebook started is dead (the kill is at once; the wait is for the kernel's /proc to settle)
    started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    deadline = time.monotonic() + 5
    while any(map(running, started)) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [p for p in started if running(p)]
    for p in alive:  # (not left behind by a failing test)
        os.kill(p, 9)
    assert not alive, f"{len(alive)} of {len(started)} processes the notebook started outlived the grading\n{what}"
    left = _children() - before
    assert not left, f"the grader left children of its own: {sorted(left)}"


def test_the_battery_is_counted(tmp_path):
    """The battery's size, for the issue's closing note: every case is dealt to a notebook once."""
    books, _ = _battery(tmp_path)
    dealt = [name for book in books for name, _ in book if not name.startswith("right ")]
    cases = _cases(Path("p"), Path("h"), "sleep")
    assert len(dealt) == len(cases) + len(GARBAGE) == len(set(dealt))
    assert len(dealt) >= 60, len(dealt)
