"""Practice with the bank: a graded answer to any variant, spaced repetition, a daily set, a timed mock interview.

:func:`grade` checks a typed answer to a question's variant with the exercise checker
(:func:`llmcourse.exercises.engine.check`: its reading of the text, its units, its slip diagnosis), passing it
within :data:`FACTOR` of the key figure, as the drills do: one checker, not a second.

Spaced repetition is Leitner's: a card (a question) starts in box 1; a right answer moves it up a box (to
:data:`BOXES` at most), a wrong one back to box 1; a card in box n is due every 2^(n-1) days (:func:`interval`).
:func:`daily_set` deals the due cards first (the longest overdue first), then new ones in the bank's order.
:class:`Progress` keeps the boxes and the right and wrong answers by competency (the questions' topics) in a JSON
file the user names (:func:`load_progress`, :func:`save_progress`): a file that is not JSON or not this format is
refused with an :class:`~llmcourse.errors.InputError`, and never overwritten.

:func:`drill_session` and :func:`mock_session` take the typed lines and a clock (a function returning seconds), so
tests drive them without a terminal; the command line (``python -m llmcourse drill`` / ``mock``) is a thin shell.
:func:`report` counts the bank: questions by kind, level and topic, chains, design prompts, and the distinct answers
of each numeric question's variants.

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> grade(QUESTIONS["kv_per_token"], "320 KiB").status
'correct'
>>> interval(1), interval(3)
(1, 4)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pint

from llmcourse.errors import InputError
from llmcourse.exercises.defs_drills import FACTOR
from llmcourse.exercises.engine import Exercise, Result, check
from llmcourse.interview.bank import QUESTIONS
from llmcourse.interview.questions import Question
from llmcourse.interview.templates import num

__all__ = [
    "BOXES",
    "FACTOR",
    "FORMAT",
    "VARIANTS",
    "Card",
    "Progress",
    "answer_text",
    "chains_of",
    "competency_table",
    "daily_set",
    "drill_session",
    "exercise_for",
    "grade",
    "interval",
    "load_progress",
    "mock_chains",
    "mock_session",
    "progress_from_text",
    "report",
    "report_text",
    "save_progress",
    "variant_for",
]

#: The Leitner boxes: a card in box n is due every 2^(n-1) days.
BOXES = 5
#: The ``format`` field a progress file carries, and its version.
FORMAT, VERSION = "llmcourse-interview-progress", 1
#: Variants a bank report and the tests render for each numeric question.
VARIANTS = 40
#: How close a miss must come to a slip's factor for the checker to name it (as the drills).
_SLIP_TOLERANCE = 0.1


def interval(box: int) -> int:
    """Days between reviews of a card in ``box`` (1 to :data:`BOXES`): 2^(box-1)."""
    if isinstance(box, bool) or not isinstance(box, int) or not 1 <= box <= BOXES:
        raise InputError(f"box must be a whole number from 1 to {BOXES}, not {box!r}.")
    return 2 ** (box - 1)


# --- grading --------------------------------------------------------------------------------------------------------
def _unit(q: pint.Quantity | Any) -> str:
    if isinstance(q, pint.Quantity) and not q.dimensionless:
        return format(q.units, "~")
    return ""


def exercise_for(q: Question, variant: int = 0) -> Exercise:
    """The question's variant as an exercise of the checker: its prompt, its key figure, :data:`FACTOR`."""
    value = q.key_figure(variant)
    unit = _unit(value)
    story = q.render("prompt", variant=variant).replace("{", "{{").replace("}", "}}")
    return Exercise(
        id=f"{q.id}_v{variant}",
        title=q.title,
        story=story,
        unit=unit,
        default={"variant": variant},
        vary=lambda rng: {"variant": variant},
        answer=lambda v: value,
        tolerance=_SLIP_TOLERANCE,
        bare_ok=True,
        factor=FACTOR,
    )


def grade(q: Question, answer: Any, variant: int = 0) -> Result:
    """The checker's verdict on ``answer`` for the question's ``variant`` (never raises on the answer)."""
    return check(exercise_for(q, variant), answer, seed=None)


def answer_text(q: Question, variant: int = 0) -> str:
    """The key figure as prose, with the unit an answer is read in (``"320 KiB"``)."""
    value = q.key_figure(variant)
    return num(value, 3, escape=False)


