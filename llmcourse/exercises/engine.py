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
import decimal
import hashlib
import html
import math
import numbers
import random
import re
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
    "many_gpus": "Many GPUs",
    "fleet": "Sizing the fleet",
    "queueing": "Queueing",
    "disaggregation": "Disaggregated serving",
    "design_review": "Design review",
}

_DEFS = {key: f"llmcourse.exercises.defs_{key}" for key in CHAPTERS}


# --- text of anything, never raising ------------------------------------------------------------------
def _text(x: Any, limit: int = 60) -> str:
    """A short printable form of ``x`` (its repr, or the string itself), whatever ``x`` does."""
    try:
        s = str.__getitem__(x, slice(None)) if isinstance(x, str) else repr(x)
        if not isinstance(s, str):
            raise TypeError
        s = str.__getitem__(s, slice(None))
    except KeyboardInterrupt:
        raise
    except BaseException:  # a hostile __repr__ may raise anything
        try:
            s = object.__repr__(x)
        except Exception:
            s = "an unreadable object"
    s = "".join(c if c.isprintable() else "?" for c in s[: limit + 1])
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _quoted(x: Any, limit: int = 60) -> str:
    """:func:`_text`, with a string in quotes (as in a message: got 'abc')."""
    try:
        is_text = isinstance(x, str)
    except Exception:
        is_text = False
    return repr(_text(x, limit)) if is_text else _text(x, limit)


def _type_name(x: Any) -> str:
    try:
        return _text(type(x).__name__, 40)
    except Exception:
        return "object"


