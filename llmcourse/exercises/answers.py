"""Reading what a student gives, never raising on it: the answer, the student id, and any object as text.

:func:`read_answer` reads an answer (a quantity, a number, or a string such as ``"320 KiB"`` or
``"$1.20/h"``) as one quantity, or raises :class:`AnswerRefused` with a message that says what to
write instead; it evaluates nothing (short, plain unit names only). :func:`portable` and
:func:`from_portable` carry an answer across a process boundary as JSON (the grader's workers).
:func:`short_text`, :func:`quoted` and :func:`type_name` print anything, even an object whose methods
raise; :func:`seed_text` is a student id as the text its variants are drawn from; :func:`show_value`
writes a given into an exercise's story.

Used by the checking engine (:mod:`llmcourse.exercises.engine`), the grader
(:mod:`llmcourse.exercises.cli`) and the drills (:mod:`llmcourse.widgets.drills`).

Examples
--------
>>> read_answer("1,024 KiB", "KiB")
(<Quantity(1024.0, 'kibibyte')>, <Quantity(1.024, 'kibibyte')>)
>>> try:
...     read_answer("0,5 KiB", "KiB")
... except AnswerRefused as why:
...     print(why)
'0,5' has a decimal comma; write the decimal point as '.', e.g. 0.5.
"""

from __future__ import annotations

import decimal
import hashlib
import math
import numbers
import re
from typing import Any

import pint

from llmcourse.units import Q_, sig, ureg

__all__ = [
    "AnswerRefused",
    "UnreadableAnswer",
    "from_portable",
    "long_text",
    "portable",
    "quoted",
    "read_answer",
    "seed_text",
    "short_text",
    "show_value",
    "type_name",
]


# --- text of anything, never raising ------------------------------------------------------------------
def short_text(x: Any, limit: int = 60) -> str:
    """A short printable form of ``x`` (its repr, or the string itself), whatever ``x`` does.

    At most ``limit`` characters (a longer one ends in ``...``); characters that do not print become ``?``.

    Examples
    --------
    >>> short_text("abc"), short_text(1.5), short_text("x" * 80, 10)
    ('abc', '1.5', 'xxxxxxx...')
    """
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


def quoted(x: Any, limit: int = 60) -> str:
    """:func:`short_text`, with a string in quotes (as in a message: got 'abc').

    Examples
    --------
    >>> quoted("abc"), quoted(3)
    ("'abc'", '3')
    """
    try:
        is_text = isinstance(x, str)
    except Exception:
        is_text = False
    return repr(short_text(x, limit)) if is_text else short_text(x, limit)


def type_name(x: Any) -> str:
    """The name of ``x``'s type, printable (``"object"`` if even that cannot be read).

    Examples
    --------
    >>> type_name(1.5), type_name("abc")
    ('float', 'str')
    """
    try:
        return short_text(type(x).__name__, 40)
    except Exception:
        return "object"


def seed_text(seed: Any) -> str | None:
    """A student id as the text its variants are drawn from (``None``, ``""`` or blanks: no student), the one
    reading of a student id: the notebook's :func:`~llmcourse.exercises.engine.student` and the grader's ``--seed``
    both go through it. Text is read without its surrounding spaces and in lower case, so ``"Alice"``,
    ``" alice "`` and ``"alice"`` are one student; an id already so written is kept as it is (its variants do
    not change).

    Examples
    --------
    >>> seed_text(1234567), seed_text("s1234567"), seed_text(""), seed_text(None)
    ('1234567', 's1234567', None, None)
    >>> seed_text(" Alice "), seed_text("S1234567"), seed_text("   ")
    ('alice', 's1234567', None)
    """
    if seed is None:
        return None
    if isinstance(seed, str):
        return _id_text(str.__getitem__(seed, slice(None)))
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
            return _id_text(str.__getitem__(s, slice(None)))
    except KeyboardInterrupt:
        raise
    except BaseException:
        pass
    return short_text(seed, 200)


def _id_text(s: str) -> str | None:
    """A student id's text without its surrounding spaces, in lower case (None if nothing is left)."""
    return s.strip().lower() or None


# --- a given in a story -------------------------------------------------------------------------------
def show_value(x: Any) -> str:
    """A given as an exercise's story writes it: a quantity to four significant figures with its unit
    symbol, a count with thousands separators.

    Examples
    --------
    >>> show_value(Q_(3.3521, "TB/s")), show_value(2048.0), show_value(0.75), show_value("H100 SXM")
    ('3.352 TB/s', '2,048', '0.75', 'H100 SXM')
    """
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


