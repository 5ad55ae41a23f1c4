"""The checking engine: compare a student's answer with the planner's, unit-aware, and explain.

Every exercise is an :class:`Exercise`: a story with givens drawn from a *variant* (the book's
default, or one generated from a student's seed), an expected unit, a tolerance, hints, and an
``answer(variant)`` function that calls the planner. Nothing here stores an answer: it is
computed when :func:`check` runs.

:func:`check` never raises on a student's input. It returns a :class:`Result` whose display
says whether the answer is right, which unit was expected, how far off it is (with a diagnosis
for the usual slips: KiB vs kB, bits vs bytes, a unit prefix, keys and values), and a hint that
grows with each wrong try.

Examples
--------
>>> from llmcourse import Q_
>>> from llmcourse.exercises import check, reset
>>> reset()
>>> check("kv_cache_ex1", Q_(320, "KiB")).correct
True
>>> check("kv_cache_ex1", Q_(320, "kB")).message
'Not yet: too small by a factor of 1.024 (KiB vs kB?).'
>>> check("kv_cache_ex1", None).message
'Not answered yet.'
"""

from __future__ import annotations

import hashlib
import html
import math
import numbers
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.units import Q_, sig, ureg

__all__ = [
    "CHAPTERS",
    "Exercise",
    "Progress",
    "Result",
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
    "fleet": "Sizing the fleet",
    "queueing": "Queueing",
    "design_review": "Design review",
}

_DEFS = {key: f"llmcourse.exercises.defs_{key}" for key in CHAPTERS}


@dataclass(frozen=True)
class Exercise:
    """One auto-checked exercise.

    ``story`` is a format string over the variant's keys. ``vary(rng)`` draws a variant from a
    :class:`random.Random`; ``default`` is the variant printed in the book. ``answer(variant)``
    returns the expected value (a quantity, or a plain number when ``unit`` is ``""``), computed
    with the planner. ``bare_ok`` accepts a bare number as a value in ``unit`` (only where the
    story says which unit). ``integer`` answers must match exactly (a count of GPUs, a batch).
    ``mistakes(variant)`` lists extra (factor, diagnosis) pairs for this exercise: the slip gives
    ``factor`` times the right answer; ``kv`` says half the answer means keys and values were not both
    counted.
    """

    id: str
    title: str
    story: str
    unit: str
    default: dict[str, Any]
    vary: Callable[[random.Random], dict[str, Any]]
    answer: Callable[[dict[str, Any]], Any]
    hints: tuple[str, ...] = ()
    tolerance: float = 0.01
    bare_ok: bool = False
    integer: bool = False
    kv: bool = False
    mistakes: Callable[[dict[str, Any]], Iterable[tuple[float, str]]] | None = None

    @property
    def chapter(self) -> str:
        return self.id.rsplit("_ex", 1)[0]

    @property
    def number(self) -> int:
        return int(self.id.rsplit("_ex", 1)[1])

    def variant(self, seed: Any = None) -> dict[str, Any]:
        """The givens for ``seed`` (None: the book's default variant). Same seed, same variant."""
        if seed is None:
            return dict(self.default)
        digest = hashlib.sha256(f"{self.id}|{seed}".encode()).digest()
        return dict(self.vary(random.Random(int.from_bytes(digest[:8], "big"))))

    def expected(self, seed: Any = None) -> pint.Quantity:
        """The expected answer for ``seed`` as a quantity in :attr:`unit` (the planner computes it)."""
        return self.expected_for(self.variant(seed))

    def expected_for(self, variant: dict[str, Any]) -> pint.Quantity:
        """The expected answer for these givens (computed once per session, then remembered)."""
        key = (self.id, repr(sorted(variant.items())))
        if key not in _ANSWERS:
            if len(_ANSWERS) > 4_096:
                _ANSWERS.clear()
            _ANSWERS[key] = _to_quantity(self.answer(variant), self.unit)
        return _ANSWERS[key]

    def text(self, seed: Any = None) -> str:
        """The story with the variant's givens filled in."""
        v = self.variant(seed)
        return self.story.format(**{k: _show(x) for k, x in v.items()})


