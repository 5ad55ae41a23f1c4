"""Hostile input: the checker answers anything, the grader survives any notebook, and answers do not leak.

Hand arithmetic used below: Llama 3.1 70B caches 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B =
320 KiB per token (kv_cache_ex1, the book's variant); tokens_ex2 reads 2,000 / 300 = 6.667 prompt tokens per
answer token; tokens_ex4 streams 900 tokens at 30 per second in 30 s; weights_ex4 needs ceil(405.853e9 x 2 B /
(0.9 x 80 GB)) = ceil(11.27) = 12 GPUs.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import numbers
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from exercise_solutions import solve
from processes import running

from llmcourse import Q_
from llmcourse.exercises import answers, check, exercises, get, reset
from llmcourse.exercises.cli import answer_key, grade
from llmcourse.exercises.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
ALL = exercises()
IDS = [e.id for e in ALL]
STATUSES = {"correct", "wrong", "unit", "blank", "invalid", "unknown"}


@pytest.fixture(autouse=True)
def _fresh_session():
    reset()
    yield
    reset()


def _answer(ex, seed=None):
    """The reference solution's answer (tests/exercise_solutions.py) as a quantity in the exercise's unit."""
    q = solve(ex.id, ex.variant(seed))
    q = q if hasattr(q, "units") else Q_(float(q), "")
    return q.to(ex.unit) if ex.unit else q.to("")


# --- the checker never raises ---------------------------------------------------------------------------------
HUGE = [10**400, "1" * 400, "10**10**6", "10**10**10", Q_(10**400, "KiB"), -(10**400), "1e400 KiB", "9" * 99]


@pytest.mark.parametrize("exercise_id", IDS)
def test_huge_numbers_are_refused_in_every_exercise(exercise_id):
    """10**400 (no float holds it), a 400-digit string, a power tower and Q_(10**400, 'KiB') each get a message."""
    for answer in HUGE:
        r = check(exercise_id, answer)
        assert r.status in {"invalid", "unit", "wrong"} and r.message and str(r), (answer, r)


def test_power_tower_is_not_evaluated():
    """'10**10**10' is refused at once, not computed (a number with ten billion digits)."""
    start = time.monotonic()
    r = check("kv_cache_ex1", "10**10**10 KiB")
    assert r.status == "invalid" and time.monotonic() - start < 1


class _FloatRaises(float):
    def __float__(self):
        raise RuntimeError("no float for you")


class _ReprRaises:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


class _FakeReal:
    """Registered as numbers.Real, but nothing works."""

    def __float__(self):
        raise ValueError("not really")

    def __repr__(self):
        raise ValueError("not even this")


numbers.Real.register(_FakeReal)


class _GetattrRaises:
    def __getattr__(self, name):
        raise RuntimeError(f"no attribute {name}")


class _ClassRaises:
    @property
    def __class__(self):
        raise RuntimeError("no class")


class _FloatExits(float):
    def __float__(self):
        raise SystemExit(1)


class _HugeShape:
    shape = ()

    def item(self):
        return 10**400


HOSTILE = [  # factories: pytest itself would trip over some of these objects
    lambda: _FloatRaises(1.0),
    lambda: _ReprRaises(),
    lambda: _FakeReal(),
    lambda: _GetattrRaises(),
    lambda: _ClassRaises(),
    lambda: _FloatExits(2.0),
    lambda: _HugeShape(),
    lambda: Q_(_FakeReal(), "KiB"),
    lambda: Q_(1, "KiB**20"),
    lambda: Q_(1e300, "YiB"),
    lambda: iter([1]),
    lambda: lambda: 320,  # a function
    lambda: type,
    lambda: b"320 KiB",
    lambda: "\x00\x1b[31m320",
    lambda: "x" * 1_000_000,
]


@pytest.mark.parametrize("make", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_objects_get_a_message(make):
    """An answer whose methods raise (even SystemExit), or whose size or unit is absurd, gets feedback."""
    r = check("kv_cache_ex1", make())
    assert r.status in STATUSES - {"correct"} and r.message and str(r) and r._repr_html_()


class _StrHashRaises(str):
    def __hash__(self):
        raise RuntimeError("no hash")

    def __eq__(self, other):
        raise RuntimeError("no eq")


BAD_IDS = [["kv_cache_ex1"], {"kv_cache_ex1": 1}, None, 42, 1.5, _ReprRaises(),
           "kv_cache_ex" * 100_000, "", "\x1b[2J", b"kv_cache_ex1"]  # fmt: skip


@pytest.mark.parametrize("exercise_id", BAD_IDS, ids=[f"id{i}" for i in range(len(BAD_IDS))])
def test_any_exercise_id_gets_feedback(exercise_id):
    """check(["kv_cache_ex1"], 1) and other odd ids answer 'unknown' (or check the exercise the string names)."""
    r = check(exercise_id, 1)
    assert r.status in STATUSES and r.message and str(r)
    assert r.status == "unknown" and "\x1b" not in str(r)


def test_a_str_subclass_names_its_exercise():
    """A str subclass with a broken hash is read as the plain string it holds."""
    assert check(_StrHashRaises("kv_cache_ex1"), Q_(320, "KiB")).correct


# --- decimal commas, dimensions, rounding ------------------------------------------------------------------------
def test_decimal_comma_gets_its_own_hint():
    """'6,667' (a decimal comma where 6.667 is right) and '0,5 KiB' are told to use a decimal point."""
    r = check("tokens_ex2", "6,667")
    assert r.status == "wrong" and "decimal comma" in r.message
    r = check("kv_cache_ex1", "0,5 KiB")
    assert r.status == "invalid" and "decimal comma" in r.message and "0.5" in r.message
    assert check("tokens_ex2", "6.667").correct
    assert check("kv_cache_ex1", "327,680 B").correct  # a thousands separator still reads


@pytest.mark.parametrize(
    ("exercise_id", "answer", "words", "not_words"),
    [
        ("tokens_ex4", Q_(240, "s"), None, "bits vs bytes"),  # 8 x 30 s: bits are not a slip of time
        ("tokens_ex4", Q_(30_000, "s"), "ms vs s", "KiB"),
        ("tokens_ex2", 6.667 * 1.024, None, "KiB vs kB"),  # a count has no KiB
        ("tokens_ex2", 666.7, "percentage", "bits"),
        ("kv_cache_ex1", Q_(40, "KiB"), "bits vs bytes", None),  # 320 / 8
        ("kv_cache_ex1", Q_(320 * 60, "KiB"), None, "per minute"),  # bytes have no minutes
    ],
)
def test_slips_match_the_answers_kind(exercise_id, answer, words, not_words):
    """Bytes, time and counts each get their own slips."""
    msg = check(exercise_id, answer).message
    assert words is None or words in msg, msg
    assert not_words is None or not_words not in msg, msg


def test_money_slip_is_per_million():
    """A cost given per token instead of per million tokens is diagnosed as such."""
    ex = get("first_estimate_ex7")
    r = check(ex.id, _answer(ex) / 1e6)
    assert "per million" in r.message, r.message


@pytest.mark.parametrize("exercise_id", [e.id for e in ALL if not e.integer])
def test_no_rounding_hint_where_the_answer_is_not_whole(exercise_id):
    """Rounding is a slip of whole-number answers only."""
    ex = get(exercise_id)
    right = _answer(ex)
    for factor in (0.9, 1.3, 3.7):
        assert "round" not in check(ex.id, right * factor).message


def test_rounding_hint_for_a_count():
    """A count given as the unrounded quotient (11.27 GPUs where 12 are needed) is told to round."""
    r = check("weights_ex4", 11.27)
    assert r.status == "wrong" and "whole number" in r.message and "round" in r.message


# --- answers do not leak -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("exercise_id", IDS)
def test_feedback_never_gives_the_exact_ratio(exercise_id):
    """An answer 0.00313 times the right one hears 'about 300x too small', never 0.00313 or 319.5."""
    ex = get(exercise_id)
    r = check(ex.id, _answer(ex) * 0.00313)
    assert "about 300x too small" in r.message, r.message
    assert not hasattr(r, "ratio")
    near = check(ex.id, _answer(ex) * 1.2345)
    assert "1.23" not in near.message and ("too " in near.message or "whole number" in near.message)


def test_expected_value_is_the_teachers():
    """An exercise gives no expected value; the teacher's key does (320 KiB for the book's kv_cache_ex1)."""
    ex = get("kv_cache_ex1")
    with pytest.raises(AttributeError, match="--key"):
        ex.expected()
    [(eid, q)] = answer_key("kv_cache_ex1")
    assert eid == "kv_cache_ex1" and math.isclose(q.to("B").m, 327_680)
    assert {i for i, _ in answer_key("kv_cache")} == {e.id for e in exercises("kv_cache")}


def test_teacher_key_on_the_command_line(capsys):
    """`check --key EXERCISE --seed S` prints that student's expected answer."""
    assert cli_main(["check", "--key", "weights_ex4"]) == 0
    assert re.search(r"weights_ex4\s+12\b", capsys.readouterr().out)
    assert cli_main(["--key", "no_such_ex1"]) == 2