# --- reading a student's answer -------------------------------------------------------------------------
class AnswerRefused(Exception):
    """The answer cannot be read as one number; the message says why."""


class UnreadableAnswer:
    """An answer a grader's worker could not read; carries the reason (see :func:`from_portable`)."""

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
    """The unit written after a number in a string answer, or :class:`AnswerRefused` (no evaluation of
    arbitrary expressions: short, plain unit names with small exponents only)."""
    text = _COUNT_WORDS.sub("1", text).strip()
    if text.startswith(("*", "^")):
        raise AnswerRefused("write the number itself (e.g. 1e6 or 1000000), not an expression.")
    if text.startswith("/"):
        text = "1" + text
    if text.lower().startswith("per "):
        text = "1/" + text[4:]
    if not _UNIT_CHARS.fullmatch(text) or _BIG_EXPONENT.search(text):
        raise AnswerRefused(
            f"could not read the unit {short_text(text)!r}; write e.g. '320 KiB', '30 ms' or Q_(320, 'KiB')."
        )
    try:
        return ureg.parse_units(text)
    except Exception:
        raise AnswerRefused(
            f"could not read the unit {short_text(text)!r}; write e.g. '320 KiB', '30 ms' or Q_(320, 'KiB')."
        ) from None


def long_text(length: int, unit: str) -> str:
    """Why a text answer of ``length`` characters (stripped; more than one number takes) is refused, for an
    exercise in ``unit``: the checker's words, and the grader's for a text it was told only the length of.

    Examples
    --------
    >>> long_text(250_000, "KiB")
    "got a string of 250,000 characters; give one number with a unit, e.g. Q_(1, 'KiB')."
    """
    example = f"Q_(1, {unit!r})" if unit else "1.5"
    return f"got a string of {length:,} characters; give one number" + (
        f" with a unit, e.g. {example}." if unit else "."
    )


def _read_text(answer: str, unit: str) -> tuple[pint.Quantity, pint.Quantity | None]:
    """A string answer as (quantity, the quantity read with a decimal comma or None)."""
    text = str.__getitem__(answer, slice(None)).strip()
    example = f"Q_(1, {unit!r})" if unit else "1.5"
    if not text:
        raise AnswerRefused("got an empty string; give a number.")
    if len(text) > _LONGEST_TEXT:
        raise AnswerRefused(long_text(len(text), unit))
    m = _NUMBER.fullmatch(text)
    if not m:
        raise AnswerRefused(f"could not read {short_text(answer)!r} as a number with a unit; write e.g. {example}.")
    dollar, token, rest = m.groups()
    token = re.sub(r"(?<=\d)_(?=\d)", "", token)
    alt: float | None = None
    if "," in token:
        if not _THOUSANDS.fullmatch(token):
            fixed = token.replace(".", "").replace(",", ".", 1) if token.count(",") == 1 else None
            raise AnswerRefused(
                f"{short_text(token)!r} has a decimal comma; write the decimal point as '.'"
                + (f", e.g. {fixed}." if fixed else ", and no commas inside a number.")
            )
        if token.count(",") == 1 and "." not in token and "e" not in token.lower():
            alt = float(token.replace(",", "."))
        token = token.replace(",", "")
    try:
        value = float(token)
    except ValueError:
        raise AnswerRefused(f"could not read {short_text(answer)!r} as a number; write e.g. {example}.") from None
    if not math.isfinite(value):
        raise AnswerRefused(f"got {short_text(answer)!r}, which is too large to be an answer (or not a finite number).")
    if dollar:
        rest = "USD" + (rest if rest.startswith("/") else (f"*({rest})" if rest else ""))
    units = _unit_of_text(rest) if rest else ureg.parse_units("")
    return Q_(value, units), (Q_(alt, units) if alt is not None else None)


def _real(mag: Any) -> float:
    """One finite real number from ``mag``, or :class:`AnswerRefused`."""
    if isinstance(mag, bool) or mag is Ellipsis or mag is None:
        raise AnswerRefused(f"got {short_text(mag)}; give a number.")
    shape = _attr(mag, "shape")
    if shape == () and callable(_attr(mag, "item")):  # a numpy scalar or 0-d array
        mag = mag.item()
        shape = None
    if isinstance(mag, list | tuple | set | frozenset | dict) or (shape is not None and shape != ()):
        raise AnswerRefused("got several values; give one number.")
    if isinstance(mag, decimal.Decimal):
        pass
    elif isinstance(mag, complex) or not isinstance(mag, numbers.Real) or isinstance(mag, bool):
        raise AnswerRefused(f"got {type_name(mag)} {quoted(mag)}; give a number.")
    try:
        value = float(mag)
    except OverflowError:
        raise AnswerRefused("got a number too large to be an answer.") from None
    except Exception:
        raise AnswerRefused(f"could not read {short_text(mag)} as a number; give a plain number, e.g. 1.5.") from None
    if type(value) is not float or not math.isfinite(value):
        raise AnswerRefused(f"got {short_text(mag)}, which is not a finite number.")
    return value


