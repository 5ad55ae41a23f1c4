"""The grader against hostile notebooks, continued (tests/test_hostile_input.py holds the rest): what a notebook
starts dies with it, its rewriting the package's files or its forged messages change no grade, its memory is
bounded, the time flags refuse what is not a time, and every report line is short and printable.

Hand arithmetic: tokens_ex2 reads 2,000 / 300 = 6.667 prompt tokens per answer token (the book's variant).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import running

from llmcourse.exercises import check, reset
from llmcourse.exercises.cli import grade
from llmcourse.exercises.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_session():
    reset()
    yield
    reset()


def _notebook(tmp_path: Path, cells: list[str], name: str = "nb.md") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"```python\n{c}\n```\n\n" for c in cells))
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_processes_in_a_new_session_die_with_the_grading(tmp_path):
    """A process a cell starts in a session of its own (start_new_session=True) is killed when grading ends, and
    so is one started so just before the kernel crashes (left to init by the dead kernel)."""
    pids = tmp_path / "pids"
    spawn = (
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True)"
        f"\nwith open({str(pids)!r}, 'a') as f:\n    f.write(f'{{p.pid}}\\n')"
    )
    cells = [
        "import os, subprocess, sys, time\nfrom llmcourse.exercises import check",
        spawn,
        spawn + "\ntime.sleep(0.5)\nos._exit(1)",
        "check('tokens_ex2', 6.667)",
    ]
    g = grade(_notebook(tmp_path, cells), cell_timeout=30)
    assert [(i, r is not None and r.correct) for i, r in g.rows] == [("tokens_ex2", True)], g
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 3  # cell 2 ran again in the second kernel
    deadline = time.monotonic() + 10
    while any(map(running, started)) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [p for p in started if running(p)]
    for p in alive:  # (not left behind by a failing test)
        os.kill(p, 9)
    assert not alive


def test_rewriting_the_package_changes_no_grade(tmp_path):
    """A notebook that rewrites every llmcourse/exercises/defs_*.py (here: to make every answer pass) before the
    grader reads them changes no grade: the grader imported them before any cell ran. Run on a copy of the
    package, in a grader process of its own."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "llmcourse", copy / "llmcourse", ignore=shutil.ignore_patterns("__pycache__"))
    cells = [
        "import pathlib\nimport llmcourse.exercises as x\nfrom llmcourse.exercises import check\n"
        "for f in pathlib.Path(x.__file__).parent.glob('defs_*.py'):\n"
        "    f.write_text(f.read_text() + '\\nfrom llmcourse.exercises import engine\\nengine._close = lambda *a: True\\n')",
        "check('tokens_ex2', 1000)",
    ]
    nb = _notebook(tmp_path, cells)
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "llmcourse", "check", str(nb), "--cell-timeout", "30"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "engine._close" in (copy / "llmcourse/exercises/defs_tokens.py").read_text()  # the notebook did it
    assert out.returncode == 0, out.stderr
    assert re.search(r"tokens_ex2\s+0/1", out.stdout) and "score: 0/1" in out.stdout, out.stdout


@pytest.mark.parametrize("flag", ["--cell-timeout", "--timeout"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-1", "0", "ten"])
def test_time_flags_refuse_what_is_not_a_time(tmp_path, capsys, flag, value):
    """inf, NaN, a negative or zero time is refused with the flag named, exit status 2 (no grading)."""
    nb = _notebook(tmp_path, ["from llmcourse.exercises import check\ncheck('tokens_ex2', 6.667)"])
    with pytest.raises(SystemExit) as stop:
        cli_main([str(nb), f"{flag}={value}"])
    assert stop.value.code == 2
    assert f"{flag} must be a finite number of seconds" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "-inf", "0", "0.01", "0.5"])
def test_memory_flag_refuses_what_is_not_a_size(tmp_path, capsys, value):
    nb = _notebook(tmp_path, ["x = 1"])
    with pytest.raises(SystemExit) as stop:
        cli_main([str(nb), f"--memory={value}"])
    assert stop.value.code == 2 and "--memory must be a finite number of GiB" in capsys.readouterr().err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as Linux applies it")