def test_solutions_are_not_installed():
    """The reference solutions live under tests/, not in the package."""
    assert importlib.util.find_spec("llmcourse.exercises.solutions") is None
    assert (ROOT / "tests" / "exercise_solutions.py").is_file()


def _readme_exercises() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("## Exercises", 1)[1].split("\n## ", 1)[0]


def test_readme_example_shows_no_live_answer():
    """Every check(...) example in the README's Exercises section is a wrong answer for the book's variant."""
    calls = re.findall(r'check\("(\w+)", (Q_\([^)]*\)|[\d.]+)\)', _readme_exercises())
    assert calls
    for eid, literal in calls:
        value = eval(literal, {"Q_": Q_})  # a literal from the README, e.g. Q_(40, "KiB")
        assert not check(eid, value).correct, (eid, literal)


# --- the grader --------------------------------------------------------------------------------------------------
def _notebook(tmp_path: Path, cells: list[str], name: str = "nb.md") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"```python\n{c}\n```\n\n" for c in cells))
    return path


def test_empty_notebook_finds_no_exercises(tmp_path, capsys):
    """A notebook with no check(...) call says so and exits non-zero."""
    assert cli_main([str(_notebook(tmp_path, []))]) == 1
    assert "no exercises found" in capsys.readouterr().out
    assert cli_main([str(_notebook(tmp_path, ["x = 1"], "one.md")), "--cell-timeout", "5"]) == 1