def _show(x: Any) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, pint.Quantity):
        return f"{sig(float(x.magnitude), 4)} {x.units:~P}"
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:,.6g}"
    return str(x)


def _to_quantity(value: Any, unit: str) -> pint.Quantity:
    q = value if isinstance(value, pint.Quantity) else Q_(float(value), "")
    return q.to(unit) if unit else q.to("")


_ANSWERS: dict[tuple[str, str], pint.Quantity] = {}

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


def get(exercise_id: str) -> Exercise:
    """The exercise with this id; a KeyError that suggests close ids if there is none."""
    if isinstance(exercise_id, str) and "_ex" in exercise_id:
        _load(exercise_id.rsplit("_ex", 1)[0])
    if exercise_id in _REGISTRY:
        return _REGISTRY[exercise_id]
    import difflib

    ids = [e.id for e in exercises()]
    close = difflib.get_close_matches(str(exercise_id), ids, n=3)
    raise KeyError(f"no exercise {exercise_id!r}" + (f"; did you mean {', '.join(close)}?" if close else "."))


# --- session state ------------------------------------------------------------------------------------
@dataclass
class _Session:
    seed: Any = None
    forced_seed: Any = None
    tries: dict[tuple[str, str], int] = field(default_factory=dict)
    done: set[tuple[str, str]] = field(default_factory=set)
    last: dict[str, Result] = field(default_factory=dict)

    def current_seed(self, seed: Any = None) -> Any:
        if self.forced_seed is not None:
            return self.forced_seed
        return seed if seed is not None else self.seed


_SESSION = _Session()


def student(seed: Any = None) -> str:
    """Set this session's student id (a number or a name): every exercise then uses that
    student's variant. ``None`` (or ``""``) brings back the book's default variants."""
    _SESSION.seed = None if seed in (None, "") else seed
    if _SESSION.seed is None:
        return "Using the book's default variants."
    return f"Variants for student {_SESSION.seed!s}: your numbers differ from the book's and from your classmates'."


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
    ratio: float | None = None

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


# --- reading a student's answer -------------------------------------------------------------------------
class _Refused(Exception):
    """The answer cannot be read as one number; the message says why."""


def _read(answer: Any, ex: Exercise) -> pint.Quantity:
    """The student's answer as a quantity of this registry, or :class:`_Refused`."""
    if isinstance(answer, bool) or answer is Ellipsis:
        raise _Refused(
            f"got {answer!r}; give a number" + (f" with a unit, e.g. Q_(1, {ex.unit!r})." if ex.unit else ".")
        )
    if isinstance(answer, str):
        text = answer.strip().replace(",", "").replace("_", "")
        if not text:
            raise _Refused("got an empty string; give a number.")
        try:
            answer = Q_(text)
        except Exception:
            raise _Refused(
                f"could not read {answer!r} as a number with a unit; write e.g. Q_(1, {ex.unit or ''!r})."
            ) from None
    if isinstance(answer, pint.Quantity):
        if answer._REGISTRY is not ureg:  # a quantity built with another pint registry
            try:
                answer = Q_(answer.magnitude, str(answer.units))
            except Exception:
                raise _Refused(
                    f"could not read the unit {answer.units!s}; build the answer with llmcourse's "
                    "Q_ (from llmcourse import Q_)."
                ) from None
        mag = answer.magnitude
    else:
        mag = answer
    if hasattr(mag, "shape") and getattr(mag, "shape", ()) == ():  # a numpy scalar or 0-d array
        mag = mag.item() if hasattr(mag, "item") else mag
    if isinstance(mag, list | tuple | set | dict) or getattr(mag, "shape", ()) != ():
        raise _Refused("got several values; give one number.")
    if isinstance(mag, complex) or not isinstance(mag, numbers.Real) or isinstance(mag, bool):
        raise _Refused(f"got {type(mag).__name__} {mag!r}; give a number.")
    if not math.isfinite(float(mag)):
        raise _Refused(f"got {mag!r}, which is not a finite number.")
    if isinstance(answer, pint.Quantity):
        return Q_(float(mag), answer.units)
    return Q_(float(mag), "")  # a bare number