def _seed_text(seed: Any) -> str | None:
    """A student id as the text its variants are drawn from (``None`` or ``""``: no student)."""
    if seed is None:
        return None
    if isinstance(seed, str):
        s = str.__getitem__(seed, slice(None))
        return s or None
    if isinstance(seed, bool):
        return str(bool(seed))
    if isinstance(seed, int):
        try:
            return str(int(seed))
        except ValueError:  # more digits than Python prints
            return (
                "int:"
                + hashlib.sha256(int(seed).to_bytes((int(seed).bit_length() + 8) // 8, "big", signed=True)).hexdigest()
            )
    try:
        s = str(seed)
        if isinstance(s, str):
            return str.__getitem__(s, slice(None)) or None
    except KeyboardInterrupt:
        raise
    except BaseException:
        pass
    return _text(seed, 200)


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
        s = _seed_text(seed)
        if s is None:
            return dict(self.default)
        digest = hashlib.sha256(f"{self.id}|{s}".encode("utf-8", "surrogatepass")).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        first = dict(self.vary(rng))
        v = first
        try:
            book = _expected(self, dict(self.default))
            for _ in range(_REDRAWS):
                if not _passes(self, book, _expected(self, v)):
                    return v
                v = dict(self.vary(rng))
        except Exception:  # pragma: no cover - an answer that cannot be computed is the checker's to report
            return first
        return first

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


def _expected(ex: Exercise, variant: dict[str, Any]) -> pint.Quantity:
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


def get(exercise_id: str) -> Exercise:
    """The exercise with this id; a KeyError that suggests close ids if there is none (also for an id
    that is not a string)."""
    shown = _quoted(exercise_id)
    if not isinstance(exercise_id, str):
        raise KeyError(f"no exercise {shown}: an exercise id is a string such as 'kv_cache_ex1'.")
    key = str.__getitem__(exercise_id, slice(None))
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

    def current_seed(self, seed: Any = None) -> str | None:
        if _GRADING_SEED is not _UNSET:
            return _GRADING_SEED
        s = _seed_text(seed)
        return s if s is not None else self.seed


_SESSION = _Session()


def student(seed: Any = None) -> str:
    """Set this session's student id (a number or a name): every exercise then uses that
    student's variant. ``None`` (or ``""``) brings back the book's default variants."""
    _SESSION.seed = _seed_text(seed)
    if _GRADING_SEED is not _UNSET:
        which = "the book's default variants" if _GRADING_SEED is None else f"student {_GRADING_SEED}'s variants"
        return f"This notebook is being graded on {which}; student(...) does not change them."
    if _SESSION.seed is None:
        return "Using the book's default variants."
    return f"Variants for student {_text(_SESSION.seed, 200)}: your numbers differ from the book's and from your classmates'."


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


# --- reading a student's answer -------------------------------------------------------------------------
class _Refused(Exception):
    """The answer cannot be read as one number; the message says why."""


class _Unreadable:
    """An answer a grader's worker could not read; carries the reason (see :func:`_from_portable`)."""

    def __init__(self, why: str) -> None:
        self.why = why


def _attr(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)`` that survives a hostile ``__getattr__``."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


_LONGEST_TEXT = 100
_NUMBER = re.compile(r"\s*(\$?)\s*([+-]?[\d.,_]*\d[\d.,_]*(?:[eE][+-]?\d{1,5})?)\s*(.*?)\s*", re.S)
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_UNIT_CHARS = re.compile(r"[A-Za-zµμΩ°%_/*·\s\d().^-]{1,40}")
_BIG_EXPONENT = re.compile(r"(\*\*|\^)\s*\(?\s*[-+]?\s*\d{3,}|(\*\*|\^)\s*\(?\s*[-+]?[\d.]+\s*\)?\s*(\*\*|\^)")
_COUNT_WORDS = re.compile(r"\b(tokens?|toks?|requests?|reqs?|conversations?|sequences?|GPUs?)\b")


def _unit_of_text(text: str) -> pint.Unit:
    """The unit written after a number in a string answer, or :class:`_Refused` (no evaluation of
    arbitrary expressions: short, plain unit names with small exponents only)."""
    text = _COUNT_WORDS.sub("1", text).strip()
    if text.startswith(("*", "^")):
        raise _Refused("write the number itself (e.g. 1e6 or 1000000), not an expression.")
    if text.startswith("/"):
        text = "1" + text
    if text.lower().startswith("per "):
        text = "1/" + text[4:]
    if not _UNIT_CHARS.fullmatch(text) or _BIG_EXPONENT.search(text):
        raise _Refused(f"could not read the unit {_text(text)!r}; write e.g. '320 KiB', '30 ms' or Q_(320, 'KiB').")
    try:
        return ureg.parse_units(text)
    except Exception:
        raise _Refused(
            f"could not read the unit {_text(text)!r}; write e.g. '320 KiB', '30 ms' or Q_(320, 'KiB')."
        ) from None


def _read_text(answer: str, unit: str) -> tuple[pint.Quantity, pint.Quantity | None]:
    """A string answer as (quantity, the quantity read with a decimal comma or None)."""
    text = str.__getitem__(answer, slice(None)).strip()
    example = f"Q_(1, {unit!r})" if unit else "1.5"
    if not text:
        raise _Refused("got an empty string; give a number.")
    if len(text) > _LONGEST_TEXT:
        raise _Refused(
            f"got a string of {len(text):,} characters; give one number"
            + (f" with a unit, e.g. {example}." if unit else ".")
        )
    m = _NUMBER.fullmatch(text)
    if not m:
        raise _Refused(f"could not read {_text(answer)!r} as a number with a unit; write e.g. {example}.")
    dollar, token, rest = m.groups()
    token = re.sub(r"(?<=\d)_(?=\d)", "", token)
    alt: float | None = None
    if "," in token:
        if not _THOUSANDS.fullmatch(token):
            fixed = token.replace(".", "").replace(",", ".", 1) if token.count(",") == 1 else None
            raise _Refused(
                f"{_text(token)!r} has a decimal comma; write the decimal point as '.'"
                + (f", e.g. {fixed}." if fixed else ", and no commas inside a number.")
            )
        if token.count(",") == 1 and "." not in token and "e" not in token.lower():
            alt = float(token.replace(",", "."))
        token = token.replace(",", "")
    try:
        value = float(token)
    except ValueError:
        raise _Refused(f"could not read {_text(answer)!r} as a number; write e.g. {example}.") from None
    if not math.isfinite(value):
        raise _Refused(f"got {_text(answer)!r}, which is too large to be an answer (or not a finite number).")
    if dollar:
        rest = "USD" + (rest if rest.startswith("/") else (f"*({rest})" if rest else ""))
    units = _unit_of_text(rest) if rest else ureg.parse_units("")
    return Q_(value, units), (Q_(alt, units) if alt is not None else None)


def _real(mag: Any) -> float:
    """One finite real number from ``mag``, or :class:`_Refused`."""
    if isinstance(mag, bool) or mag is Ellipsis or mag is None:
        raise _Refused(f"got {_text(mag)}; give a number.")
    shape = _attr(mag, "shape")
    if shape == () and callable(_attr(mag, "item")):  # a numpy scalar or 0-d array
        mag = mag.item()
        shape = None
    if isinstance(mag, list | tuple | set | frozenset | dict) or (shape is not None and shape != ()):
        raise _Refused("got several values; give one number.")
    if isinstance(mag, decimal.Decimal):
        pass
    elif isinstance(mag, complex) or not isinstance(mag, numbers.Real) or isinstance(mag, bool):
        raise _Refused(f"got {_type_name(mag)} {_quoted(mag)}; give a number.")
    try:
        value = float(mag)
    except OverflowError:
        raise _Refused("got a number too large to be an answer.") from None
    except Exception:
        raise _Refused(f"could not read {_text(mag)} as a number; give a plain number, e.g. 1.5.") from None
    if type(value) is not float or not math.isfinite(value):
        raise _Refused(f"got {_text(mag)}, which is not a finite number.")
    return value


def _read(answer: Any, unit: str) -> tuple[pint.Quantity, pint.Quantity | None]:
    """The student's answer as (a quantity of this registry, its decimal-comma reading or None), or
    :class:`_Refused`."""
    example = f" with a unit, e.g. Q_(1, {unit!r})." if unit else "."
    if isinstance(answer, _Unreadable):
        raise _Refused(answer.why)
    if isinstance(answer, bool) or answer is Ellipsis:
        raise _Refused(f"got {_text(answer)}; give a number{example}")
    if isinstance(answer, str):
        return _read_text(answer, unit)
    if isinstance(answer, pint.Quantity):
        units = answer.units
        if answer._REGISTRY is not ureg:  # a quantity built with another pint registry
            try:
                units = _unit_of_text(str(units))
            except _Refused:
                raise _Refused(
                    f"could not read the unit {_text(str(units))!r}; build the answer with llmcourse's Q_ "
                    "(from llmcourse import Q_)."
                ) from None
        return Q_(_real(answer.magnitude), units), None
    return Q_(_real(answer), ""), None


def _portable(answer: Any, unit: str = "") -> Any:
    """The answer in a form that crosses a process boundary as JSON (for the grader): ``None``,
    ``{"text": ...}``, ``{"q": [magnitude, unit]}`` or ``{"refused": why}``."""
    if answer is None:
        return None
    if isinstance(answer, str):
        return {"text": str.__getitem__(answer, slice(None))[: _LONGEST_TEXT + 1]}
    try:
        q, _ = _read(answer, unit)
        return {"q": [float(q.m), format(q.units, "~C")]}
    except _Refused as why:
        return {"refused": str(why)}
    except KeyboardInterrupt:
        raise
    except BaseException:
        return {"refused": "reading this answer raised an error; give a number, e.g. Q_(value, unit)."}


def _from_portable(obj: Any) -> Any:
    """The answer :func:`_portable` described, rebuilt safely (whatever the message held)."""
    if obj is None:
        return None
    if isinstance(obj, dict) and len(obj) == 1:
        (kind, value), *_ = obj.items()
        if kind == "text" and type(value) is str:
            return value
        if kind == "refused" and type(value) is str:
            return _Unreadable(_text(value, 300))
        if kind == "q" and type(value) is list and len(value) == 2:
            mag, unit = value
            if type(mag) in (int, float) and type(unit) is str and math.isfinite(mag):
                try:
                    return Q_(float(mag), _unit_of_text(unit) if unit else ureg.parse_units(""))
                except _Refused:
                    pass
    return _Unreadable("the grader could not read this answer.")


_MARK_DONE, _MARK_OPEN = "\u2713", "\u2026"


# --- what a wrong answer gets: the slips of its kind, then its direction and rough size ------------------
_PREFIX = "check the unit prefix (k, M, G, T)"
_BYTE_SLIPS: list[tuple[float, str]] = [
    (1.024, "KiB vs kB?"),
    (1.024**2, "MiB vs MB?"),
    (1.024**3, "GiB vs GB?"),
    (1.024**4, "TiB vs TB?"),
    (8.0, "bits vs bytes?"),
    (8e3, "bits vs bytes, and a unit prefix?"),
    (1.024e3, "KiB vs kB, and a unit prefix?"),
    (1e3, _PREFIX),
    (1e6, _PREFIX),
    (1e9, _PREFIX),
    (1e12, _PREFIX),
]
#: The slips each kind of answer invites (the kind is the expected answer's dimension).
_SLIPS: dict[str, list[tuple[float, str]]] = {
    "bytes": _BYTE_SLIPS,
    "bandwidth": _BYTE_SLIPS,
    "time": [
        (1e3, "check the unit prefix: ms vs s?"),
        (1e6, "check the unit prefix: µs vs s?"),
        (1e9, "check the unit prefix: ns vs s?"),
        (60.0, "seconds vs minutes?"),
        (3600.0, "seconds vs hours?"),
        (86400.0, "seconds vs days?"),
        (6e4, "ms vs minutes?"),
    ],
    "rate": [
        (60.0, "per second vs per minute?"),
        (3600.0, "per second vs per hour?"),
        (86400.0, "per second vs per day?"),
        (1e3, "check the unit prefix: per second vs per millisecond, or thousands?"),
        (1e6, _PREFIX),
    ],
    "money": [
        (1e3, "check the unit prefix: dollars vs thousands of dollars?"),
        (1e6, "per token vs per million tokens (or dollars vs millions)?"),
        (100.0, "dollars vs cents?"),
        (730.0, "per hour vs per month (730 hours)?"),
        (24.0, "per hour vs per day?"),
        (30.0, "per day vs per month?"),
    ],
    "money_rate": [
        (60.0, "per minute vs per hour?"),
        (3600.0, "per second vs per hour?"),
        (730.0, "per hour vs per month (730 hours)?"),
        (24.0, "per hour vs per day?"),
        (1e3, "check the unit prefix: dollars vs thousands of dollars?"),
    ],
    "count": [
        (100.0, "a fraction vs a percentage?"),
        (1e3, "thousands vs units?"),
        (1e6, "millions vs units?"),
    ],
    "flop": [(1e3, _PREFIX), (1e6, _PREFIX), (1e9, _PREFIX), (1e12, _PREFIX), (1e15, _PREFIX)],
    "flop_rate": [(1e3, _PREFIX), (1e6, _PREFIX), (1e9, _PREFIX), (1e12, _PREFIX), (1e15, _PREFIX)],
    "other": [
        (1e3, _PREFIX),
        (1e6, _PREFIX),
        (1e9, _PREFIX),
        (60.0, "seconds vs minutes?"),
        (3600.0, "seconds vs hours?"),
    ],
}
_KINDS = {
    (("[information]", 1),): "bytes",
    (("[information]", 1), ("[time]", -1)): "bandwidth",
    (("[time]", 1),): "time",
    (("[time]", -1),): "rate",
    (("[currency]", 1),): "money",
    (("[currency]", 1), ("[time]", -1)): "money_rate",
    (): "count",
    (("[compute]", 1),): "flop",
    (("[compute]", 1), ("[time]", -1)): "flop_rate",
}


def _kind(quantity: pint.Quantity) -> str:
    """The kind of an answer, by its dimension: bytes, time, rate, money, count, FLOPs, ..."""
    return _KINDS.get(tuple(sorted(dict(quantity.dimensionality).items())), "other")


#: Every kind's slips together: what :func:`slip_words` knows when no kind is given (the drills' list).
_ANY_PREFIX = "check the unit prefix (k, M, G) or ms vs s"
_GENERIC: list[tuple[float, str]] = [
    *_BYTE_SLIPS[:5],
    (1e3, _ANY_PREFIX),
    (1e6, _ANY_PREFIX),
    (1e9, _ANY_PREFIX),
    (1e12, _ANY_PREFIX),
    (1.024e3, "KiB vs kB, and a unit prefix?"),
    (60.0, "per second vs per minute (or s vs min)?"),
    (3600.0, "per second vs per hour (or s vs h)?"),
    (86400.0, "per second vs per day?"),
    (100.0, "a fraction vs a percentage?"),
]


def _slip(ratio: float, tolerance: float, slips: list[tuple[float, str]]) -> tuple[float, str]:
    for factor, words in slips:
        for f in (factor, 1 / factor):
            if abs(ratio / f - 1) <= tolerance:
                return factor, words
    return 1.0, ""


def slip_words(ratio: float, tolerance: float = 0.01, kind: str | None = None) -> str:
    """Words for the common slip behind an answer ``ratio`` times the right one, or ``""``.

    ``kind`` ("bytes", "time", "rate", "money", "count", ...) keeps to the slips of that kind of
    answer; without it every kind's are tried. Shared by the exercise checker and the interview drills.

    Examples
    --------
    >>> slip_words(8.0), slip_words(1 / 1.024), slip_words(3.0)
    ('bits vs bytes?', 'KiB vs kB?', '')
    >>> slip_words(8.0, kind="time"), slip_words(1e3, kind="time")
    ('', 'check the unit prefix: ms vs s?')
    """
    return _slip(ratio, tolerance, _SLIPS.get(kind, _GENERIC) if kind else _GENERIC)[1]


def _factor_words(f: float) -> str:
    return f"{f:,.0f}" if f >= 10 and abs(f - round(f)) < 1e-9 * f else f"{f:.4g}"


def _size_words(ratio: float) -> str:
    """Direction and a coarse size: "too large by 10% to 50%", "about 3x too small" (one significant
    digit at most, never the exact ratio)."""
    way = "too large" if ratio > 1 else "too small"
    f = ratio if ratio > 1 else 1 / ratio
    if f < 1.1:
        return f"{way}, but within 10%"
    if f < 1.5:
        return f"{way} by 10% to 50%"
    if f >= 1e6:
        return f"{way} by more than a million times"
    scale = 10 ** math.floor(math.log10(f))
    about = round(f / scale) * scale
    return f"about {about:,.0f}x {way}"


def _diagnose(ratio: float, ex: Exercise, variant: dict[str, Any], kind: str) -> str:
    """Words for an answer ``ratio`` times the expected one: a known slip of this exercise or of the
    answer's kind, else the direction and a coarse size."""
    if ratio <= 0:
        return "the sign or the value is off: the answer is a positive quantity"
    specific = list(ex.mistakes(variant)) if ex.mistakes else []
    if ex.kv:
        specific.append((1 / 2, "did you count keys and values?"))
    tol = max(ex.tolerance, 0.002)
    for factor, words in specific:  # a specific slip gives factor x the answer, in that direction only
        if factor > 0 and abs(factor - 1) >= 2 * tol and abs(ratio / factor - 1) <= tol:
            return f"{'too large' if factor > 1 else 'too small'} by a factor of {_factor_words(max(factor, 1 / factor))} ({words})"
    factor, words = _slip(ratio, tol, _SLIPS[kind])
    if words:
        return f"{'too large' if ratio > 1 else 'too small'} by a factor of {_factor_words(factor)} ({words})"
    if abs(ratio - 2) <= tol or abs(ratio - 1 / 2) <= tol:
        return f"{'too large' if ratio > 1 else 'too small'} by a factor of 2"
    return _size_words(ratio)


def check(exercise_id: str, answer: Any, *, seed: Any = None) -> Result:
    """Check ``answer`` for an exercise. Never raises, whatever the id and the answer; see :class:`Result`.

    ``seed`` (a student number or name) picks that student's variant; without it the session's
    student (see :func:`student`) or the book's default variant is used. ``exercise_id`` may also be
    an :class:`Exercise` that is not registered (a drill's dealt question).
    """
    try:
        return _check(exercise_id, answer, seed)
    except KeyboardInterrupt:
        raise
    except BaseException:  # a hostile answer's methods may raise anything, even SystemExit
        return Result(
            _text(exercise_id),
            "invalid",
            "Not yet: reading this answer raised an error; give a number, e.g. Q_(value, unit).",
        )


def _check(exercise_id: Any, answer: Any, seed: Any) -> Result:
    s = _SESSION.current_seed(seed)
    if _OBSERVER is not None:
        with contextlib.suppress(Exception):
            _OBSERVER(exercise_id, answer, s)
    try:
        ex = exercise_id if isinstance(exercise_id, Exercise) else get(exercise_id)
    except KeyError as exc:
        return Result(_text(exercise_id), "unknown", str(exc.args[0]))
    key = (ex.id, repr(s))
    unit_words = ex.unit or "a plain number"
    if answer is None:
        return Result(ex.id, "blank", "Not answered yet.", expected_unit=unit_words)
    try:
        variant = ex.variant(s)
        expected = _expected(ex, variant)
    except Exception as exc:  # pragma: no cover - an exercise definition bug, not the student's
        return Result(ex.id, "invalid", f"this variant could not be computed ({_text(exc)}); tell the teacher.")

    def wrong(status: str, message: str) -> Result:
        n = _SESSION.tries.get(key, 0) + 1
        _SESSION.tries[key] = n
        shown = tuple(h.format(**{k: _show(x) for k, x in variant.items()}) for h in ex.hints[: min(n, len(ex.hints))])
        return Result(
            ex.id, status, message, expected_unit=unit_words, hint=shown[-1] if shown else None, hints=shown, tries=n
        )

    try:
        given, comma = _read(answer, ex.unit)
    except _Refused as why:
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
        shown = _text(answer).strip("'\"")
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
            return wrong("wrong", f"Not yet: {'too many' if off > 0 else 'too few'}: {_size_words(ratio)}.")
    return wrong("wrong", f"Not yet: {_diagnose(ratio, ex, variant, _kind(expected))}.")


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
