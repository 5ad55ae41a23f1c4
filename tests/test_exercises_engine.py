"""The exercise engine: unit-aware checking, diagnostics, hints, variants, progress and the grading CLI.

Expected values are hand arithmetic: Llama 3.1 70B caches 2 x 80 layers x 8 KV heads x 128 x 2 bytes =
327,680 B = 320 KiB per token; Qwen2.5-7B's 7.6e9 parameters take 15.2 GB in BF16; a T4's usable memory
(0.9 x 16 GB) over 7e9 weights is 2.057 bytes per weight; 900 tokens at 30 tokens/s take 30 s.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pint
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcourse import Q_
from llmcourse.exercises import check, exercises, get, progress, reset, show, student, variant_of
from llmcourse.exercises.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_session():
    reset()
    yield
    reset()


@pytest.mark.parametrize(
    "answer", [Q_(320, "KiB"), Q_(327_680, "B"), Q_(327.68, "kB"), Q_(0.3125, "MiB"), Q_(2_621_440, "bit"), "320 KiB"]
)
def test_any_convertible_unit_is_accepted(answer):
    """The right value in any unit of the same kind is correct."""
    r = check("kv_cache_ex1", answer)
    assert r.correct and r.status == "correct"


def test_tolerance_is_relative():
    """Within 1% is right, 2% off is not."""
    assert check("kv_cache_ex1", Q_(322, "KiB")).correct
    assert not check("kv_cache_ex1", Q_(327, "KiB")).correct


def test_quantity_from_another_registry_is_read():
    """A pint quantity built with a different registry is converted, not refused."""
    other = pint.UnitRegistry()
    assert check("kv_cache_ex1", other.Quantity(320, "KiB")).correct


@pytest.mark.parametrize(
    ("exercise", "answer", "words"),
    [
        ("kv_cache_ex1", Q_(320, "kB"), "KiB vs kB?"),
        ("kv_cache_ex3", Q_(786.432, "MiB"), "MiB vs MB?"),
        ("weights_ex1", Q_(15.2, "GiB"), "GiB vs GB?"),
        ("kv_cache_ex1", Q_(320, "Kibit"), "bits vs bytes?"),
        ("tokens_ex4", Q_(30, "ms"), "unit prefix"),
        ("kv_cache_ex1", Q_(160, "KiB"), "did you count keys and values?"),
        ("kv_cache_ex1", Q_(2_560, "KiB"), "query heads instead of the KV heads"),
        ("tokens_ex1", Q_(578.7, "1/min"), "per second vs per minute"),
    ],
)
def test_known_mistakes_are_diagnosed(exercise, answer, words):
    """A known slip gets a diagnosis, with a coarse size (never its exact factor), and a hint that follows it."""
    r = check(exercise, answer)
    assert r.status == "wrong" and words in r.message and "by a factor of" not in r.message
    assert re.search(r"(about [\d,]+x too (large|small)|too (large|small), but within 10%) \(", r.message), r.message
    assert r.hint is not None and words in r.hint and r.hints == (r.hint,)


def test_factor_two_without_keys_and_values_is_plain():
    """Where keys and values are not the point, a factor of 2 is reported (coarsely) without that diagnosis."""
    r = check("tokens_ex4", Q_(60, "s"))
    assert "about 2x too large" in r.message and "keys and values" not in r.message


def test_far_off_answer_says_how_far():
    """An answer with no known slip says in which direction and roughly how far it is, never the exact ratio."""
    r = check("kv_cache_ex1", Q_(1_000, "KiB"))  # 1,000 / 320 = 3.125 times
    assert r.status == "wrong" and "about 3x too large" in r.message and "3.1" not in r.message
    assert "too small by 10% to 50%" in check("kv_cache_ex1", Q_(250, "KiB")).message  # 320 / 250 = 1.28


def test_bare_number_refused_where_no_unit_is_stated():
    """A bare number for a quantity with a unit is refused, with the unit to use."""
    r = check("kv_cache_ex1", 320)
    assert r.status == "unit" and "bare number" in r.message and r.expected_unit == "KiB"


def test_bare_number_read_in_the_stated_unit():
    """Where the exercise states the unit, a bare number is read in it."""
    assert check("weights_ex6", 2.057).correct
    assert check("weights_ex6", Q_(16.46, "bit")).correct


def test_wrong_dimension_names_the_expected_unit():
    """A quantity of another kind is refused with the expected unit."""
    r = check("kv_cache_ex1", Q_(320, "KiB/s"))
    assert r.status == "unit" and "wrong kind of unit" in r.message and r.expected_unit == "KiB"
    assert "expected unit: KiB" in str(r)


def test_count_refuses_a_unit():
    """A plain-number answer given with a unit is a wrong dimension."""
    assert check("weights_ex4", Q_(12, "GB")).status == "unit"
    assert check("weights_ex4", 12).correct


def test_counts_must_be_exact():
    """A count off by one is wrong and says so."""
    r = check("weights_ex4", 11)
    assert r.status == "wrong" and "off by 1" in r.message and "too few" in r.message


def test_blank_answer_is_not_answered():
    """None reports 'not answered' and does not count as a try."""
    r = check("kv_cache_ex1", None)
    assert r.status == "blank" and r.message == "Not answered yet." and not r.correct
    assert check("kv_cache_ex1", Q_(1, "KiB")).tries == 1


BAD_INPUTS = [
    "",
    "abc",
    "320 parsecs of KiB",
    [1, 2],
    (320,),
    {},
    {1},
    float("nan"),
    float("inf"),
    -math.inf,
    True,
    1j,
    object(),
    Ellipsis,
    np.array([1.0, 2.0]),
    Q_(np.array([1.0, 2.0]), "KiB"),
    Q_(float("nan"), "KiB"),
    Q_(-3, "KiB"),
    0,
    Q_(1, "GB/s"),
    Q_(1, "USD"),
    "import os",
]


# ids without memory addresses (repr of an object()), the same in every process (pytest-xdist's workers)
@pytest.mark.parametrize("answer", BAD_INPUTS, ids=[re.sub(r" at 0x[0-9a-f]+", "", repr(a))[:30] for a in BAD_INPUTS])
def test_never_raises_on_bad_input(answer):
    """Anything a student can type gets a message, not an exception."""
    r = check("kv_cache_ex1", answer)
    assert not r.correct and r.message and str(r) and r._repr_html_()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.none(),
        st.text(max_size=20),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(),
        st.lists(st.floats(), max_size=3),
        st.builds(Q_, st.floats(allow_nan=True), st.sampled_from(["KiB", "s", "1/s", "GB", "USD", "FLOP", ""])),
    ),
    st.sampled_from(["kv_cache_ex1", "tokens_ex1", "weights_ex4", "decode_ex1", "moe_ex2"]),
)
def test_never_raises_property(answer, exercise):
    """Property: check returns a result for any input."""
    assert check(exercise, answer).status in {"correct", "wrong", "unit", "blank", "invalid"}


def test_unknown_exercise_does_not_raise():
    """An unknown id is reported with close ids."""
    r = check("kv_cache_ex99", 1)
    assert r.status == "unknown" and "kv_cache_ex" in r.message


def test_hints_are_revealed_progressively():
    """Each wrong try shows one more hint, up to all of them."""
    n = len(get("kv_cache_ex1").hints)
    shown = [len(check("kv_cache_ex1", Q_(1, "KiB")).hints) for _ in range(n + 2)]
    assert shown == [*range(1, n + 1), n, n]


def test_hints_are_kept_per_exercise():
    """Tries on one exercise do not reveal hints of another."""
    for _ in range(3):
        check("kv_cache_ex1", Q_(1, "KiB"))
    assert check("kv_cache_ex3", Q_(1, "GB")).tries == 1


def test_seeded_variants_are_deterministic_and_differ():
    """The same seed gives the same givens; different students get different ones."""
    ex = get("kv_cache_ex3")
    assert ex.variant("s1234567") == ex.variant("s1234567")
    assert ex.variant(42) == ex.variant(42)
    assert len({repr(sorted(ex.variant(s).items())) for s in range(20)}) >= 5
    assert ex.variant(None) == {"model": "Qwen2.5-72B", "context": 2_400}


def test_student_seed_changes_the_expected_answer():
    """student() switches the session to that student's variant."""
    eight_b = {"model": "Llama-3.1-8B", "kv": "a BF16"}
    seed = next(s for s in range(1_000) if get("kv_cache_ex1").variant(s) == eight_b)
    student(seed)
    assert variant_of("kv_cache_ex1") == eight_b
    assert check("kv_cache_ex1", Q_(128, "KiB")).correct  # 2 x 32 x 8 x 128 x 2 B
    assert not check("kv_cache_ex1", Q_(320, "KiB")).correct
    assert "Llama-3.1-8B" in str(show("kv_cache_ex1"))
    student(None)
    assert check("kv_cache_ex1", Q_(320, "KiB")).correct