def test_hostile_notebook_is_graded_cell_by_cell(tmp_path, capsys):
    """Each way a cell can fail is reported for that cell; --seed wins over reset() and student(); a forged
    session does not score; the other cells are graded (bob's answers are the reference solutions)."""
    bob = {eid: _answer(get(eid), "bob") for eid in ("kv_cache_ex3", "tokens_ex4", "weights_ex4", "tokens_ex2")}
    cells = [
        "import os, sys, builtins\nfrom llmcourse import Q_\nfrom llmcourse.exercises import check, reset, student, engine"
        "\nstudent('alice')",
        "class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise E()",
        "raise KeyboardInterrupt",
        f"reset()\ncheck('kv_cache_ex3', Q_({bob['kv_cache_ex3'].m!r}, 'GB'))",
        "raise SystemExit(3)",
        "builtins.print = None\nprint('x')",
        "input()",
        "def f():\n    return f()\nf()",
        "while True:\n    pass",
        f"check('tokens_ex4', Q_({bob['tokens_ex4'].m!r}, 's'))\nengine._SESSION.done.add(('kv_cache_ex1', 'None'))"
        "\nengine._SESSION.tries.clear()",
        "check('kv_cache_ex1', Q_(320, 'KiB'))",  # the book's answer: wrong for bob
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass",
        "os._exit(0)",
        f"check('weights_ex4', {bob['weights_ex4'].m!r})\ncheck('tokens_ex2', 10**400)",
    ]
    nb = _notebook(tmp_path, cells)
    assert cli_main([str(nb), "--seed", "bob", "--cell-timeout", "1"]) == 0
    out = capsys.readouterr().out
    assert "(student bob)" in out
    errors = dict(re.findall(r"error in code cell (\d+): (.*)", out))
    assert set(errors) == {"2", "3", "5", "6", "7", "8", "9", "12", "13"}, out
    assert "could not be printed" in errors["2"] and "KeyboardInterrupt" in errors["3"]
    assert "SystemExit" in errors["5"] and "TypeError" in errors["6"] and "EOFError" in errors["7"]
    assert "RecursionError" in errors["8"] and "time limit" in errors["9"] and "did not stop" in errors["12"]
    assert "process ended" in errors["13"]
    for eid in ("kv_cache_ex3", "tokens_ex4", "weights_ex4"):
        assert re.search(rf"{eid}\s+1/1\s+correct", out), eid
    assert re.search(r"kv_cache_ex1\s+0/1", out) and re.search(r"tokens_ex2\s+0/1.*too large", out)
    assert "score: 3/5" in out and "Traceback" not in out


