"""Timed estimate drills: the widget of the chapter *Drills* (``book/15_drills.md``).

A :class:`Drill` deals a random estimate question (KV per token, KV for a context, weights, the
largest batch, decode speed, GPUs for a traffic figure): a variant of that kind's exercise
(:mod:`llmcourse.exercises.defs_drills`), its figure from the planner. It checks a typed answer
with units (``"320 KiB"``, ``"0.75 GB"``, ``"47 tok/s"``, ``"12"``) through the exercise checker
(:func:`llmcourse.exercises.engine.check`: its reading of the text, its unit feedback, its
diagnosis of slips), which passes it when it is within a factor of :data:`FACTOR` (1.5) of the
planner's figure; it shows that figure, the working and the time taken, and keeps a score and a
streak for the session. The band is tight enough that the factor-of-two slips the course warns
about (keys *and* values, BF16 vs FP8 bytes, per GPU vs per replica) miss, and the miss names the
likely slip; rounding and KiB vs kB pass. A typed answer it cannot use (no number, no unit where
one is needed, the wrong kind of unit, not positive) gets a message, never a traceback, and does
not count.

The figures are the course's method, except the single-user decode speed, which asks for the
ceiling at the datasheet bandwidth (the back-of-the-envelope method's, ``"envelope"``) and shows
the course's figure beside it.

Driven from code (as the tests do)::

    d = Drill(seed=1)
    d.answer.value = "320 KiB"
    d.check_button.click()      # or d.check()
    d.last.status, d.score, d.streak
    d.next_button.click()       # or d.deal()

Examples
--------
>>> d = Drill(seed=3, kinds=["weights"])
>>> d.problem.kind
'weights'
>>> v = d.check(d.problem.answer_text)
>>> v.status, d.score, d.attempted, d.streak
('correct', 1, 1, 1)
>>> d.deal().kind, d.check("lots").status, d.attempted
('weights', 'invalid', 1)
"""

from __future__ import annotations

import dataclasses
import html
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as w
import pint

from llmcourse.errors import InputError
from llmcourse.exercises.answers import AnswerRefused, show_value
from llmcourse.exercises.answers import read_answer as read_checked
from llmcourse.exercises.defs_drills import DRILLS, FACTOR, KINDS, SLIPS_2X, shown
from llmcourse.exercises.engine import Exercise, check
from llmcourse.units import Q_, sig

__all__ = [
    "FACTOR",
    "KINDS",
    "SLIPS_2X",
    "Drill",
    "DrillInputError",
    "Problem",
    "Verdict",
    "deal_problem",
    "read_answer",
    "warmup",
    "warmup_markdown",
    "within",
]


class DrillInputError(InputError):
    """A typed answer the drill cannot read; the message says what to type instead."""


@dataclass(frozen=True)
class Problem:
    """One dealt question: the text, the planner's exact figure and how it was computed, and the
    exercise it was dealt from with its variant (the givens)."""

    kind: str
    text: str
    exact: pint.Quantity
    unit: str
    how: str
    exercise: Exercise | None = field(default=None, repr=False, compare=False)

    @property
    def answer_text(self) -> str:
        """The exact figure written the way a reader would type it (``"320 KiB"``, ``"47 tok/s"``)."""
        return shown(self.exact, self.unit)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: ``"correct"``, ``"wrong"``, ``"invalid"`` (not read; retry) or ``"closed"``."""

    status: str
    message: str
    ratio: float | None = None
    elapsed: float | None = None

    @property
    def counted(self) -> bool:
        """Whether the check counted towards the score (a right or a wrong answer)."""
        return self.status in ("correct", "wrong")


# --- dealing ------------------------------------------------------------------------------------------
def _fill(template: str, variant: dict[str, Any]) -> str:
    """A story or a hint with the variant's givens, as the engine prints them."""
    return template.format(**{k: show_value(x) for k, x in variant.items()})


def deal_problem(rng: random.Random, kinds: Sequence[str] = KINDS) -> Problem:
    """Draw one problem of one of ``kinds`` with ``rng`` (same state, same problem): a variant of that
    kind's exercise (:data:`llmcourse.exercises.defs_drills.DRILLS`), its figure from the planner.

    Examples
    --------
    >>> p = deal_problem(random.Random(0), ["kv_per_token"])
    >>> p.kind, p.exercise.id
    ('kv_per_token', 'drills_ex1')
    """
    kind = rng.choice(list(kinds))
    ex = DRILLS[kind]
    v = dict(ex.vary(rng))
    # The dealt question: the exercise with this variant as its only one, whatever the session's student.
    dealt = dataclasses.replace(ex, default=v, vary=lambda _rng: dict(v))
    value = ex.answer(v)
    exact = value if isinstance(value, pint.Quantity) else Q_(value, "")
    unit = "tok/s" if ex.unit == "1/s" else ex.unit
    return Problem(kind, dealt.text(), exact.to(ex.unit), unit, _fill(ex.hints[0], v), dealt)