def test_progress_lists_done_and_not_done():
    """progress() marks exactly the exercises answered correctly."""
    check("kv_cache_ex1", Q_(320, "KiB"))
    check("kv_cache_ex3", Q_(1, "GB"))
    p = progress("kv_cache")
    done = {i for i, _, d in p.rows if d}
    assert done == {"kv_cache_ex1"} and len(p.rows) == len(exercises("kv_cache"))
    assert "1 of" in str(p) and "not done" in str(p) and "<table>" in p._repr_html_()


def test_result_display():
    """The text and HTML displays carry the verdict and the message."""
    ok, bad = check("kv_cache_ex1", Q_(320, "KiB")), check("kv_cache_ex1", Q_(320, "kB"))
    assert str(ok).startswith("\u2713") and "Correct" in ok._repr_html_()
    assert str(bad).startswith("\u2717") and "KiB vs kB?" in bad._repr_html_() and "hint 1" in str(bad)


def test_story_shows_givens_not_answers():
    """The displayed story names the givens and the unit, and no answer."""
    s = show("kv_cache_ex3")
    assert "Qwen2.5-72B" in str(s) and "2,400" in str(s) and "'GB'" in str(s) and "0.786" not in str(s)


def test_import_is_light():
    """Importing the package loads no exercise definitions."""
    code = "import sys, llmcourse.exercises; print(any('defs_' in m for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# --- the grading command --------------------------------------------------------------------------
