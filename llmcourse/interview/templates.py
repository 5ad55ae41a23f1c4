"""Answer templates: numbers and catalog entries written into an interview answer's prose.

A question's text (see :mod:`llmcourse.interview.questions`) is a template over the numbers its
``worked()`` function returns and the catalog entries of :data:`CATALOG_NAMES`: ``{kv72}`` or
``{kv72:4}`` (four significant figures), ``{kv72.m}`` (the number without its unit),
``{H100.bandwidth}`` (a catalog figure). :func:`num` writes one value as prose, :func:`fill` fills a
template, :func:`check_fields` refuses a field that could never be filled, and :func:`fields` names
the fields a template uses.

Examples
--------
>>> from llmcourse.units import Q_
>>> fill("{kv:4} per token on a GPU with {H100.bandwidth}", {"kv": Q_(327_680, "B").to("KiB")})
'320 KiB per token on a GPU with 3.35 TB/s'
>>> sorted(fields("{kv:4} and {H100.bandwidth.m}"))
['H100', 'kv']
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

import pint

from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.errors import InputError
from llmcourse.units import Q_, sig

__all__ = ["CATALOG_NAMES", "check_fields", "fields", "fill", "num"]

_USD, _USD_PER_HOUR = Q_(1, "USD"), Q_(1, "USD/hour")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

#: Short names templates use for catalog entries, so no catalog figure is typed in a question.
CATALOG_NAMES: dict[str, tuple[str, str]] = {
    "H100": ("gpu", "H100 SXM"),
    "H200": ("gpu", "H200 SXM"),
    "L4": ("gpu", "L4"),
    "Q72": ("model", "Qwen2.5-72B"),
    "Q7": ("model", "Qwen2.5-7B"),
    "L8": ("model", "Llama-3.1-8B"),
    "L70": ("model", "Llama-3.1-70B"),
    "L2": ("model", "Llama-2-7B"),
    "Q30": ("model", "Qwen3-30B-A3B"),
}


def num(value: Any, digits: int = 3, *, escape: bool = True) -> str:
    """A value in prose: quantities with their unit symbol, counts with thousands separators.

    Dollars print as ``\\$1.05`` for MyST Markdown (a bare ``$`` opens math there); pass
    ``escape=False`` for text that is not parsed as Markdown (``{glue:text}``).

    Examples
    --------
    >>> num(Q_(327_680, "B").to("KiB")), num(10_851), num(23.93), num(Q_(0.29431, "s"), 2), num(Q_(80.0, "GB"))
    ('320 KiB', '10,851', '23.9', '0.29 s', '80 GB')
    >>> num("Llama-3.1-70B")
    'Llama-3.1-70B'
    """
    if isinstance(value, pint.Quantity):
        dollar = "\\$" if escape else "$"  # a bare $ opens math in MyST
        if value.dimensionality == _USD.dimensionality:
            return f"{dollar}{sig(float(value.to('USD').m), digits)}"
        if value.dimensionality == _USD_PER_HOUR.dimensionality:
            return f"{dollar}{float(value.to('USD/hour').m):,.2f}/h"
        return f"{_digits(float(value.m), digits)} {value.units:~P}".strip()
    if isinstance(value, (bool, str)):  # a given named in words: a model, a GPU, a precision
        return str(value)
    if isinstance(value, _Bare):
        return f"{float(value):g}"
    return _digits(float(value), digits)


def _digits(x: float, digits: int) -> str:
    """Whole numbers as they are (80, 989, 10,851); others to ``digits`` significant figures."""
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    text = sig(x, digits)
    return text.rstrip("0").rstrip(".") if "." in text else text


class _Num:
    """A value that formats itself for prose: the format spec is the number of significant figures."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        return num(self.value, int(spec) if spec else 3)

    def __getattr__(self, name: str) -> _Num:
        if name == "m" and isinstance(self.value, pint.Quantity):  # {H100.bandwidth.m}: the number alone
            return _Num(float(self.value.m))
        if name == "m":  # a plain number for LaTeX: no thousands separator ({L70.hidden.m} is 8192)
            return _Num(_Bare(self.value))
        raise AttributeError(name)


class _Bare(float):
    """A number printed without thousands separators (inside LaTeX a comma adds a space)."""


class _Ref:
    """A catalog entry in a template: ``{H100.bandwidth}`` is '3.35 TB/s', ``{H100.bandwidth.m}`` '3.35',
    ``{Q72.layers}`` '80', ``{Q72.billions}`` '72.7' (parameters in billions)."""

    def __init__(self, entry: Model | GPU) -> None:
        self._entry = entry

    def __getattr__(self, name: str) -> _Num:
        if name == "billions":
            return _Num(self._entry.params / 1e9)
        if name == "active_billions":
            return _Num(self._entry.active_params / 1e9)
        return _Num(getattr(self._entry, name))


def _refs() -> dict[str, _Ref]:
    return {k: _Ref(gpus[n] if kind == "gpu" else models[n]) for k, (kind, n) in CATALOG_NAMES.items()}


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with its fields filled: the ``values`` (names a question's ``worked()`` returns) and
    the catalog entries of :data:`CATALOG_NAMES`, each written by :func:`num`.

    Examples
    --------
    >>> fill("{n} GPUs of {H100.memory.m} GB at {t:2}", {"n": 16, "t": Q_(0.29431, "s")})
    '16 GPUs of 80 GB at 0.29 s'
    """
    return template.format_map(_refs() | {k: _Num(v) for k, v in values.items()})


def fields(template: str) -> set[str]:
    """The names ``template`` uses (``{kv72:4}`` and ``{H100.bandwidth}`` give ``kv72`` and ``H100``).

    Examples
    --------
    >>> sorted(fields("a {x} b {y:2} c {{literal}} {Q72.layers}"))
    ['Q72', 'x', 'y']
    """
    return {f.split(".")[0] for _, f, _, _ in string.Formatter().parse(template) if f}


def check_fields(where: str, part: str, text: str) -> None:
    """Refuse (:class:`~llmcourse.errors.InputError`, naming ``where`` and ``part``) a template field that
    cannot be filled: bad braces, a format other than a digit count, an attribute other than ``.m`` on a
    number, or a catalog entry's unknown attribute.

    Examples
    --------
    >>> check_fields("q1", "prompt", "{x:3} on {H100.bandwidth}")
    >>> check_fields("q1", "prompt", "{H100.colour}")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: q1, prompt: field {H100.colour}: H100 SXM has no 'colour'.
    """
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise InputError(f"{where}, {part}: {exc} (write a literal brace twice: {{{{ or }}}}).") from None
    refs = _refs()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not _FIELD.fullmatch(name) or conversion or (spec and not spec.isdigit()):
            raise InputError(
                f"{where}, {part}: field {{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}} "
                "is not a name with an optional digit count ({name} or {name:3})."
            )
        head, *attrs = name.split(".")
        if head in refs:
            if not attrs:
                raise InputError(f"{where}, {part}: field {{{name}}} names a catalog entry; give one of its figures.")
            try:
                getattr(getattr(refs[head], attrs[0]), ".".join(attrs[1:]) or "value")
            except AttributeError:
                raise InputError(
                    f"{where}, {part}: field {{{name}}}: {CATALOG_NAMES[head][1]} has no {attrs[0]!r}."
                ) from None
        elif attrs not in ([], ["m"]):
            raise InputError(f"{where}, {part}: field {{{name}}}: a number takes no attribute but .m.")