def test_header_names_the_variant_the_notebook_chose(tmp_path, capsys):
    """Without --seed, the answers are graded on the student the notebook chose, and the header says so."""
    alice = _answer(get("tokens_ex4"), "alice")
    cells = [
        "from llmcourse import Q_\nfrom llmcourse.exercises import check, student\nstudent('alice')",
        f"check('tokens_ex4', Q_({alice.m!r}, 's'))",
    ]
    assert cli_main([str(_notebook(tmp_path, cells)), "--cell-timeout", "5"]) == 0
    out = capsys.readouterr().out
    assert "student alice" in out and "book's default" not in out and "score: 1/1" in out


def test_notebook_time_limit(tmp_path):
    """A notebook past its own time limit is stopped; what it had checked is still graded. The limit is what
    the first cell takes here (the worker's start and imports included, measured first, so that a loaded
    machine does not stop it early) plus 3 s, which the endless second cell then runs into."""
    cells = [
        "from llmcourse.exercises import check\ncheck('tokens_ex2', 6.667)",
        "import time\nwhile True:\n    time.sleep(0.1)",
        "check('tokens_ex4', 30)",
    ]
    (tmp_path / "one").mkdir()
    start = time.monotonic()
    first = grade(_notebook(tmp_path / "one", cells[:1]), cell_timeout=60, timeout=120)
    limit = math.ceil(2 * (time.monotonic() - start)) + 3  # twice the first run's time: the second may start slower
    assert [(i, r is not None and r.correct) for i, r in first.rows] == [("tokens_ex2", True)]
    start = time.monotonic()
    g = grade(_notebook(tmp_path, cells), cell_timeout=60, timeout=limit)
    assert time.monotonic() - start < 2 * limit + 30  # stopped, not left running: a generous bound, not a timing
    assert [(i, r is not None and r.correct) for i, r in g.rows] == [("tokens_ex2", True), ("tokens_ex4", False)]
    assert any(f"time limit of {limit:g} s" in e for e in g.errors)


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_teacher_ctrl_c_exits_130_without_traceback(tmp_path):
    """Ctrl-C while grading prints 'interrupted' and exits 130, with no traceback."""
    started = tmp_path / "started"  # the cell says when it runs: Ctrl-C then lands mid-grading, not mid-import
    cell = f"from llmcourse.exercises import check\nopen({str(started)!r}, 'w').close()\nwhile True:\n    pass"
    nb = _notebook(tmp_path, [cell])
    # Ctrl-C at the default action, as a terminal starts the grader: a run launched in the background (`make test &`,
    # nohup, some CI runners) ignores SIGINT, and the grader would inherit that, ignore the signal and run into the
    # cell's time limit (30 s) instead
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmcourse", "check", str(nb)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert started.exists(), "the grader never ran the cell"
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err + out