TOKENS_ANSWERS = [  # hand arithmetic for the book's variants of book/01_tokens.md
    'Q_(578.7, "1/s")',  # 50,000 / 86,400 s x 4 x 250
    "6.667",  # 2,000 / 300
    "2000",  # 8,000 / 4
    'Q_(30, "s")',  # 900 / 30 per s
    'Q_(21.70e6, "1/s")',  # 17,361 x 5,000 / 4
    'Q_(13_333, "1/s")',  # 120,000 / 3,600 s x 400
]


def _completed(tmp_path: Path, answers: list[str]) -> Path:
    text = (ROOT / "exercises" / "01_tokens.md").read_text()
    for a in answers:
        text = text.replace("answer = None", f"answer = {a}", 1)
    path = tmp_path / "01_tokens.md"
    path.write_text(text)
    return path


def test_cli_grades_a_completed_notebook(tmp_path, capsys):
    """A notebook with the right answers scores full marks, one line per exercise."""
    assert cli_main([str(_completed(tmp_path, TOKENS_ANSWERS))]) == 0
    out = capsys.readouterr().out
    assert "score: 6/6" in out and out.count("1/1  correct") == 6


def test_cli_grades_a_blank_notebook(tmp_path, capsys):
    """The blank notebook scores zero and says 'not answered'."""
    assert cli_main(["check", str(ROOT / "exercises" / "01_tokens.md")]) == 0
    out = capsys.readouterr().out
    assert "score: 0/6" in out and out.count("not answered") == 6


def test_cli_seed_grades_another_variant(tmp_path, capsys):
    """--seed grades the student's own variant, so the book's answers no longer all pass."""
    cli_main([str(_completed(tmp_path, TOKENS_ANSWERS)), "--seed", "s1234567"])
    out = capsys.readouterr().out
    assert "student s1234567" in out and "score: 6/6" not in out


def test_cli_reports_cell_errors_and_wrong_answers(tmp_path, capsys):
    """A raising cell is reported and the next cells still run; a wrong answer is scored 0."""
    answers = ['Q_(578.7, "kB")', "1 / 0", *TOKENS_ANSWERS[2:]]
    cli_main([str(_completed(tmp_path, answers))])
    out = capsys.readouterr().out
    assert "wrong kind of unit" in out and "ZeroDivisionError" in out and "score: 4/6" in out


def test_cli_missing_notebook(capsys):
    """A missing file is an error status, not a traceback."""
    assert cli_main(["no/such/notebook.ipynb"]) == 2


def test_python_m_llmcourse_check(tmp_path):
    """`python -m llmcourse check NOTEBOOK` runs the grader (what a teacher types)."""
    nb = _completed(tmp_path, TOKENS_ANSWERS)
    out = subprocess.run(
        [sys.executable, "-m", "llmcourse", "check", str(nb)], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert "score: 6/6" in out
