"""The checking engine: compare a student's answer with the planner's, unit-aware, and explain.

Every exercise is an :class:`Exercise`: a story with givens drawn from a *variant* (the book's
default, or one generated from a student's seed), an expected unit, a tolerance, hints, and an
``answer(variant)`` function that calls the planner. Nothing here stores an answer: it is
computed when :func:`check` runs, and it is not part of the student's interface (a teacher reads
the key with ``python -m llmcourse check --key EXERCISE --seed S``, see
:func:`llmcourse.exercises.cli.answer_key`).

:func:`check` never raises, whatever the exercise id and the answer (a string, a huge number, an
object whose methods raise). It returns a :class:`Result` whose display says whether the answer is
right, which unit was expected, in which direction and roughly how far off it is (never the exact
ratio), a diagnosis for the usual slips of the answer's kind (bytes: KiB vs kB, bits vs bytes; time:
ms vs s; rates: per second vs per minute; money: per token vs per million; counts: a percentage,
rounding), and a hint that grows with each wrong try.

Examples
--------
>>> from llmcourse import Q_
>>> from llmcourse.exercises import check, reset
>>> reset()
>>> check("kv_cache_ex1", None).message
'Not answered yet.'
>>> check("kv_cache_ex1", Q_(1, "KiB")).message
'Not yet: about 300x too small.'
>>> check("kv_cache_ex1", "0,5 KiB").message
"Not yet: '0,5' has a decimal comma; write the decimal point as '.', e.g. 0.5."
>>> check("kv_cache_ex1", 10**400).status
'invalid'
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import math
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.exercises.answers import (
    AnswerRefused,
    quoted,
    read_answer,
    seed_text,
    short_text,
    show_value,
)
from llmcourse.exercises.slips import diagnosis, kind_of, size_words, slip_words  # noqa: F401 (engine.slip_words)
from llmcourse.units import Q_, sig

__all__ = [
    "CHAPTERS",
    "NO_ANSWER",
    "Exercise",
    "Progress",
    "Result",
    "best_answers",
    "best_of",
    "check",
    "exercises",
    "get",
    "progress",
    "register",
    "reset",
    "show",
    "student",
    "variant_of",
]

#: Chapters in book order: (chapter key, title). Exercise ids are ``<chapter>_ex<N>``.
CHAPTERS: dict[str, str] = {
    "first_estimate": "A first estimate",
    "tokens": "Tokens",
    "weights": "Weights",
    "kv_cache": "The KV cache",
    "gqa": "Grouped-query attention",
    "decode": "Decode",
    "prefill": "Prefill",
    "moe": "Mixture of experts",
    "batching": "Batching",
    "speculative": "Speculative decoding",
    "many_gpus": "Many GPUs",
    "fleet": "Sizing the fleet",
    "queueing": "Queueing",
    "disaggregation": "Disaggregated serving",
    "design_review": "Design review",
}

_DEFS = {key: f"llmcourse.exercises.defs_{key}" for key in CHAPTERS}


@dataclass(frozen=True)
class Exercise:
    """One auto-checked exercise.

    ``story`` is a format string over the variant's keys. ``vary(rng)`` draws a variant from a
    :class:`random.Random`; ``default`` is the variant printed in the book. ``answer(variant)``
    returns the expected value (a quantity, or a plain number when ``unit`` is ``""``), computed
    with the planner; it is for the checker, not for students (the expected value of a seed is the
    teacher's, see :func:`llmcourse.exercises.cli.answer_key`). ``bare_ok`` accepts a bare number as
    a value in ``unit`` (only where the story says which unit). ``integer`` answers must match
    exactly (a count of GPUs, a batch). ``mistakes(variant)`` lists extra (factor, diagnosis) pairs
    for this exercise: the slip gives ``factor`` times the right answer; ``kv`` says half the answer
    means keys and values were not both counted. ``factor`` makes the exercise an estimate: an answer
    within that factor of the expected one, either way, passes (``tolerance`` then only says how close a
    slip must come to its factor to be named); the drills use it. ``followup`` is what the book's statement
    asks beyond the checked answer (see :mod:`llmcourse.exercises.notebooks`).
    """

    id: str
    title: str
    story: str
    unit: str
    default: dict[str, Any]
    vary: Callable[[random.Random], dict[str, Any]] = field(repr=False)
    answer: Callable[[dict[str, Any]], Any] = field(repr=False)
    hints: tuple[str, ...] = ()
    tolerance: float = 0.01
    bare_ok: bool = False
    integer: bool = False
    kv: bool = False
    mistakes: Callable[[dict[str, Any]], Iterable[tuple[float, str]]] | None = field(default=None, repr=False)
    factor: float | None = None
    #: What the book's statement of the exercise asks beyond the checked answer (a reason, a choice, a second
    #: figure), after the story: the chapter's ``{exercise}`` block is the story at the book's variant plus this.
    followup: str = ""

    def __getattr__(self, name: str) -> Any:
        if name in ("expected", "expected_for", "solution"):
            raise AttributeError(
                f"an exercise does not give its expected answer; check(...) says how far off an answer is, and a "
                f"teacher reads the key with `python -m llmcourse check --key {self.id} --seed S`."
            )
        raise AttributeError(name)

    @property
    def chapter(self) -> str:
        return self.id.rsplit("_ex", 1)[0]

    @property
    def number(self) -> int:
        return int(self.id.rsplit("_ex", 1)[1])

    def variant(self, seed: Any = None) -> dict[str, Any]:
        """The givens for ``seed`` (None: the book's default variant). Same seed, same variant.

        A student's variant is drawn again (up to :data:`_REDRAWS` times) while the book's answer would
        pass for it: the book's answer is printed, so a student's must differ."""
        s = seed_text(seed)
        if s is None:
            return dict(self.default)
        digest = hashlib.sha256(f"{self.id}|{s}".encode("utf-8", "surrogatepass")).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        first = dict(self.vary(rng))
        v = first
        try:
            book = expected_answer(self, dict(self.default))
            for _ in range(_REDRAWS):
                if not _passes(self, book, expected_answer(self, v)):
                    return v
                v = dict(self.vary(rng))
        except Exception:  # pragma: no cover - an answer that cannot be computed is the checker's to report
            return first
        return first

    def text(self, seed: Any = None) -> str:
        """The story with the variant's givens filled in."""
        v = self.variant(seed)
        return self.story.format(**{k: show_value(x) for k, x in v.items()})


def _to_quantity(value: Any, unit: str) -> pint.Quantity:
    q = value if isinstance(value, pint.Quantity) else Q_(float(value), "")
    return q.to(unit) if unit else q.to("")


_ANSWERS: dict[tuple[str, str], pint.Quantity] = {}
#: Draws of a student's variant before giving up on one whose answer differs from the book's.
_REDRAWS = 32


def _passes(ex: Exercise, given: pint.Quantity, expected: pint.Quantity) -> bool:
    """Whether ``given`` would be accepted as the answer ``expected`` (the checker's rule)."""
    return _close(ex, float(given.to_base_units().m), float(expected.to_base_units().m))


def _close(ex: Exercise, got: float, exp: float) -> bool:
    """The checker's rule on magnitudes in base units: a count exactly, anything else within the tolerance."""
    if ex.factor is not None:  # an estimate: within the factor either way
        return exp != 0 and 1 / ex.factor <= got / exp <= ex.factor
    if ex.integer:
        return abs(got - exp) < 1e-06 * max(1.0, abs(exp))
    return abs(got - exp) <= ex.tolerance * abs(exp)


def expected_answer(ex: Exercise, variant: dict[str, Any]) -> pint.Quantity:
    """The expected answer for these givens, in the exercise's unit (computed once per session, then
    remembered). The checker's and the teacher's, not the student's."""
    key = (ex.id, repr(sorted(variant.items())))
    if key not in _ANSWERS:
        if len(_ANSWERS) > 16_384:
            _ANSWERS.clear()
        _ANSWERS[key] = _to_quantity(ex.answer(variant), ex.unit)
    return _ANSWERS[key]


# --- the registry ---------------------------------------------------------------------------------
_REGISTRY: dict[str, Exercise] = {}
_LOADED: set[str] = set()


def register(*items: Exercise) -> None:
    """Add exercises to the registry (the ``defs_<chapter>`` modules call this)."""
    for ex in items:
        if ex.id in _REGISTRY and _REGISTRY[ex.id] is not ex:
            raise ValueError(f"exercise {ex.id!r} defined twice")
        _REGISTRY[ex.id] = ex


def _load(chapter: str) -> None:
    if chapter in _DEFS and chapter not in _LOADED:
        import importlib

        importlib.import_module(_DEFS[chapter])
        _LOADED.add(chapter)


def exercises(chapter: str | None = None) -> list[Exercise]:
    """Every exercise of ``chapter`` (all chapters if None), in book order."""
    for key in [chapter] if chapter else list(CHAPTERS):
        _load(key)
    order = list(CHAPTERS)
    found = [e for e in _REGISTRY.values() if chapter is None or e.chapter == chapter]
    return sorted(found, key=lambda e: (order.index(e.chapter) if e.chapter in order else 99, e.number))


def _id_key(text: str) -> str:
    """An exercise id or a chapter as typed, in the registry's spelling: lower case, no surrounding spaces,
    spaces and hyphens read as underscores (``"KV-Cache Ex1 "`` is ``"kv_cache_ex1"``); a text longer than
    any id is left as it is."""
    if len(text) > 200:
        return text
    return "_".join(text.lower().replace("-", " ").replace("_", " ").split())


def get(exercise_id: str) -> Exercise:
    """The exercise with this id (case, surrounding spaces and hyphens for underscores do not matter: see
    :func:`_id_key`); a KeyError that suggests close ids if there is none (also for an id that is not a string)."""
    shown = quoted(exercise_id)
    if not isinstance(exercise_id, str):
        raise KeyError(f"no exercise {shown}: an exercise id is a string such as 'kv_cache_ex1'.")
    key = _id_key(str.__getitem__(exercise_id, slice(None)))
    if "_ex" in key and len(key) <= 100:
        _load(key.rsplit("_ex", 1)[0])
    if key in _REGISTRY:
        return _REGISTRY[key]
    import difflib

    ids = [e.id for e in exercises()]
    close = difflib.get_close_matches(key, ids, n=3) if len(key) <= 100 else []
    raise KeyError(f"no exercise {shown}" + (f"; did you mean {', '.join(close)}?" if close else "."))


# --- session state ------------------------------------------------------------------------------------
_UNSET = object()
#: The answer of ``check(exercise_id)`` called with none: what a grader hears then, and gives :func:`check` (or
#: :func:`best_of`) to score that try: a result "blank" that says what the exercise asks, scored 0.
NO_ANSWER: Any = _UNSET
#: The student id a grader imposes on this process (see :mod:`llmcourse.exercises.cli`); :func:`reset`
#: and :func:`student` do not change it.
_GRADING_SEED: Any = _UNSET
#: Called as ``observer(exercise_id, answer, seed)`` by every :func:`check` (the grader's recorder).
_OBSERVER: Callable[[Any, Any, str | None], None] | None = None


@dataclass
class _Session:
    seed: str | None = None
    tries: dict[tuple[str, str], int] = field(default_factory=dict)
    done: set[tuple[str, str]] = field(default_factory=set)
    #: Per (exercise id, repr(seed)): the answer that counts and its result (see :func:`best_answers`).
    best: dict[tuple[str, str], tuple[Any, Result]] = field(default_factory=dict)

    def current_seed(self, seed: Any = None) -> str | None:
        if _GRADING_SEED is not _UNSET:
            return _GRADING_SEED
        s = seed_text(seed)
        return s if s is not None else self.seed


_SESSION = _Session()


def grade_as(seed: str | None, observer: Callable[[Any, Any, str | None], None]) -> None:
    """In the process a grader runs a notebook in: every :func:`check` calls ``observer(exercise_id, answer,
    seed)``, and with ``seed`` (the student id the teacher gave, as :func:`~llmcourse.exercises.answers.seed_text`
    writes it) every variant is that student's, whatever the notebook's :func:`student` says."""
    global _GRADING_SEED, _OBSERVER
    if seed is not None:
        _GRADING_SEED = seed
    _OBSERVER = observer


def notebook_student() -> str | None:
    """The student this session's :func:`student` chose (None: the book's variants), whatever a grader imposes:
    the grader says so when it differs from the ``--seed`` it grades by."""
    return _SESSION.seed


@contextlib.contextmanager
def own_session() -> Iterator[None]:
    """A session of its own while the block runs (no student, no answers, no grading seed, no observer), the one
    before it after: the grader checks the answers it heard so, and nothing a notebook did counts."""
    global _SESSION, _GRADING_SEED, _OBSERVER
    saved = _SESSION, _GRADING_SEED, _OBSERVER
    _SESSION, _GRADING_SEED, _OBSERVER = _Session(), _UNSET, None
    try:
        yield
    finally:
        _SESSION, _GRADING_SEED, _OBSERVER = saved


def student(seed: Any = None) -> str:
    """Set this session's student id (a number or a name): every exercise then uses that
    student's variant. ``None`` (or ``""``) brings back the book's default variants."""
    _SESSION.seed = seed_text(seed)
    if _GRADING_SEED is not _UNSET:
        which = "the book's default variants" if _GRADING_SEED is None else f"student {_GRADING_SEED}'s variants"
        return f"This notebook is being graded on {which}; student(...) does not change them."
    if _SESSION.seed is None:
        return "Using the book's default variants."
    return f"Variants for student {short_text(_SESSION.seed, 200)}: your numbers differ from the book's and from your classmates'."


def variant_of(exercise_id: str, seed: Any = None) -> dict[str, Any]:
    """The givens of an exercise for ``seed`` (or the session's student)."""
    return get(exercise_id).variant(_SESSION.current_seed(seed))


def reset() -> None:
    """Forget this session's tries, completed exercises and student id."""
    global _SESSION
    _SESSION = _Session()


# --- results ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Result:
    """What :func:`check` found. ``status`` is one of ``correct``, ``wrong``, ``unit``,
    ``blank``, ``invalid`` (input that is not a usable number) or ``unknown`` (no such exercise)."""

    exercise_id: str
    status: str
    message: str
    expected_unit: str | None = None
    hint: str | None = None
    hints: tuple[str, ...] = ()
    tries: int = 0

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    @property
    def answered(self) -> bool:
        return self.status not in ("blank", "unknown")

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        mark = {"correct": "\u2713", "blank": "\u2026"}.get(self.status, "\u2717")
        lines = [f"{mark} {self.exercise_id}: {self.message}"]
        if self.expected_unit is not None and self.status in ("unit", "invalid"):
            lines.append(f"  expected unit: {self.expected_unit}")
        lines += [f"  hint {i}: {h}" for i, h in enumerate(self.hints, 1)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        color = {"correct": "#1a7f37", "blank": "#57606a"}.get(self.status, "#cf222e")
        mark = {"correct": "\u2713", "blank": "\u2026"}.get(self.status, "\u2717")
        parts = [
            f"<div style='border-left:4px solid {color};padding:2px 8px'>"
            f"<b style='color:{color}'>{mark} {html.escape(self.exercise_id)}</b>: {html.escape(self.message)}"
        ]
        if self.expected_unit is not None and self.status in ("unit", "invalid"):
            parts.append(f"<br>expected unit: <code>{html.escape(self.expected_unit)}</code>")
        parts += [f"<br><i>hint {i}:</i> {html.escape(h)}" for i, h in enumerate(self.hints, 1)]
        return "".join(parts) + "</div>"


# --- checking an answer ---------------------------------------------------------------------------------
def _diagnose(
    ratio: float, ex: Exercise, variant: dict[str, Any], given: pint.Quantity, expected: pint.Quantity
) -> tuple[str, str | None]:
    """:func:`~llmcourse.exercises.slips.diagnosis` with this exercise's own slips (its ``mistakes`` for the
    variant, and half the answer where it counts keys and values): the words and the slip's hint (or None)."""

    def specific() -> Iterable[tuple[float, str]]:
        yield from ex.mistakes(variant) if ex.mistakes else ()
        if ex.kv:
            yield (1 / 2, "did you count keys and values?")

    return diagnosis(ratio, kind_of(expected), ex.tolerance, specific(), given=given, expected=expected)


def check(exercise_id: Any = _UNSET, answer: Any = _UNSET, *, seed: Any = None) -> Result:
    """Check ``answer`` for an exercise. Never raises, whatever the id and the answer (or none); see :class:`Result`.

    ``seed`` (a student number or name) picks that student's variant; without it the session's
    student (see :func:`student`) or the book's default variant is used. ``exercise_id`` may also be
    an :class:`Exercise` that is not registered (a drill's dealt question). Without an answer (``check(id)``)
    the result says what the exercise asks and how to give one.
    """
    try:
        if exercise_id is _UNSET:
            return Result(
                "(no exercise)",
                "unknown",
                "check(exercise_id, answer) checks an answer: name the exercise and give your answer, e.g. "
                "check('kv_cache_ex1', Q_(number, 'KiB')); progress() lists the exercises.",
            )
        if answer is _UNSET:
            if _OBSERVER is not None:  # a grader hears the try, as an attempt without an answer
                with contextlib.suppress(Exception):
                    _OBSERVER(exercise_id, NO_ANSWER, _SESSION.current_seed(seed))
            return _no_answer(exercise_id, seed)
        result = _check(exercise_id, answer, seed)
        if result.status != "unknown":
            _record((result.exercise_id, repr(_SESSION.current_seed(seed))), answer, result)
        return result
    except KeyboardInterrupt:
        raise
    except BaseException:  # a hostile answer's methods may raise anything, even SystemExit
        return Result(
            short_text(exercise_id),
            "invalid",
            "Not yet: reading this answer raised an error; give a number, e.g. Q_(value, unit).",
        )


#: The most (exercise, student) pairs a session keeps the answer that counts for (a loop over made-up seeds).
_MOST_BEST = 10_000


def _counts_over(old: Result | None, new: Result) -> bool:
    """Whether ``new`` is the answer that counts rather than ``old``: a correct answer, once given, stays; else the
    last answer given (a blank one only where there was none)."""
    if old is None:
        return True
    return not old.correct and new.status != "blank"


def _record(key: tuple[str, str], answer: Any, result: Result) -> None:
    old = _SESSION.best.get(key)
    if (old is not None or len(_SESSION.best) < _MOST_BEST) and _counts_over(old[1] if old else None, result):
        _SESSION.best[key] = (answer, result)


def best_answers(*, seed: Any = _UNSET) -> dict[str, tuple[Any, Result]]:
    """The answer that counts for each exercise checked in this session, with its result: the first correct answer
    if one was given (a later wrong try does not undo it), else the last answer given (a later ``check(id, None)``
    does not erase an answer). Exactly the exercises :func:`progress` says are done have a correct result here.

    ``seed`` picks the student whose variants the answers were checked on (default: the session's, see
    :func:`student`; ``None``: the book's default variants).

    Examples
    --------
    >>> from llmcourse import Q_
    >>> reset()
    >>> check("kv_cache_ex1", Q_(320, "KiB")).correct, check("kv_cache_ex1", Q_(1, "KiB")).correct
    (True, False)
    >>> answer, result = best_answers()["kv_cache_ex1"]
    >>> answer, result.correct
    (<Quantity(320, 'kibibyte')>, True)
    """
    s = repr(_SESSION.current_seed() if seed is _UNSET else seed_text(seed))
    return {eid: best for (eid, k), best in _SESSION.best.items() if k == s}


def best_of(exercise_id: Any, tries: Iterable[tuple[Any, Any]]) -> tuple[Any, Any, Result] | None:
    """The answer that counts among ``tries`` (``(answer, seed)`` pairs, in the order they were checked), by the
    rule of :func:`best_answers` and :func:`progress`: ``(answer, seed, result)`` of the first correct one, else of
    the last one; None if there are none. Each is checked in a session of its own (nothing of this session's
    changes): what a grader calls with the answers it heard a notebook check for one exercise."""
    found: tuple[Any, Any, Result] | None = None
    with own_session():
        for answer, seed in tries:
            result = check(exercise_id, answer, seed=seed)
            if _counts_over(found[2] if found else None, result):
                found = (answer, seed, result)
    return found


def _no_answer(exercise_id: Any, seed: Any) -> Result:
    """``check(exercise_id)`` with no answer: what the exercise asks and how to answer (nothing is recorded)."""
    try:
        ex = exercise_id if isinstance(exercise_id, Exercise) else get(exercise_id)
    except KeyError as exc:
        return Result(short_text(exercise_id), "unknown", str(exc.args[0]))
    story = Story(ex.id, ex.title, ex.text(_SESSION.current_seed(seed)), ex.unit, ex.bare_ok)
    return Result(
        ex.id,
        "blank",
        f"No answer given: {ex.id} ({ex.title}) asks: {story.text} {story._answer_line()} "
        f"Then check({ex.id!r}, your_answer).",
        expected_unit=ex.unit or "a plain number",
    )


def _check(exercise_id: Any, answer: Any, seed: Any) -> Result:
    s = _SESSION.current_seed(seed)
    if _OBSERVER is not None:
        with contextlib.suppress(Exception):
            _OBSERVER(exercise_id, answer, s)
    try:
        ex = exercise_id if isinstance(exercise_id, Exercise) else get(exercise_id)
    except KeyError as exc:
        return Result(short_text(exercise_id), "unknown", str(exc.args[0]))
    key = (ex.id, repr(s))
    unit_words = ex.unit or "a plain number"
    if answer is None:
        return Result(ex.id, "blank", "Not answered yet.", expected_unit=unit_words)
    try:
        variant = ex.variant(s)
        expected = expected_answer(ex, variant)
    except Exception as exc:  # pragma: no cover - an exercise definition bug, not the student's
        return Result(ex.id, "invalid", f"this variant could not be computed ({short_text(exc)}); tell the teacher.")

    def wrong(status: str, message: str, slip: str | None = None) -> Result:
        """A wrong answer: its try counted, and the next of the exercise's hints, or ``slip``'s own hint (what
        to compare after the slip named) instead."""
        n = _SESSION.tries.get(key, 0) + 1
        _SESSION.tries[key] = n
        if slip is not None:
            return Result(ex.id, status, message, expected_unit=unit_words, hint=slip, hints=(slip,), tries=n)
        shown = tuple(
            h.format(**{k: show_value(x) for k, x in variant.items()}) for h in ex.hints[: min(n, len(ex.hints))]
        )
        return Result(
            ex.id, status, message, expected_unit=unit_words, hint=shown[-1] if shown else None, hints=shown, tries=n
        )

    try:
        given, comma = read_answer(answer, ex.unit)
    except AnswerRefused as why:
        return wrong("invalid", f"Not yet: {why}")
    if given.unitless and ex.unit:
        if not ex.bare_ok:
            return wrong(
                "unit",
                f"Not yet: a bare number has no unit; write Q_({given.m:g}, {ex.unit!r}) or any unit of the same kind.",
            )
        given = Q_(given.m, ex.unit)
        comma = Q_(comma.m, ex.unit) if comma is not None else None
    if given.dimensionality != expected.dimensionality:
        if ex.unit:
            need = f"a quantity convertible to {ex.unit} ({expected.dimensionality})"
        else:
            need = "a plain number (a count, no unit)"
        return wrong(
            "unit",
            f"Not yet: wrong kind of unit. The answer is {need}; you gave {given.units:~P} ({given.dimensionality}).",
        )
    exp = float(expected.to_base_units().m)
    try:
        got = float(given.to_base_units().m)
    except (OverflowError, ArithmeticError):
        got = math.inf
    if not math.isfinite(got):
        return wrong("invalid", "Not yet: that is too large to be an answer.")

    def right(value: float) -> bool:
        return _close(ex, value, exp)

    if right(got):
        _SESSION.done.add(key)
        tol = "" if ex.integer else f" (within {sig(ex.tolerance * 100, 2)}%)"
        if ex.factor is not None:
            tol = f" (within {sig(ex.factor, 2)}x)"
        return Result(ex.id, "correct", f"Correct{tol}.", expected_unit=unit_words, tries=_SESSION.tries.get(key, 0))
    if comma is not None and right(float(comma.to_base_units().m)):
        shown = short_text(answer).strip("'\"")
        return wrong(
            "wrong",
            f"Not yet: {shown} is read with ',' separating thousands; if you meant a decimal comma, write the "
            "decimal point as '.'.",
        )
    if exp == 0:
        return wrong("wrong", f"Not yet: {'too large' if got > 0 else 'too small'}.")
    ratio = got / exp
    if ex.integer and ratio > 0:
        if got != round(got) and exp in (math.floor(got), math.ceil(got)):
            return wrong(
                "wrong",
                f"Not yet: {'too many' if got > exp else 'too few'}; a count is a whole number: round in the direction "
                "the question needs.",
            )
        if 1 / 2 < ratio < 2:
            off = got - exp
            if abs(abs(off) - 1) < 1e-9:
                return wrong(
                    "wrong",
                    f"Not yet: off by 1 ({'too many' if off > 0 else 'too few'}); a count must be exact: round in "
                    "the direction the question needs.",
                )
            return wrong("wrong", f"Not yet: {'too many' if off > 0 else 'too few'}: {size_words(ratio)}.")
    words, slip = _diagnose(ratio, ex, variant, given, expected)
    return wrong("wrong", f"Not yet: {words}.", slip)


# --- presenting exercises and progress ----------------------------------------------------------------------
@dataclass(frozen=True)
class Story:
    """An exercise's text for display (see :func:`show`)."""

    exercise_id: str
    title: str
    text: str
    unit: str
    bare_ok: bool

    def _answer_line(self) -> str:
        if not self.unit:
            return "Answer with a plain number."
        bare = f"; a bare number is read as {self.unit}" if self.bare_ok else ""
        return f"Answer with a quantity, e.g. Q_(number, {self.unit!r}) or any unit of the same kind{bare}."

    def __str__(self) -> str:
        return f"{self.exercise_id}: {self.title}\n{self.text}\n{self._answer_line()}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return (
            f"<div><b>{html.escape(self.title)}</b> <small>({html.escape(self.exercise_id)})</small>"
            f"<p>{html.escape(self.text)}</p><p><i>{html.escape(self._answer_line())}</i></p></div>"
        )


def show(exercise_id: str, *, seed: Any = None) -> Story:
    """The exercise's story with this student's givens (see :func:`student`)."""
    ex = get(exercise_id)
    return Story(ex.id, ex.title, ex.text(_SESSION.current_seed(seed)), ex.unit, ex.bare_ok)


_MARK_DONE, _MARK_OPEN = "\u2713", "\u2026"


@dataclass(frozen=True)
class Progress:
    """Done / not done for the exercises of a chapter (see :func:`progress`); ``message`` says why there are no
    rows (a chapter that is not one of the book's)."""

    rows: tuple[tuple[str, str, bool], ...]
    message: str = ""

    @property
    def done(self) -> int:
        return sum(d for _, _, d in self.rows)

    def __str__(self) -> str:
        if self.message:
            return self.message
        lines = [f"{'done' if d else 'not done':>8}  {i}  {t}" for i, t, d in self.rows]
        return "\n".join([*lines, f"{self.done} of {len(self.rows)} done"])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if self.message:
            return f"<p>{html.escape(self.message)}</p>"
        body = "".join(
            f"<tr><td>{_MARK_DONE if d else _MARK_OPEN}</td><td><code>{i}</code></td><td>{html.escape(t)}</td></tr>"
            for i, t, d in self.rows
        )
        return f"<table>{body}</table><p>{self.done} of {len(self.rows)} done</p>"


def progress(chapter: Any = None, *, seed: Any = None) -> Progress:
    """Which exercises of ``chapter`` (all if None) this session has answered correctly (the answers that count,
    see :func:`best_answers`: a correct answer once given stays done). Never raises: a
    chapter is named as text (case, surrounding spaces and hyphens for underscores do not matter), and one that
    is not the book's gets a message with the close names."""
    key = None
    if chapter is not None:
        if not isinstance(chapter, str):
            return Progress(
                (),
                f"progress(chapter) takes one chapter's name as text, e.g. progress('kv_cache'), or nothing for "
                f"every chapter; you gave {quoted(chapter)}.",
            )
        key = _id_key(str.__getitem__(chapter, slice(None))) or None
        if key is not None and key not in CHAPTERS:
            import difflib

            close = difflib.get_close_matches(key.rsplit("_ex", 1)[0], list(CHAPTERS), n=3, cutoff=0.5)
            return Progress(
                (),
                f"no chapter {quoted(chapter)}"
                + (f"; did you mean {', '.join(close)}?" if close else f"; the chapters are {', '.join(CHAPTERS)}."),
            )
    s = repr(_SESSION.current_seed(seed))

    def done(eid: str) -> bool:
        best = _SESSION.best.get((eid, s))
        return best is not None and best[1].correct

    return Progress(tuple((e.id, e.title, done(e.id)) for e in exercises(key)))