# --- progress -------------------------------------------------------------------------------------------------------
@dataclass
class Card:
    """One question's place in the boxes: its box, the day it is next due, and how often it was answered."""

    box: int = 1
    due: str = ""
    right: int = 0
    wrong: int = 0

    def review(self, correct: bool, today: dt.date) -> None:
        """Move the card: up a box when right, to box 1 when wrong; due again in the new box's interval."""
        self.box = min(BOXES, self.box + 1) if correct else 1
        self.right, self.wrong = self.right + correct, self.wrong + (not correct)
        self.due = (today + dt.timedelta(days=interval(self.box))).isoformat()


@dataclass
class Progress:
    """The cards by question id and the answers by competency (topic): ``{topic: [right, asked]}``."""

    cards: dict[str, Card] = field(default_factory=dict)
    topics: dict[str, list[int]] = field(default_factory=dict)

    def record(self, q: Question, correct: bool, today: dt.date) -> None:
        self.cards.setdefault(q.id, Card()).review(correct, today)
        t = self.topics.setdefault(q.topic, [0, 0])
        t[0], t[1] = t[0] + correct, t[1] + 1

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "cards": {k: vars(c) for k, c in self.cards.items()},
            "topics": self.topics,
        }


def _refuse(path: Path, why: str) -> InputError:
    return InputError(f"--progress {path}: {why}; it was left as it is (name another file, or move this one).")


