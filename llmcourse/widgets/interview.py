"""The interview practice in the book: spaced repetition over the bank (:class:`Practice`) and a timed mock
interview (:class:`Mock`), the widgets of the chapter *Drills* (``book/15_drills.md``).

Both are the command line's ``drill`` and ``mock`` (:mod:`llmcourse.interview.practice`) as widgets: the same daily
set (due cards first, then new ones), the same Leitner boxes, the same grading (the exercise checker, within
:data:`~llmcourse.interview.practice.FACTOR`, with its slip diagnosis), a fresh variant of a question at each review.
:class:`Practice` keeps its progress in :mod:`llmcourse.page_store` under :data:`STORE_KEY`, as the progress file's
JSON: in the published book the page keeps it in the browser's ``localStorage``, so a reader who reloads the page or
comes back another day finds the boxes where they were left. Progress it cannot read (another version, damaged) is
set aside under ``STORE_KEY + ".unreadable"`` and the reader starts afresh, told so.

An answer is any text: one the checker cannot read gets its message and does not count (type again); nothing a
reader types raises or hangs (text over :data:`MAX_ANSWER` characters is refused unread).

Driven from code (as the tests do)::

    p = Practice(today=dt.date(2026, 1, 5))
    p.answer.value = "320 KiB"
    p.check_button.click()      # or p.check()
    p.next_button.click()       # or p.deal()

Examples
--------
>>> import datetime as dt
>>> from llmcourse import page_store
>>> page_store.fill({})
>>> p = Practice(n=3, today=dt.date(2026, 1, 5))
>>> p.card.id, p.check("lots").status, p.asked
('weights_fit', 'invalid', 0)
>>> p.check(p.answer_text).status, p.asked, p.progress.cards["weights_fit"].box
('correct', 1, 2)
>>> Practice(n=3, today=dt.date(2026, 1, 5)).progress.cards["weights_fit"].due  # kept: a new widget finds it
'2026-01-07'
>>> page_store.fill({})
"""

from __future__ import annotations

import datetime as dt
import html
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as w

from llmcourse import page_store
from llmcourse.errors import InputError
from llmcourse.interview.bank import QUESTIONS
from llmcourse.interview.practice import (
    BOXES,
    FACTOR,
    Progress,
    answer_text,
    daily_set,
    grade,
    mock_chains,
    progress_from_text,
    variant_for,
)
from llmcourse.interview.questions import Question

__all__ = ["MAX_ANSWER", "MOCKS_KEY", "STORE_KEY", "Mock", "Practice", "Said"]

#: Where :class:`Practice` keeps the reader's progress (:mod:`llmcourse.page_store`).
STORE_KEY = page_store.PREFIX + "interview-progress"
#: Where :class:`Mock` keeps the reader's last mock interviews (their scores), newest last.
MOCKS_KEY = page_store.PREFIX + "interview-mocks"
#: The longest answer read (characters); a longer one is refused unread.
MAX_ANSWER = 200
#: Mock interviews kept.
MOCKS_KEPT = 20


@dataclass(frozen=True)
class Said:
    """What a widget said to an answer: ``status`` (``"correct"``, ``"wrong"``, ``"invalid"`` (not counted),
    ``"late"`` (a mock's time was up), ``"closed"`` (nothing to answer)) and the message."""

    status: str
    message: str


def _paragraphs(text: str) -> str:
    return "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n\n"))


def _color(status: str) -> str:
    return {"correct": "#070", "wrong": "#b00", "late": "#b00"}.get(status, "#a60")


def _grade(q: Question, typed: Any, variant: int) -> tuple[Said, bool]:
    """The checker's verdict as (what to say, whether it counts). Never raises."""
    text = str(typed).strip() if typed is not None else ""
    if not text:
        return Said("invalid", "Type an answer first (a number with its unit, e.g. 320 KiB)."), False
    if len(text) > MAX_ANSWER:
        return Said("invalid", f"Not read: an answer is a number and a unit, not {len(text)} characters."), False
    try:
        r = grade(q, text, variant)
    except Exception as exc:  # pragma: no cover - the checker never raises; a bug is shown, not thrown
        return Said("invalid", f"Not read ({type(exc).__name__}); type a number with its unit."), False
    if r.status in ("correct", "wrong"):
        return Said(r.status, f"{r.message} The worked answer: {answer_text(q, variant)}."), True
    return Said("invalid", f"{r.message} (Not counted: type again.)"), False