def read_answer(answer: Any, unit: str) -> tuple[pint.Quantity, pint.Quantity | None]:
    """The student's answer as (a quantity of this registry, its decimal-comma reading or None), or
    :class:`AnswerRefused`, whose message says what to write instead. ``unit`` is the exercise's unit
    (``""``: a plain number), used in the examples the messages give.

    Examples
    --------
    >>> read_answer(Q_(320, "KiB"), "KiB")
    (<Quantity(320.0, 'kibibyte')>, None)
    >>> read_answer("$1.20/h", "USD/hour")[0]
    <Quantity(1.2, 'USD / hour')>
    >>> read_answer([1, 2], "")
    Traceback (most recent call last):
    ...
    llmcourse.exercises.answers.AnswerRefused: got several values; give one number.
    """
    example = f" with a unit, e.g. Q_(1, {unit!r})." if unit else "."
    if isinstance(answer, UnreadableAnswer):
        raise AnswerRefused(answer.why)
    if isinstance(answer, bool) or answer is Ellipsis:
        raise AnswerRefused(f"got {short_text(answer)}; give a number{example}")
    if isinstance(answer, str):
        return _read_text(answer, unit)
    if isinstance(answer, pint.Quantity):
        units = answer.units
        if answer._REGISTRY is not ureg:  # a quantity built with another pint registry
            try:
                units = _unit_of_text(str(units))
            except AnswerRefused:
                raise AnswerRefused(
                    f"could not read the unit {short_text(str(units))!r}; build the answer with llmcourse's Q_ "
                    "(from llmcourse import Q_)."
                ) from None
        return Q_(_real(answer.magnitude), units), None
    return Q_(_real(answer), ""), None


def portable(answer: Any, unit: str = "") -> Any:
    """The answer in a form that crosses a process boundary as JSON (for the grader): ``None``,
    ``{"text": ...}``, ``{"q": [magnitude, unit]}`` or ``{"refused": why}``.

    Examples
    --------
    >>> portable(Q_(320, "KiB"), "KiB"), portable("320 KiB")
    ({'q': [320.0, 'KiB']}, {'text': '320 KiB'})
    """
    if answer is None:
        return None
    if isinstance(answer, str):
        return {"text": str.__getitem__(answer, slice(None))[: _LONGEST_TEXT + 1]}
    try:
        q, _ = read_answer(answer, unit)
        return {"q": [float(q.m), format(q.units, "~C")]}
    except AnswerRefused as why:
        return {"refused": str(why)}
    except KeyboardInterrupt:
        raise
    except BaseException:
        return {"refused": "reading this answer raised an error; give a number, e.g. Q_(value, unit)."}


def from_portable(obj: Any) -> Any:
    """The answer :func:`portable` described, rebuilt safely (whatever the message held): ``None``, a
    string, a quantity, or an :class:`UnreadableAnswer` that :func:`read_answer` refuses with its reason.

    Examples
    --------
    >>> from_portable({"q": [320.0, "KiB"]}), from_portable({"text": "320 KiB"})
    (<Quantity(320.0, 'kibibyte')>, '320 KiB')
    >>> from_portable({"q": "320"}).why
    'the grader could not read this answer.'
    """
    if obj is None:
        return None
    if isinstance(obj, dict) and len(obj) == 1:
        (kind, value), *_ = obj.items()
        if kind == "text" and type(value) is str:
            return value
        if kind == "refused" and type(value) is str:
            return UnreadableAnswer(short_text(value, 300))
        if kind == "q" and type(value) is list and len(value) == 2:
            mag, unit = value
            if type(mag) in (int, float) and type(unit) is str and math.isfinite(mag):
                try:
                    return Q_(float(mag), _unit_of_text(unit) if unit else ureg.parse_units(""))
                except AnswerRefused:
                    pass
    return UnreadableAnswer("the grader could not read this answer.")