def load_progress(path: str | os.PathLike[str]) -> Progress:
    """The progress saved in ``path`` (a new one if the file does not exist). Refuses a file that is not JSON, or not
    a progress file of this format and version, naming the file."""
    p = Path(path)
    if not p.exists():
        return Progress()
    if p.is_dir():
        raise _refuse(p, "is a folder, not a file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(p, f"is not a JSON progress file ({type(exc).__name__})") from None
    try:
        return progress_from_text(text)
    except InputError as exc:
        raise _refuse(p, str(exc)) from None


def progress_from_text(text: str) -> Progress:
    """The progress in ``text`` (a progress file's JSON, as :meth:`Progress.to_json` writes it; the book's drill keeps
    it in the page). Refuses (:class:`~llmcourse.errors.InputError`, saying why) text that is not JSON, or not a
    progress of this format and version.

    Examples
    --------
    >>> progress_from_text('{"format": "llmcourse-interview-progress", "version": 1, "cards": {}, "topics": {}}')
    Progress(cards={}, topics={})
    >>> progress_from_text("[]")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: is not an interview progress file (no "format": "llmcourse-interview-progress")
    """
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InputError(f"is not a JSON progress file ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f'is not an interview progress file (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise InputError(f"is version {data.get('version')!r} of the format; this version reads {VERSION}")
    try:
        cards = {str(k): _card(v) for k, v in data["cards"].items()}
        topics = {str(k): _tally(v) for k, v in data["topics"].items()}
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, InputError):
        raise InputError("has cards or topics this version cannot read") from None
    return Progress(cards, topics)


def _tally(v: Any) -> list[int]:
    right, asked = int(v[0]), int(v[1])
    if not 0 <= right <= asked:
        raise ValueError(v)
    return [right, asked]


def _card(v: Mapping[str, Any]) -> Card:
    c = Card(int(v["box"]), str(v["due"]), int(v["right"]), int(v["wrong"]))
    if c.right < 0 or c.wrong < 0:
        raise ValueError(v)
    interval(c.box)  # a box out of range is refused
    if c.due:
        dt.date.fromisoformat(c.due)
    return c


def save_progress(progress: Progress, path: str | os.PathLike[str]) -> None:
    """Write ``progress`` to ``path`` whole or not at all (a temporary file, then renamed over it)."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".progress-", dir=p.parent if str(p.parent) else ".")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(progress.to_json(), f, indent=1, sort_keys=True)
    os.replace(tmp, p)


# --- the daily set and the sessions ---------------------------------------------------------------------------------
def _gradable(bank: Mapping[str, Question], topic: str | None = None) -> list[Question]:
    return [q for q in bank.values() if q.key is not None and (topic is None or q.topic == topic)]


def daily_set(
    progress: Progress,
    today: dt.date,
    n: int = 10,
    *,
    bank: Mapping[str, Question] = QUESTIONS,
    topic: str | None = None,
) -> list[Question]:
    """Today's cards: the due ones first (the longest overdue, then the lowest box), then new ones in bank order."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"--n (cards a day) must be a whole number from 1, not {n!r}.")
    qs = _gradable(bank, topic)
    if topic is not None and not qs:
        topics = sorted({q.topic for q in _gradable(bank)})
        raise InputError(f"--topic {topic!r}: no question has it; the topics are {', '.join(topics)}.")
    due = [q for q in qs if q.id in progress.cards and progress.cards[q.id].due <= today.isoformat()]
    due.sort(key=lambda q: (progress.cards[q.id].due, progress.cards[q.id].box))
    new = [q for q in qs if q.id not in progress.cards]
    return (due + new)[:n]


def variant_for(q: Question, progress: Progress, today: dt.date) -> int:
    """A fresh variant for each review of a card (0, the book's, for a question without variants)."""
    if not q.varies:
        return 0
    c = progress.cards.get(q.id, Card())
    return random.Random(f"{q.id}|{today.isoformat()}|{c.right + c.wrong}").randrange(1, 10**6)


_QUIT = ("q", "quit", "exit")


def drill_session(
    lines: Iterable[str],
    progress: Progress,
    today: dt.date,
    n: int = 10,
    *,
    say: Callable[[str], None] = print,
    bank: Mapping[str, Question] = QUESTIONS,
    topic: str | None = None,
) -> dict[str, list[int]]:
    """Deal today's set, read one answer a card from ``lines`` ("q" stops), grade it, move the card; returns the
    session's right and asked by competency. An answer the checker cannot read counts as wrong, never crashes."""
    cards = daily_set(progress, today, n, bank=bank, topic=topic)
    it: Iterator[str] = iter(lines)
    score: dict[str, list[int]] = {}
    if not cards:
        say("Nothing due today: come back tomorrow, or raise --n.")
    for i, q in enumerate(cards, 1):
        v = variant_for(q, progress, today)
        say(f"\n[{i}/{len(cards)}] {q.title} ({q.level}, {q.topic})\n{q.render('prompt', variant=v)}")
        line = next(it, None)
        if line is None or line.strip().lower() in _QUIT:
            say("Stopped; progress so far is kept.")
            break
        r = grade(q, line.strip(), v)
        say(f"{r.message} The worked answer: {answer_text(q, v)}.")
        progress.record(q, r.correct, today)
        s = score.setdefault(q.topic, [0, 0])
        s[0], s[1] = s[0] + r.correct, s[1] + 1
    say(competency_table(score))
    return score


def competency_table(score: Mapping[str, list[int]]) -> str:
    """Right out of asked by competency, as text."""
    if not score:
        return "No answers scored."
    rows = [f"  {t}: {r}/{a}" for t, (r, a) in sorted(score.items())]
    return "Score by competency:\n" + "\n".join(rows)


def mock_chains(bank: Mapping[str, Question] = QUESTIONS) -> dict[str, list[Question]]:
    """The chains a mock interview can start from: those whose first question is a design prompt or Staff+, and
    whose every question is graded on a figure."""
    return {
        k: v
        for k, v in chains_of(bank).items()
        if (v[0].kind == "design" or v[0].level == "Staff+") and all(q.key for q in v)
    }


def _mock_chain(bank: Mapping[str, Question], chain: str | None, seed: int) -> list[Question]:
    chains = mock_chains(bank)
    if chain is not None:
        if chain not in chains:
            raise InputError(f"--chain {chain!r}: a mock starts from a design or Staff+ chain: {', '.join(chains)}.")
        return chains[chain]
    return chains[random.Random(seed).choice(sorted(chains))]


def chains_of(bank: Mapping[str, Question]) -> dict[str, list[Question]]:
    """The chains of ``bank`` (a :class:`~llmcourse.interview.questions.QuestionBank` or any mapping of questions)."""
    out: dict[str, list[Question]] = {}
    for q in bank.values():
        if q.chain is not None:
            out.setdefault(q.chain, []).append(q)
    return {k: sorted(v, key=lambda q: q.step or 0) for k, v in out.items()}


def mock_session(
    lines: Iterable[str],
    clock: Callable[[], float],
    *,
    minutes: float = 20,
    chain: str | None = None,
    seed: int = 0,
    say: Callable[[str], None] = print,
    bank: Mapping[str, Question] = QUESTIONS,
    variant: int | None = None,
) -> dict[str, list[int]]:
    """A timed mock interview: a design or Staff+ question, then its chain's follow-ups, each graded; a question
    answered after ``minutes`` have passed (by ``clock``, seconds) counts as unanswered, and the rest are skipped.
    ``variant``: the givens' draw for every question (default: one drawn from ``seed``, or the book's for a chain
    without variants). Returns right and asked by competency."""
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not 0 < minutes <= 600:
        raise InputError(f"--minutes must be a number above 0 and at most 600, not {minutes!r}.")
    qs = _mock_chain(bank, chain, seed)
    if variant is None:
        variant = random.Random(f"mock|{seed}").randrange(1, 10**6) if all(q.varies for q in qs) else 0
    start, it = clock(), iter(lines)
    score: dict[str, list[int]] = {}
    say(f"Mock interview: {len(qs)} questions, {minutes:g} minutes.")
    for i, q in enumerate(qs, 1):
        s = score.setdefault(q.topic, [0, 0])
        s[1] += 1
        say(f"\n[{i}/{len(qs)}] {q.title}\n{q.render('prompt', variant=variant)}")
        line = next(it, None)
        late = clock() - start > 60 * minutes
        if line is None or line.strip().lower() in _QUIT or late:
            say("Time is up." if late else "Stopped.")
            for rest in qs[i:]:
                score.setdefault(rest.topic, [0, 0])[1] += 1
            break
        r = grade(q, line.strip(), variant)
        s[0] += r.correct
        say(
            f"{r.message} The worked answer: {answer_text(q, variant)}.\nA strong answer: {q.render('strong', variant=variant)}"
        )
    say(f"Time taken: {(clock() - start) / 60:.1f} minutes.\n" + competency_table(score))
    return score


# --- the bank's counts ----------------------------------------------------------------------------------------------
def report(bank: Mapping[str, Question] = QUESTIONS, variants: int = VARIANTS) -> dict[str, Any]:
    """The bank's counts: questions, by kind, level and topic; chains and their lengths; design prompts; and for each
    numeric question the distinct key figures over ``variants`` variants (1 for a question with the book's only;
    ``variants=0`` leaves them out, as the command line does unless asked: each variant is a computed answer)."""
    qs = list(bank.values())

    def by(attr: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for q in qs:
            out[getattr(q, attr)] = out.get(getattr(q, attr), 0) + 1
        return out

    distinct = {}
    for q in qs:
        if q.kind == "numeric" and variants > 0:
            seen = {_key_value(q.key_figure(v)) for v in (range(variants) if q.varies else [0])}
            distinct[q.id] = len(seen)
    chains = chains_of(bank)
    return {
        "questions": len(qs),
        "kind": by("kind"),
        "level": by("level"),
        "topic": by("topic"),
        "chains": {k: len(v) for k, v in chains.items()},
        "design": sum(q.kind == "design" for q in qs),
        "distinct_answers": distinct,
    }


def _key_value(x: Any) -> float:
    return round(float(x.to_base_units().m if isinstance(x, pint.Quantity) else x), 9)


def report_text(r: Mapping[str, Any]) -> str:
    """:func:`report` as text for the command line."""
    varied = [n for n in r["distinct_answers"].values() if n > 1]
    lines = [
        f"questions: {r['questions']}",
        "by kind: " + ", ".join(f"{k} {n}" for k, n in r["kind"].items()),
        "by level: " + ", ".join(f"{k} {n}" for k, n in r["level"].items()),
        "by topic: " + ", ".join(f"{k} {n}" for k, n in sorted(r["topic"].items())),
        f"chains: {len(r['chains'])} (" + ", ".join(f"{k} {n}" for k, n in r["chains"].items()) + ")",
        f"design prompts: {r['design']}",
    ]
    if r["distinct_answers"]:
        lines.append(
            f"numeric questions with variants: {len(varied)} of {len(r['distinct_answers'])}; distinct answers each: "
            f"{min(varied) if varied else 0} to {max(varied) if varied else 0}"
        )
    else:
        lines.append("distinct answers per numeric question: not counted (give --variants 20)")
    return "\n".join(lines)