# --- reading and comparing answers -----------------------------------------------------------------------
def _typed(message: str, unit: str) -> str:
    """An engine message for a text box: ``Q_(16, 'GB')`` becomes ``16 GB``, and a rate in ``1/s`` reads tok/s."""
    text = re.sub(r"Q_\(([^,()]+), '([^']*)'\)", lambda m: f"{m[1]} {m[2]}".strip(), message)
    return text.replace(" 1/s", " tok/s") if unit == "tok/s" else text


def _verdict(ex: Exercise, typed: str, unit: str) -> tuple[Any, pint.Quantity]:
    """The exercise checker's result for the typed answer and the answer as it read it, or
    :class:`DrillInputError` where the checker could not use it (unreadable, no unit, the wrong kind of
    unit) or it is not a positive figure."""
    raw = "" if typed is None else str(typed).strip()
    result = check(ex, raw)
    if result.status not in ("correct", "wrong"):
        raise DrillInputError(_typed(result.message.removeprefix("Not yet: "), unit))
    try:
        q, _ = read_checked(raw, ex.unit)  # as the checker read it
    except AnswerRefused as why:  # pragma: no cover - the checker has just read it
        raise DrillInputError(_typed(str(why), unit)) from None
    if not float(q.m) > 0:
        raise DrillInputError(f"the answer must be a positive number; got {raw!r}.")
    return result, q


def _exercise_of(problem: Problem) -> Exercise:
    """The exercise a problem was dealt from, or one that expects its figure (a problem built by hand)."""
    if problem.exercise is not None:
        return problem.exercise
    unit = "1/s" if problem.unit == "tok/s" else problem.unit
    figure = {"figure": repr(problem.exact)}  # the checker remembers answers by id and variant
    return Exercise(
        f"drills_{problem.kind}",
        problem.kind,
        "?",
        unit,
        figure,
        lambda _r: figure,
        lambda _v: problem.exact,
        factor=FACTOR,
    )


def read_answer(text: str, problem: Problem) -> pint.Quantity:
    """The typed answer as a positive quantity of the right kind for ``problem``, read by the exercise
    checker (:func:`llmcourse.exercises.engine.check`), or :class:`DrillInputError` with its message.

    Accepts ``"320 KiB"``, ``"0.75GB"``, ``"1,250"``, ``"47 tok/s"``, ``"162 GPUs"``.

    Examples
    --------
    >>> p = Problem("kv_per_token", "?", Q_(320, "KiB"), "KiB", "")
    >>> read_answer("327,680 B", p)
    <Quantity(327680.0, 'byte')>
    >>> read_answer("320", p)
    Traceback (most recent call last):
    ...
    llmcourse.widgets.drills.DrillInputError: a bare number has no unit; write 320 KiB or any unit of the same kind.
    """
    return _verdict(_exercise_of(problem), text, problem.unit)[1]


def within(given: pint.Quantity, exact: pint.Quantity, factor: float = FACTOR) -> tuple[bool, float]:
    """Whether ``given`` is within ``factor`` of ``exact`` either way (the checker's rule for an
    exercise with a ``factor``), and the ratio given / exact.

    Examples
    --------
    >>> within(Q_(420, "KiB"), Q_(320, "KiB"))
    (True, 1.3125)
    >>> within(Q_(640, "KiB"), Q_(320, "KiB"))  # forgot nothing, doubled something: a miss
    (False, 2.0)
    """
    ratio = float((given / exact).to("").m)
    return (1 / factor <= ratio <= factor), ratio


# --- the widget ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attempt:
    """One counted answer: the problem, what was typed, the verdict."""

    problem: Problem
    typed: str
    verdict: Verdict


