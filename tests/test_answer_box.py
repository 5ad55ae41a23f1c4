"""The answer box of the exercise pages (``llmcourse.widgets.exercises``), driven from code as a reader would.

Hand arithmetic (the book's variants): kv_cache_ex1 is Qwen2.5-72B's KV bytes per token, 2 (K and V) x 80 layers
x 8 KV heads x 128 x 2 bytes = 327,680 B = 320 KiB = 0.3125 MiB; tokens_ex2 is 2,000 / 300 = 6.667.
"""

from __future__ import annotations

import pytest

from llmcourse.errors import UnknownNameError
from llmcourse.exercises import progress, reset
from llmcourse.widgets.exercises import answer_box


@pytest.fixture(autouse=True)
def _fresh_session():
    reset()
    yield
    reset()


def test_the_unit_box_follows_a_bare_number_and_a_typed_unit_wins():
    box = answer_box("kv_cache")
    assert box.unit.value == "KiB"
    assert box.check("320").correct and box.typed() == "320 KiB"
    assert box.check("0.3125 MiB").correct and box.typed() == "0.3125 MiB"
    box.unit.value = "kB"  # 320 kB against 320 KiB: the slip is named
    result = box.check("320")
    assert not result.correct and "KiB vs kB" in result.message and "KiB vs kB" in box.feedback.value


def test_the_button_checks_and_progress_hears_it():
    box = answer_box("tokens_ex2")
    assert box.exercise.value == "tokens_ex2" and box.unit.value == ""
    box.answer.value = "6.667"
    box.button.click()
    assert box.result is not None and box.result.correct and "\u2713" in box.feedback.value
    assert dict((i, d) for i, _, d in progress("tokens").rows)["tokens_ex2"]


def test_a_student_gets_their_own_variant_and_story():
    box = answer_box("kv_cache")
    book_story = box.story.value
    box.student.value = "alice"
    assert box.story.value != book_story  # alice's givens differ from the book's
    assert not box.check("320").correct  # the book's answer is not hers (a student's variant is drawn so)


def test_nothing_typed_says_what_the_exercise_asks_and_html_is_escaped():
    box = answer_box("kv_cache")
    assert box.check("").status == "blank" and "asks" in box.feedback.value
    box.check("<script>alert(1)</script>")
    assert "<script>" not in box.feedback.value and "&lt;script&gt;" in box.feedback.value


def test_picking_another_exercise_clears_the_verdict():
    box = answer_box("kv_cache")
    box.check("1")
    box.exercise.value = "kv_cache_ex2"
    assert box.feedback.value == "" and box.result is None and box.unit.value == ""


@pytest.mark.parametrize("which", ["kv cash", "", "nonsense_ex1", None, 3])
def test_an_unknown_chapter_is_named(which):
    with pytest.raises(UnknownNameError, match="no exercise chapter or exercise"):
        answer_box(which)