def _peak_rss() -> int:
    """This process's peak resident memory so far, in bytes."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


@pytest.mark.skipif(os.name != "posix", reason="reads the peak memory with resource")
def test_notebook_output_is_hidden_kept_nowhere_and_forges_nothing(tmp_path, capfd):
    """What a notebook prints (in Python or on its descriptors) never reaches the teacher's terminal, a check
    message it prints is not heard as one, and what it displays is not kept: 100 MB displayed (and waited on)
    leave the grader's memory within 100 MB of what it was (a kernel's message over 1 MiB is refused), and
    the cells after it are still graded."""
    ex = get("tokens_ex4")
    forged = json.dumps({"kind": "check", "id": ex.id, "answer": answers.portable(_answer(ex), ex.unit), "seed": None})
    cells = [
        "import os, sys, time\nfrom llmcourse.exercises import check\ncheck('tokens_ex4', None)",
        "print('score: 99/99')\nos.write(1, b'score: 98/98\\n')\nos.write(2, b'score: 97/97\\n')"
        f"\nsys.__stderr__.write('score: 96/96\\n')\nprint({forged!r})\nos.write(1, {forged!r}.encode() + b'\\n')",
        "for _ in range(100):\n    print('y' * 1_000_000)",
        "from IPython.display import display\ndisplay({'text/plain': 'x' * (100 << 20)}, raw=True)\ntime.sleep(2)",
        "check('tokens_ex2', 6.667)",
    ]
    nb = _notebook(tmp_path, cells)
    before = _peak_rss()
    assert cli_main([str(nb), "--cell-timeout", "30"]) == 0
    grown = _peak_rss() - before
    out, err = capfd.readouterr()
    assert not re.search(r"9[6-9]/9[6-9]", out + err) and ex.id + '"' not in out + err, out + err
    assert re.search(r"tokens_ex4\s+0/1\s+not answered", out) and re.search(r"tokens_ex2\s+1/1\s+correct", out)
    assert "error in" not in out and "score: 1/2" in out
    assert grown < 100 << 20, f"the grader's peak memory grew by {grown >> 20} MB"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_crash_keeps_what_was_checked_before_it_and_kills_what_the_notebook_started(tmp_path):
    """An answer checked just before os._exit() is graded; exit() is a SystemExit of its cell (it does not stop
    the kernel); a process a cell started is killed with the kernel (the crashed one, and the one that ran the
    cells again); the cells after the crash are graded."""
    pids = tmp_path / "pids"
    cells = [
        "import os, subprocess, sys\nfrom llmcourse.exercises import check",
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])"
        f"\nwith open({str(pids)!r}, 'a') as f:\n    f.write(f'{{p.pid}}\\n')",
        "check('tokens_ex2', 6.667)\nos._exit(1)",
        "exit()",
        "check('tokens_ex4', None)",
    ]
    g = grade(_notebook(tmp_path, cells), cell_timeout=30)
    assert [(i, r is not None and r.correct) for i, r in g.rows] == [("tokens_ex2", True), ("tokens_ex4", False)]
    assert len(g.errors) == 2 and "code cell 3: the notebook's process ended" in g.errors[0], g.errors
    assert g.errors[1].startswith("code cell 4: SystemExit"), g.errors
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2  # the second kernel ran the cell again
    deadline = time.monotonic() + 10
    while any(map(running, started)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(running, started))


def test_a_kernel_that_does_not_start_is_reported(tmp_path, monkeypatch):
    """If the kernel dies before its first cell, the grader says so (and does not wait for it)."""
    from jupyter_client.kernelspec import KernelSpec

    from llmcourse.exercises import kernel

    gone = KernelSpec(argv=[sys.executable, "-c", "pass"], display_name="gone", language="python")
    monkeypatch.setattr(kernel._Specs, "get_kernel_spec", lambda self, name: gone)
    start = time.monotonic()
    g = grade(_notebook(tmp_path, ["from llmcourse.exercises import check\ncheck('tokens_ex2', 6.667)"]), timeout=100)
    assert time.monotonic() - start < 60
    assert g.rows == [("tokens_ex2", None)]
    assert g.errors == ["code cell 1: the grader's kernel failed before this cell ran"]


def test_grade_where_an_event_loop_runs(tmp_path):
    """grade() works where an event loop already runs (as in a teacher's Jupyter notebook), and the cells run
    as in plain Python: a cell may run an event loop of its own (the kernel's is not the cell's), and its
    command line is empty (not the kernel's)."""
    cells = [
        "import argparse, asyncio\nfrom llmcourse.exercises import check\nargparse.ArgumentParser().parse_args()",
        "check('tokens_ex2', asyncio.run(asyncio.sleep(0, 6.667)))",
    ]
    nb = _notebook(tmp_path, cells)

    async def graded():
        return grade(nb, cell_timeout=30)

    g = asyncio.run(graded())
    assert [(i, r is not None and r.correct) for i, r in g.rows] == [("tokens_ex2", True)] and not g.errors


# --- variants: wide pools, and never the book's answer ---------------------------------------------------------------
STUDENTS = [str(i) for i in range(300)]  # the first 20 are test_exercises_sets.py's seeds (answers cached)
#: Every exercise with variants (speculative_ex3 asks for the speed-up at the best draft length, and
#: speculative_ex8's deployments measure a share of the published length, so both spread).
VARIED = [e.id for e in ALL]


def _value(ex, seed):
    return round(float(answer_key(ex.id, seed)[0][1].m), 9)


@pytest.mark.slow
@pytest.mark.parametrize(
    "exercise_id",
    VARIED,
)
def test_variants_are_spread(exercise_id):
    """300 student ids draw at least 20 different answers (counted until the 20th), and two of the first 30
    students share an answer in at most 1 pair in 10."""
    ex = get(exercise_id)
    first = [_value(ex, seed) for seed in STUDENTS[:30]]
    shared = sum(k * (k - 1) / 2 for k in Counter(first).values()) / (30 * 29 / 2)
    assert shared <= 0.10, shared
    seen = set(first)
    for seed in STUDENTS[30:]:
        if len(seen) >= 20:
            break
        seen.add(_value(ex, seed))
    assert len(seen) >= 20, f"{len(seen)} different answers over {len(STUDENTS)} students"


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", VARIED)
def test_the_books_answer_fails_for_students(exercise_id):
    """The book's printed answer is not accepted for a student's variant (here, 20 students)."""
    ex = get(exercise_id)
    [(_, book)] = answer_key(ex.id)
    for seed in STUDENTS[:20]:
        assert not check(ex.id, book, seed=seed).correct, seed


def test_variant_is_drawn_again_while_the_books_answer_would_pass():
    """An exercise whose pool often repeats the book's answer still deals every student another one."""
    from llmcourse.exercises.engine import Exercise

    ex = Exercise(
        id="toy_ex1",
        title="toy",
        story="{x}",
        unit="",
        default=dict(x=1),
        vary=lambda r: dict(x=r.choice((1, 2))),  # half the draws give the book's answer
        answer=lambda v: v["x"],
    )
    assert all(ex.variant(s) == {"x": 2} for s in STUDENTS)