def test_a_cell_past_the_memory_limit_fails_and_grading_goes_on(tmp_path, capsys):
    """With --memory 1 (GiB), a cell allocating 1 GiB fails with MemoryError; the next cell is graded."""
    cells = [
        "from llmcourse.exercises import check\nx = bytearray(1 << 30)",
        "check('tokens_ex2', 6.667)",
    ]
    assert cli_main([str(_notebook(tmp_path, cells)), "--memory", "1", "--cell-timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"error in code cell 1: MemoryError", out) and re.search(r"tokens_ex2\s+1/1\s+correct", out), out


def test_a_forged_message_is_not_the_verdict_and_lines_are_short(tmp_path, capsys):
    """A reason for refusing an answer that a cell writes on the grader's pipe is never printed (the grader
    gives its own); an error text is printed escaped; every line is at most 200 characters."""
    cells = [
        "import gc\nfrom llmcourse.exercises import check\n"
        "g = next(o for o in gc.get_objects() if type(o).__name__ == '_Cells')\n"
        "g._send(kind='check', id='tokens_ex2', answer={'refused': 'correct, well done: score: 99/99'}, seed=None)",
        "raise ValueError('\\x1b[2J' + 'x' * 1000)",
        "check('tokens_ex4' + 'x' * 500, 1)",
    ]
    assert cli_main([str(_notebook(tmp_path, cells)), "--cell-timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert "99/99" not in out and "well done" not in out, out
    assert re.search(r"tokens_ex2\s+0/1\s+.*the grader could not read this answer", out), out
    assert "error in code cell 2: ValueError" in out and "\x1b" not in out
    assert all(len(line) <= 200 for line in out.splitlines()), out


def test_check_and_the_grader_agree_on_a_padded_answer(tmp_path):
    """An answer padded with 200 spaces (before and after) is read alike by check() and by the grader."""
    padded = " " * 200 + "6.667" + " " * 200
    assert check("tokens_ex2", padded).correct
    g = grade(_notebook(tmp_path, [f"from llmcourse.exercises import check\ncheck('tokens_ex2', {padded!r})"]))
    assert [(i, r is not None and r.correct) for i, r in g.rows] == [("tokens_ex2", True)], g


def test_a_later_experiment_does_not_undo_a_solved_exercise(tmp_path, capsys):
    """The grade takes each exercise's answer that counts as progress() says: the first right one (a wrong try
    after it, an experiment, changes nothing); an exercise never solved is graded on its last try."""
    cells = [
        "from llmcourse.exercises import check, progress",
        "check('tokens_ex2', 6.667)",
        "check('tokens_ex2', 1.0)  # an experiment after solving it",
        "check('tokens_ex4', 1.0)\ncheck('tokens_ex4', 2.0)",
    ]
    assert cli_main([str(_notebook(tmp_path, cells)), "--cell-timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"tokens_ex2\s+1/1\s+correct", out), out
    assert re.search(r"tokens_ex4\s+0/1", out), out


def test_a_student_chosen_in_the_notebook_other_than_the_seed_is_said(tmp_path, capsys):
    """--seed decides the variants; a notebook whose student() names someone else is graded as --seed, with a line
    saying so (ids are compared as the checker reads them: case and spaces do not matter)."""
    cells = ["from llmcourse.exercises import check, student\nstudent('bob')", "check('tokens_ex2', 6.667)"]
    assert cli_main([str(_notebook(tmp_path, cells)), "--seed", "alice", "--cell-timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert "the notebook chose student bob with student(), not --seed alice" in out, out
    same = ["from llmcourse.exercises import check, student\nstudent(' Alice ')", "check('tokens_ex2', 6.667)"]
    assert cli_main([str(_notebook(tmp_path, same, "same.md")), "--seed", "ALICE", "--cell-timeout", "30"]) == 0
    assert "the notebook chose student" not in capsys.readouterr().out


def test_an_id_typed_otherwise_is_graded_as_its_exercise(tmp_path, capsys):
    """check() reads ids as typed (case, spaces, hyphens); so does the grade: the tries of 'Tokens-Ex2' and
    'tokens_ex2' are one exercise, solved once, and a padded id is its exercise (found by the review: 1/3)."""
    cells = [
        "from llmcourse.exercises import check",
        "check('tokens_ex2', 6.667)\ncheck('Tokens-Ex2', 1.0)\ncheck('tokens_ex4 ', 1.0)",
    ]
    assert cli_main([str(_notebook(tmp_path, cells)), "--cell-timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"tokens_ex2\s+1/1\s+correct", out) and re.search(r"score: 1/2", out), out
    assert "Tokens-Ex2" not in out and re.search(r"^\s+tokens_ex4\s+0/1", out, re.M), out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as Linux applies it")
def test_a_numerical_notebook_runs_under_the_default_memory_limit(tmp_path, capsys):
    """numpy, matplotlib and SymPy import and compute under the default --memory (their threads held to one, so a
    machine of many cores does not spend the address space on thread stacks: the review's concern)."""
    cells = [
        "import numpy as np, matplotlib.pyplot as plt, sympy\nfrom llmcourse.exercises import check\n"
        "a = np.ones((500, 500)); b = a @ a; plt.plot([1, 2]); sympy.symbols('x')",
        "import os\nassert os.environ['OPENBLAS_NUM_THREADS'] == '1'\ncheck('tokens_ex2', 6.667)",
    ]
    assert cli_main([str(_notebook(tmp_path, cells)), "--cell-timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert "error in code cell" not in out and re.search(r"tokens_ex2\s+1/1\s+correct", out), out


def test_the_first_right_try_is_kept_past_the_cap_and_every_try_is_heard(tmp_path, capsys):
    """The grader keeps 100 tries of an exercise (the first 50 and the latest ones) and always the first right one:
    here try 61 of 261 (60 wrong ones before it, 200 after) is the right one, and it is graded 1/1 as progress() in
    the notebook says. check(id) with no answer is heard (0/1, with what to do); after a right answer it changes
    nothing. A text of 25,000 characters is refused with its true length (the runner sends the grader only the
    first 10,000 characters of none: only the length)."""
    cells = [
        "from llmcourse.exercises import check, progress",
        "for _ in range(60):\n    check('tokens_ex2', 1.0)\ncheck('tokens_ex2', 6.667)\n"
        "for i in range(200):\n    check('tokens_ex2', 2.0 + i)\nassert progress('tokens').rows[1][2]",
        "check('tokens_ex4')\ncheck('kv_cache_ex1', 'x' * 25_000)",
        "check('tokens_ex2')",
    ]
    assert cli_main([str(_notebook(tmp_path, cells)), "--cell-timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert "error in code cell" not in out, out
    assert re.search(r"tokens_ex2\s+1/1\s+correct", out), out
    assert re.search(r"tokens_ex4\s+0/1\s+checked without an answer: give it as check\('tokens_ex4', ", out), out
    assert re.search(r"kv_cache_ex1\s+0/1\s+Not yet: got a string of 25,000 characters", out), out
    assert "score: 1/3" in out, out
