"""The answer box of the exercise pages: check an answer in the browser, live, as the book's calculators run.

:func:`answer_box` is a small form over :func:`llmcourse.exercises.check`: the chapter's exercises to pick from
(with the story at the student's variant), an optional student id, the answer and its unit, a **Check** button,
and the checker's feedback line with its hints. In Jupyter it works as any widget; in
the HTML book the exercise page shows it as a snapshot with **Run live**, which runs it under Pyodide in the
page, as a calculator (see ``_ext/live_calculators.py``): it uses only what the browser's Python has. Nothing
is stored: the expected answer is computed when the box checks, as ``check`` computes it.

The answer is the text typed; the unit box is added after a bare number (``320`` and ``KiB`` read as
``"320 KiB"``), and left out where the answer names its own unit (``320 KiB`` or ``0.3125 MiB``), so either way
of typing is read as the checker reads a string.

Examples
--------
>>> box = answer_box("kv_cache")
>>> box.exercise.value, box.unit.value
('kv_cache_ex1', 'KiB')
>>> box.check("320").correct  # the book's variant: 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 320 KiB
True
>>> box.feedback.value.startswith("<div")
True
>>> box.check("0.3125 MiB").message  # a unit typed with the answer wins over the unit box
'Correct (within 1.0%).'
>>> box.check("").status  # nothing typed: what the exercise asks
'blank'
"""

from __future__ import annotations

import html
import re
from typing import Any

import ipywidgets as w

from llmcourse.errors import UnknownNameError
from llmcourse.exercises import engine

__all__ = ["AnswerBox", "answer_box"]

_BARE_NUMBER = re.compile(r"\s*[-+]?(?:\d[\d,_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*")
_COLORS = {"correct": "#1a7f37", "blank": "#57606a"}


def _feedback_html(result: engine.Result) -> str:
    """The checker's verdict as the box shows it: a mark, the message, the expected unit where the kind was
    wrong, and the hints revealed so far."""
    color = _COLORS.get(result.status, "#cf222e")
    mark = {"correct": "\u2713", "blank": "\u2026"}.get(result.status, "\u2717")
    parts = [
        f"<div class='llmcourse-check' data-status='{html.escape(result.status)}' "
        f"style='border-left:4px solid {color};padding:2px 8px'>"
        f"<b style='color:{color}'>{mark}</b> {html.escape(result.message)}"
    ]
    if result.expected_unit is not None and result.status in ("unit", "invalid"):
        parts.append(f"<br>expected unit: <code>{html.escape(result.expected_unit)}</code>")
    parts += [f"<br><i>hint {i}:</i> {html.escape(h)}" for i, h in enumerate(result.hints, 1)]
    return "".join(parts) + "</div>"


class AnswerBox:
    """The answer box of one chapter's exercises (see the module). ``widget`` is what a notebook displays;
    :meth:`check` checks what is typed (or the answer given), as the button does, and returns the result."""

    def __init__(self, chapter: str, exercise_id: str | None = None) -> None:
        found = engine.exercises(chapter)
        self.exercise = w.Dropdown(
            options=[(f"{e.number}. {e.title}", e.id) for e in found],
            value=exercise_id or found[0].id,
            description="Exercise",
        )
        self.student = w.Text(value="", placeholder="optional: your student id", description="Student")
        self.answer = w.Text(value="", placeholder="your answer, e.g. 320", description="Answer")
        self.unit = w.Text(value="", description="Unit")
        self.button = w.Button(description="Check", button_style="primary")
        self.story = w.HTML()
        self.feedback = w.HTML()
        self.result: engine.Result | None = None
        self.button.on_click(lambda _button: self.check())
        self.exercise.observe(self._picked, names="value")
        self.student.observe(self._picked, names="value")
        self._picked(None)
        self.widget = w.VBox(
            [
                w.HTML("<b>Check an answer</b>"),
                self.exercise,
                self.story,
                self.student,
                w.HBox([self.answer, self.unit, self.button]),
                self.feedback,
            ]
        )

    def _picked(self, _change: Any) -> None:
        """Another exercise (or student): its story at that student's variant, its unit, no verdict yet."""
        ex = engine.get(self.exercise.value)
        story = engine.show(ex.id, seed=self.student.value or None)
        self.story.value = f"<p>{html.escape(story.text)}</p>"
        self.unit.value = ex.unit
        self.unit.placeholder = "" if ex.unit else "none: a plain number"
        self.feedback.value = ""
        self.result = None

    def typed(self) -> str:
        """The answer as the checker reads it: the answer box, with the unit box after a bare number."""
        text, unit = self.answer.value.strip(), self.unit.value.strip()
        return f"{text} {unit}" if text and unit and _BARE_NUMBER.fullmatch(text) else text

    def check(self, answer: str | None = None) -> engine.Result:
        """Check the answer typed (``answer``, if given, is typed into the box first) for the exercise picked, on
        the student's variant; show and return the result. Nothing typed: what the exercise asks."""
        if answer is not None:
            self.answer.value = answer
        text = self.typed()
        seed = self.student.value or None
        result = engine.check(self.exercise.value, text, seed=seed) if text else engine.check(self.exercise.value)
        self.result = result
        self.feedback.value = _feedback_html(result)
        return result

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        shown = self.result.message if self.result is not None else "no answer checked yet"
        return f"<AnswerBox {self.exercise.value}: {shown}>"


def answer_box(which: str) -> AnswerBox:
    """The answer box of a chapter's exercises (``"kv_cache"``) or of one exercise (``"kv_cache_ex2"``, picked
    first); an :class:`~llmcourse.errors.UnknownNameError` with the close names for anything else.

    Examples
    --------
    >>> answer_box("tokens_ex2").check("6.667").correct  # 2,000 prompt tokens / 300 answer tokens
    True
    >>> answer_box("KV-Cache").exercise.value  # read as progress() reads a chapter
    'kv_cache_ex1'
    >>> answer_box("kv cash")
    Traceback (most recent call last):
    ...
    llmcourse.errors.UnknownNameError: no exercise chapter or exercise 'kv cash'; did you mean kv_cache?
    """
    text = "_".join(which.lower().replace("-", " ").replace("_", " ").split()) if isinstance(which, str) else ""
    if text in engine.CHAPTERS:
        return AnswerBox(text)
    try:
        ex = engine.get(text)
    except KeyError:
        import difflib

        close = difflib.get_close_matches(text.rsplit("_ex", 1)[0], list(engine.CHAPTERS), n=3, cutoff=0.5)
        raise UnknownNameError(
            f"no exercise chapter or exercise {which!r}; "
            + (f"did you mean {', '.join(close)}?" if close else f"the chapters are {', '.join(engine.CHAPTERS)}.")
        ) from None
    return AnswerBox(ex.chapter, ex.id)