def _table(score: Mapping[str, list[int]]) -> str:
    if not score:
        return ""
    rows = "".join(f"<tr><td>{html.escape(t)}</td><td>{r}/{a}</td></tr>" for t, (r, a) in sorted(score.items()))
    return f"<table class='llmcourse-result'><tr><th>competency</th><th>right/asked</th></tr>{rows}</table>"


class Practice:
    """Today's set of the bank's cards, graded, with Leitner boxes kept between visits.

    Parameters
    ----------
    n : int
        Cards a day (the due ones first, then new ones, as :func:`~llmcourse.interview.practice.daily_set`).
    topic : str, optional
        Deal only the questions of this competency (a topic of the bank).
    today : datetime.date, optional
        The day (default: today).
    clock : callable
        Returns seconds; the time an answer took is the difference between deal and check.
    """

    def __init__(
        self,
        n: int = 10,
        *,
        topic: str | None = None,
        today: dt.date | None = None,
        clock: Callable[[], float] = time.monotonic,
        bank: Mapping[str, Question] = QUESTIONS,
    ) -> None:
        self.n, self.topic, self.bank, self.clock = n, topic, bank, clock
        self.today = dt.date.today() if today is None else today
        self.note = ""
        self.progress = self._load()
        daily_set(self.progress, self.today, n, bank=bank, topic=topic)  # refuses a bad n or topic now
        self.asked = self.right = 0
        self.card: Question | None = None
        self.variant = 0
        self.answer_text = ""
        self.last: Said | None = None
        self._dealt_at = 0.0
        self._open = False
        self.header, self.question, self.feedback, self.board = w.HTML(), w.HTML(), w.HTML(), w.HTML()
        self.answer = w.Text(placeholder="e.g. 320 KiB, 47 tok/s, 12 GPUs", description="Answer")
        self.check_button = w.Button(description="Check", button_style="primary")
        self.next_button = w.Button(description="Next card")
        self.reset_button = w.Button(description="Forget my progress", button_style="warning")
        self.check_button.on_click(lambda _b: self.check())
        self.next_button.on_click(lambda _b: self.deal())
        self.reset_button.on_click(lambda _b: self.reset())
        self.widget = w.VBox(
            [
                w.HTML(f"<b>Interview practice</b>: today's cards, spaced over days (within {FACTOR:g}x passes)"),
                self.header,
                self.question,
                w.HBox([self.answer, self.check_button, self.next_button]),
                self.feedback,
                self.board,
                self.reset_button,
            ],
            layout=w.Layout(max_width="100%"),
        )
        self.widget.add_class("llmcourse-practice")
        self.deal()

    # --- the kept progress --------------------------------------------------------------------------------------
    def _load(self) -> Progress:
        text = page_store.get(STORE_KEY)
        if text is None:
            return Progress()
        try:
            return progress_from_text(text)
        except InputError as exc:
            page_store.put(STORE_KEY + ".unreadable", text)
            self.note = f"Your saved progress could not be read ({exc}); it was set aside and you start afresh."
            return Progress()

    def _save(self) -> None:
        page_store.put(STORE_KEY, json.dumps(self.progress.to_json(), sort_keys=True))

    def reset(self) -> None:
        """Forget every card and score (kept as an empty progress) and deal again."""
        self.progress = Progress()
        self._save()
        self.note = "Progress forgotten: every card is new."
        self.deal()

    # --- dealing and checking -----------------------------------------------------------------------------------
    def deal(self) -> Question | None:
        """The next card of today's set (None when the set is done), with a fresh variant."""
        cards = daily_set(self.progress, self.today, self.n, bank=self.bank, topic=self.topic)
        self.card = cards[0] if cards else None
        self.answer.value = ""
        self.feedback.value = ""
        if self.card is None:
            self._open = False
            self.header.value = "<p><b>Today's set is done.</b> Come back tomorrow for the cards that fall due.</p>"
            self.question.value = ""
            self.answer_text = ""
        else:
            q = self.card
            self.variant = variant_for(q, self.progress, self.today)
            self.answer_text = answer_text(q, self.variant)
            box = self.progress.cards[q.id].box if q.id in self.progress.cards else None
            where = f"box {box} of {BOXES}" if box else "new card"
            self.header.value = (
                f"<p><small>{len(cards)} card{'s' * (len(cards) != 1)} left today · {where} · "
                f"{html.escape(q.level)} · {html.escape(q.topic)}</small><br><b>{html.escape(q.title)}</b></p>"
            )
            self.question.value = _paragraphs(q.render("prompt", variant=self.variant))
            self._open = True
            self._dealt_at = self.clock()
        self._show_board()
        return self.card

    def check(self, text: Any = None) -> Said:
        """Grade ``text`` (default: the answer box) on the current card, move the card and keep the progress.
        Never raises: an answer the checker cannot read gets its message and does not count."""
        typed = self.answer.value if text is None else text
        if not self._open or self.card is None:
            return self._say(Said("closed", "Nothing to answer: press Next card."))
        said, counts = _grade(self.card, typed, self.variant)
        if counts:
            self._open = False
            correct = said.status == "correct"
            self.progress.record(self.card, correct, self.today)
            self.asked, self.right = self.asked + 1, self.right + correct
            card = self.progress.cards[self.card.id]
            secs = self.clock() - self._dealt_at
            said = Said(said.status, f"{said.message} Time: {secs:.0f} s. Next review: {card.due} (box {card.box}).")
            self._save()
        return self._say(said)

    def _say(self, said: Said) -> Said:
        self.last = said
        self.feedback.value = f"<p style='color:{_color(said.status)}'>{html.escape(said.message)}</p>"
        self._show_board()
        return said

    def summary(self) -> str:
        """This session's score, the cards by box and the cards due, in one line."""
        boxes = [sum(c.box == b for c in self.progress.cards.values()) for b in range(1, BOXES + 1)]
        due = sum(c.due <= self.today.isoformat() for c in self.progress.cards.values())
        return (
            f"today {self.right}/{self.asked} right; cards seen {len(self.progress.cards)}, by box "
            + ", ".join(f"{b}: {n}" for b, n in enumerate(boxes, 1))
            + f"; due now {due}"
        )

    def _show_board(self) -> None:
        note = f"<p style='color:#a60'>{html.escape(self.note)}</p>" if self.note else ""
        self.board.value = (
            f"{note}<p class='llmcourse-practice-summary'><small>{html.escape(self.summary())}</small></p>"
            + _table(self.progress.topics)
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        return f"<Practice: {self.card.id if self.card else 'done'} | {self.summary()}>"


class Mock:
    """A timed mock interview: a design or Staff+ question, then its chain's follow-ups, one variant for all,
    each graded; scored by competency. An answer given after ``minutes`` counts as unanswered, as do the rest.

    Parameters
    ----------
    minutes : float
        The time allowed, from :meth:`start`.
    seed : int, optional
        Picks the variant (default: a new one each start).
    clock : callable
        Returns seconds (tests pass a fake one).
    """

    def __init__(
        self,
        minutes: float = 20,
        *,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        bank: Mapping[str, Question] = QUESTIONS,
    ) -> None:
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not 0 < minutes <= 600:
            raise InputError(f"minutes must be a number above 0 and at most 600, not {minutes!r}.")
        self.chains = mock_chains(bank)
        self.seed, self.clock, self.minutes = seed, clock, float(minutes)
        self.qs: list[Question] = []
        self.i = 0
        self.variant = 0
        self.score: dict[str, list[int]] = {}
        self.last: Said | None = None
        self._started = 0.0
        options = [(f"{v[0].title} ({v[0].level}, {len(v)} questions)", k) for k, v in self.chains.items()]
        self.chain = w.Dropdown(options=options, description="Brief", layout=w.Layout(max_width="100%"))
        self.time_box = w.BoundedFloatText(value=self.minutes, min=1, max=600, description="Minutes")
        self.start_button = w.Button(description="Start the mock", button_style="primary")
        self.question, self.feedback, self.board = w.HTML(), w.HTML(), w.HTML()
        self.answer = w.Text(placeholder="your key figure, with its unit", description="Answer")
        self.submit_button = w.Button(description="Answer")
        self.start_button.on_click(lambda _b: self.start())
        self.submit_button.on_click(lambda _b: self.submit())
        self.widget = w.VBox(
            [
                w.HTML("<b>Mock interview</b>: a brief, then the interviewer's follow-ups, against the clock"),
                w.HBox([self.chain, self.time_box, self.start_button], layout=w.Layout(flex_flow="row wrap")),
                self.question,
                w.HBox([self.answer, self.submit_button]),
                self.feedback,
                self.board,
            ],
            layout=w.Layout(max_width="100%"),
        )
        self.widget.add_class("llmcourse-mock")
        self._show_history()

    @property
    def running(self) -> bool:
        return bool(self.qs) and self.i < len(self.qs)

    def start(self, chain: str | None = None) -> Question:
        """Start a mock on ``chain`` (default: the one chosen): its first question, the clock from now."""
        cid = self.chain.value if chain is None else chain
        if cid not in self.chains:
            raise InputError(f"chain {cid!r}: a mock starts from one of {', '.join(self.chains)}.")
        self.minutes = float(self.time_box.value or self.minutes)
        self.qs, self.i, self.score = self.chains[cid], 0, {}
        seed = random.randrange(10**9) if self.seed is None else self.seed
        self.variant = random.Random(f"mock|{seed}").randrange(1, 10**6) if all(q.varies for q in self.qs) else 0
        self._started = self.clock()
        self.feedback.value = ""
        self._ask()
        return self.qs[0]

    def _ask(self) -> None:
        q = self.qs[self.i]
        self.answer.value = ""
        self.question.value = (
            f"<p><small>Question {self.i + 1} of {len(self.qs)} · {html.escape(q.topic)} · "
            f"{self.minutes:g} minutes in all</small><br><b>{html.escape(q.title)}</b></p>"
            + _paragraphs(q.render("prompt", variant=self.variant))
        )

    def submit(self, text: Any = None) -> Said:
        """Grade ``text`` (default: the answer box) on the current question and ask the next. Never raises."""
        if not self.running:
            return self._say(Said("closed", "No mock is running: choose a brief and press Start the mock."))
        q = self.qs[self.i]
        used = (self.clock() - self._started) / 60
        if used > self.minutes:
            for rest in self.qs[self.i :]:
                self.score.setdefault(rest.topic, [0, 0])[1] += 1
            self.i = len(self.qs)
            return self._finish(
                Said("late", f"Time is up ({used:.1f} of {self.minutes:g} minutes): the rest count as unanswered.")
            )
        said, counts = _grade(q, self.answer.value if text is None else text, self.variant)
        if not counts:
            return self._say(said)
        s = self.score.setdefault(q.topic, [0, 0])
        s[0], s[1] = s[0] + (said.status == "correct"), s[1] + 1
        strong = q.render("strong", variant=self.variant)
        said = Said(said.status, f"{said.message} A strong answer: {strong}")
        self.i += 1
        if self.running:
            self._ask()
            return self._say(said)
        return self._finish(said)

    def _finish(self, said: Said) -> Said:
        used = (self.clock() - self._started) / 60
        right = sum(r for r, _a in self.score.values())
        asked = sum(a for _r, a in self.score.values())
        self.question.value = f"<p><b>Mock over: {right}/{asked} in {used:.1f} minutes.</b></p>"
        history = self._history()
        history.append({"date": dt.date.today().isoformat(), "chain": self.qs[0].chain, "right": right, "asked": asked})
        page_store.put(MOCKS_KEY, json.dumps(history[-MOCKS_KEPT:]))
        self._say(said)
        self._show_history()
        return said

    def _history(self) -> list[dict[str, Any]]:
        try:
            kept = json.loads(page_store.get(MOCKS_KEY) or "[]")
        except (TypeError, ValueError, RecursionError):
            return []
        return [m for m in kept if isinstance(m, dict)] if isinstance(kept, list) else []

    def _say(self, said: Said) -> Said:
        self.last = said
        self.feedback.value = f"<p style='color:{_color(said.status)}'>{html.escape(said.message)}</p>"
        return said

    def _show_history(self) -> None:
        done = self._history()[-5:]
        past = "; ".join(f"{m.get('date', '?')}: {m.get('right', '?')}/{m.get('asked', '?')}" for m in done)
        self.board.value = _table(self.score) + (
            f"<p><small>Your last mocks: {html.escape(past)}</small></p>" if past else ""
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