_MARK_DONE, _MARK_OPEN = "\u2713", "\u2026"
_PREFIX = "check the unit prefix (k, M, G) or ms vs s"
_GENERIC: list[tuple[float, str]] = [
    (1.024, "KiB vs kB?"),
    (1.024**2, "MiB vs MB?"),
    (1.024**3, "GiB vs GB?"),
    (1.024**4, "TiB vs TB?"),
    (8.0, "bits vs bytes?"),
    (1e3, _PREFIX),
    (1e6, _PREFIX),
    (1e9, _PREFIX),
    (1e12, _PREFIX),
    (1.024e3, "KiB vs kB, and a unit prefix?"),
    (60.0, "per second vs per minute (or s vs min)?"),
    (3600.0, "per second vs per hour (or s vs h)?"),
    (86400.0, "per second vs per day?"),
    (100.0, "a fraction vs a percentage?"),
]


def _generic_slip(ratio: float, tolerance: float) -> tuple[float, str]:
    """The common slip (unit prefix, KiB vs kB, bits vs bytes, per second vs per hour...) whose factor
    is within ``tolerance`` of ``ratio`` either way, as (factor, words); ``(1.0, "")`` if none."""
    for factor, words in _GENERIC:
        for f in (factor, 1 / factor):
            if abs(ratio / f - 1) <= tolerance:
                return factor, words
    return 1.0, ""


def slip_words(ratio: float, tolerance: float = 0.01) -> str:
    """Words for the common slip behind an answer ``ratio`` times the right one, or ``""``.

    Shared by the exercise checker and the interview drills.

    Examples
    --------
    >>> slip_words(8.0), slip_words(1 / 1.024), slip_words(3.0)
    ('bits vs bytes?', 'KiB vs kB?', '')
    """
    return _generic_slip(ratio, tolerance)[1]


def _factor_words(f: float) -> str:
    return f"{f:,.0f}" if f >= 10 and abs(f - round(f)) < 1e-9 * f else f"{f:.4g}"


def _diagnose(ratio: float, ex: Exercise, variant: dict[str, Any]) -> str:
    """Words for an answer ``ratio`` times the expected one."""
    if ratio <= 0:
        return "the sign or the value is off: the answer is a positive quantity"
    specific = list(ex.mistakes(variant)) if ex.mistakes else []
    if ex.kv:
        specific.append((1 / 2, "did you count keys and values?"))
    tol = max(ex.tolerance, 0.002)
    for factor, words in specific:  # a specific slip gives factor x the answer, in that direction only
        if factor > 0 and abs(factor - 1) >= 2 * tol and abs(ratio / factor - 1) <= tol:
            return f"{'too large' if factor > 1 else 'too small'} by a factor of {_factor_words(max(factor, 1 / factor))} ({words})"
    factor, words = _generic_slip(ratio, tol)
    if words:
        return f"{'too large' if ratio > 1 else 'too small'} by a factor of {_factor_words(factor)} ({words})"
    if abs(ratio - 2) <= tol or abs(ratio - 1 / 2) <= tol:
        return f"{'too large' if ratio > 1 else 'too small'} by a factor of 2"
    return f"{'too large' if ratio > 1 else 'too small'}: {sig(ratio, 3)} times the expected value"


def _record(ex_id: str, seed: Any, result: Result) -> Result:
    _SESSION.last[ex_id] = result
    return result