class Drill:
    """Deals seeded estimate questions, checks typed answers within :data:`FACTOR`, keeps score and streak.

    Parameters
    ----------
    seed : int
        Seeds the dealer: the same seed deals the same questions in the same order.
    kinds : sequence of str
        Which kinds of question to deal (see :data:`KINDS`).
    clock : callable
        Returns seconds; the time per question is the difference between deal and check
        (tests pass a fake clock).
    factor : float
        The tolerance: an answer within this factor of the planner's figure passes.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        kinds: Sequence[str] = KINDS,
        clock: Callable[[], float] = time.monotonic,
        factor: float = FACTOR,
    ) -> None:
        unknown = [k for k in kinds if k not in DRILLS]
        if unknown or not kinds:
            raise InputError(f"unknown drill kinds {unknown}; choose from {', '.join(KINDS)}.")
        if not factor > 1:
            raise InputError(f"factor must be greater than 1 (1.5 = within 1.5x either way); got {factor!r}.")
        self.rng = random.Random(seed)
        self.kinds = list(kinds)
        self.clock = clock
        self.factor = factor
        self.score = 0
        self.attempted = 0
        self.streak = 0
        self.best_streak = 0
        self.history: list[Attempt] = []
        self.last: Verdict | None = None
        self.problem: Problem | None = None
        self._dealt_at = 0.0
        self._open = False
        self.question = w.HTML()
        self.answer = w.Text(
            placeholder="e.g. 320 KiB, 0.75 GB, 47 tok/s, 12", description="Answer", continuous_update=False
        )
        self.check_button = w.Button(description="Check", button_style="primary")
        self.next_button = w.Button(description="Next question")
        self.feedback = w.HTML()
        self.scoreboard = w.HTML()
        self.check_button.on_click(lambda _b: self.check())
        self.next_button.on_click(lambda _b: self.deal())
        self.widget = w.VBox(
            [
                w.HTML(f"<b>Estimate drill</b> (within {sig(factor, 2)}x passes)"),
                self.question,
                w.HBox([self.answer, self.check_button, self.next_button]),
                self.feedback,
                self.scoreboard,
            ]
        )
        self.deal()

    def deal(self) -> Problem:
        """Deal the next question, clear the answer box and start its clock."""
        self.problem = deal_problem(self.rng, self.kinds)
        self._dealt_at = self.clock()
        self._open = True
        self.answer.value = ""
        self.question.value = f"<p>{html.escape(self.problem.text)}</p>"
        self.feedback.value = ""
        self._show_score()
        return self.problem

    def check(self, text: str | None = None) -> Verdict:
        """Check ``text`` (default: the answer box) against the current question; never raises."""
        typed = self.answer.value if text is None else str(text)
        p = self.problem
        if not self._open:
            return self._say(Verdict("closed", "Already checked: press Next question for a new one."))
        try:
            result, given = _verdict(dataclasses.replace(_exercise_of(p), factor=self.factor), typed, p.unit)
        except DrillInputError as exc:
            return self._say(Verdict("invalid", f"Not read: {exc} (not counted; try again)"))
        ratio = float((given / p.exact).to("").m)
        elapsed = self.clock() - self._dealt_at
        exact, shown_typed = p.answer_text, typed.strip()
        self._open = False
        self.attempted += 1
        if result.correct:
            self.score += 1
            self.streak += 1
            self.best_streak = max(self.best_streak, self.streak)
            msg = f"Pass: {shown_typed} is {sig(ratio, 2)}x the planner's {exact} (within {sig(self.factor, 2)}x)."
        else:
            self.streak = 0
            why = _typed(result.message.removeprefix("Not yet: ").rstrip("."), p.unit)
            said = f"{shown_typed} is {why}" if why.startswith(("too ", "about ")) else why
            msg = f"Miss: {said}; the planner says {exact}."
        v = Verdict(result.status, f"{msg} How: {p.how}. Time: {elapsed:.1f} s.", ratio, elapsed)
        self.history.append(Attempt(p, typed, v))
        return self._say(v)

    def _say(self, v: Verdict) -> Verdict:
        self.last = v
        color = {"correct": "#070", "wrong": "#b00"}.get(v.status, "#a60")
        self.feedback.value = f"<p style='color:{color}'>{html.escape(v.message)}</p>"
        self._show_score()
        return v

    def _show_score(self) -> None:
        self.scoreboard.value = f"<small>{html.escape(self.summary())}</small>"

    def summary(self) -> str:
        """Score, streak and average time so far, in one line."""
        times = [a.verdict.elapsed for a in self.history if a.verdict.elapsed is not None]
        avg = f", {sum(times) / len(times):.1f} s per answer" if times else ""
        return f"score {self.score}/{self.attempted}, streak {self.streak} (best {self.best_streak}){avg}"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        return f"<Drill: {self.problem.text if self.problem else ''} | {self.summary()}>"


def warmup(seed: int = 0, kinds: Sequence[str] = KINDS) -> list[Problem]:
    """One problem of each kind, dealt from ``seed``: a fixed set to practise on paper.

    Examples
    --------
    >>> [p.kind for p in warmup(0)] == list(KINDS)
    True
    """
    rng = random.Random(seed)
    return [deal_problem(rng, [k]) for k in kinds]


def warmup_markdown(problems: Sequence[Problem]) -> tuple[str, str]:
    """The questions and the answers of a warm-up set as two numbered Markdown lists."""
    questions = "\n".join(f"{i}. {p.text}" for i, p in enumerate(problems, 1))
    answers = "\n".join(f"{i}. **{p.answer_text}**: {p.how}." for i, p in enumerate(problems, 1))
    return questions, answers