def check(exercise_id: str, answer: Any, *, seed: Any = None) -> Result:
    """Check ``answer`` for an exercise. Never raises on the answer; see :class:`Result`.

    ``seed`` (a student number or name) picks that student's variant; without it the session's
    student (see :func:`student`) or the book's default variant is used.
    """
    try:
        ex = get(exercise_id)
    except KeyError as exc:
        return Result(str(exercise_id), "unknown", str(exc.args[0]))
    s = _SESSION.current_seed(seed)
    key = (ex.id, repr(s))
    unit_words = ex.unit or "a plain number"
    if answer is None:
        return _record(ex.id, s, Result(ex.id, "blank", "Not answered yet.", expected_unit=unit_words))
    try:
        variant = ex.variant(s)
        expected = ex.expected_for(variant)
    except Exception as exc:  # pragma: no cover - an exercise definition bug, not the student's
        return _record(
            ex.id, s, Result(ex.id, "invalid", f"this variant could not be computed ({exc}); tell the teacher.")
        )

    def wrong(status: str, message: str, ratio: float | None = None) -> Result:
        n = _SESSION.tries.get(key, 0) + 1
        _SESSION.tries[key] = n
        shown = tuple(h.format(**{k: _show(x) for k, x in variant.items()}) for h in ex.hints[: min(n, len(ex.hints))])
        return _record(
            ex.id,
            s,
            Result(
                ex.id,
                status,
                message,
                expected_unit=unit_words,
                hint=shown[-1] if shown else None,
                hints=shown,
                tries=n,
                ratio=ratio,
            ),
        )

    try:
        given = _read(answer, ex)
    except _Refused as why:
        return wrong("invalid", f"Not yet: {why}")
    if given.unitless and ex.unit:
        if not ex.bare_ok:
            return wrong(
                "unit",
                f"Not yet: a bare number has no unit; write Q_({given.m:g}, {ex.unit!r}) or any unit of the same kind.",
            )
        given = Q_(given.m, ex.unit)
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
    got = float(given.to_base_units().m)
    ok = abs(got - exp) < 1e-06 * max(1.0, abs(exp)) if ex.integer else abs(got - exp) <= ex.tolerance * abs(exp)
    if ok:
        _SESSION.done.add(key)
        tol = "" if ex.integer else f" (within {sig(ex.tolerance * 100, 2)}%)"
        return _record(
            ex.id,
            s,
            Result(ex.id, "correct", f"Correct{tol}.", expected_unit=unit_words, tries=_SESSION.tries.get(key, 0)),
        )
    if exp == 0:
        return wrong("wrong", "Not yet: the expected value is zero.")
    ratio = got / exp
    if ex.integer and 1 / 2 < ratio < 2:
        off = got - exp
        return wrong(
            "wrong",
            f"Not yet: off by {abs(off):g} ({'too many' if off > 0 else 'too few'}); "
            "a count must be exact: round in the direction the question needs.",
            ratio,
        )
    return wrong("wrong", f"Not yet: {_diagnose(ratio, ex, variant)}.", ratio)


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


@dataclass(frozen=True)
class Progress:
    """Done / not done for the exercises of a chapter (see :func:`progress`)."""

    rows: tuple[tuple[str, str, bool], ...]

    @property
    def done(self) -> int:
        return sum(d for _, _, d in self.rows)

    def __str__(self) -> str:
        lines = [f"{'done' if d else 'not done':>8}  {i}  {t}" for i, t, d in self.rows]
        return "\n".join([*lines, f"{self.done} of {len(self.rows)} done"])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td>{_MARK_DONE if d else _MARK_OPEN}</td><td><code>{i}</code></td><td>{html.escape(t)}</td></tr>"
            for i, t, d in self.rows
        )
        return f"<table>{body}</table><p>{self.done} of {len(self.rows)} done</p>"


def progress(chapter: str | None = None, *, seed: Any = None) -> Progress:
    """Which exercises of ``chapter`` (all if None) this session has answered correctly."""
    s = repr(_SESSION.current_seed(seed))
    return Progress(tuple((e.id, e.title, (e.id, s) in _SESSION.done) for e in exercises(chapter)))
