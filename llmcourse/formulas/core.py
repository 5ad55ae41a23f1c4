"""The framework of the course's formulas: symbols, formulas, their registry, and what keeps SymPy off the import.

:class:`Symbol` (a named quantity with its unit and bounds, registered in :data:`SYMBOLS` by :func:`symbol`),
:class:`Formula` (``target = expr`` over those symbols, registered in :data:`FORMULAS` by :func:`formula`; its
numeric function is ``lambdify``'s code), :func:`checked`, :func:`check_value` and :func:`si` (arguments checked
by the symbols they are named after), :func:`derived` and :func:`built` (what SymPy works out, read from
:mod:`llmcourse.formulas.cache` while current), the sections (:func:`section`) and the deferred symbols
(:func:`later`, :func:`defer`) of the modules that define formulas, and :func:`dimension_of`. The design is
described in :mod:`llmcourse.formulas`, which imports this module and then the topic modules that define the
formulas; this one imports none of them.
"""

from __future__ import annotations

import builtins
import difflib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import math
import os
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pint

from llmcourse.errors import MOVED_KEYWORDS, InputError, UnknownNameError
from llmcourse.formulas import cache
from llmcourse.units import as_quantity, flag, parsed_unit, plain_number, quantity, ureg


class _OnFirstUse(types.ModuleType):
    """A module imported on the first use of one of its names (``sp.Symbol``), not where it is named: SymPy's import
    is half the time of ``import llmcourse``, and while :mod:`llmcourse.formulas.cache` is current the import, the
    planner and the calculators ask nothing of it. Its names are copied here at that first use; a dunder name
    imports nothing (introspection asks for ``__wrapped__``, ``__path__``, ...) but is SymPy's once it is imported."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and self.__name__ not in sys.modules:
            raise AttributeError(f"module {self.__name__!r}, not imported yet, has no attribute {name!r}")
        module = importlib.import_module(self.__name__)
        vars(self).update((k, v) for k, v in vars(module).items() if not k.startswith("__"))
        return getattr(module, name)


if TYPE_CHECKING:
    import sympy as sp
else:
    #: SymPy, imported on first use (the modules that define formulas, and :mod:`llmcourse.planner.moe`, take it from here).
    sp = _OnFirstUse("sympy")

__all__ = [
    "DEFINING",
    "DERIVATIONS",
    "FORMULAS",
    "LAMBDIFY_SCOPE",
    "PARAMETER_SYMBOLS",
    "SOURCES",
    "SYMBOLS",
    "USE_CACHE",
    "Formula",
    "Max",
    "Min",
    "Symbol",
    "built",
    "ceiling",
    "check_value",
    "checked",
    "derived",
    "digest",
    "exact_repr",
    "floor",
    "formula",
    "si",
    "sp",
    "srepr_scope",
]


#: Whether :mod:`llmcourse.formulas.cache` is read: ``LLMCOURSE_FORMULAS_CACHE=0`` works everything out (the generator
#: runs so, so that the cache follows from the code alone).
USE_CACHE = os.environ.get("LLMCOURSE_FORMULAS_CACHE", "1") != "0"

#: The modules (under ``llmcourse``) the formulas follow from: the package, whose imports set the order they are
#: registered in, this framework, and the topic modules whose sections (:func:`section`) define them. While their
#: source text and SymPy's version are the ones :mod:`llmcourse.formulas.cache` was generated from, the formulas are
#: registered from its table.
DEFINING = (
    "formulas",
    "formulas.core",
    "formulas.serving",
    "formulas.bill",
    "formulas.parallel",
    "formulas.disagg",
    "formulas.speculative",
    "formulas.validation",
)


def _sympy_version() -> str:
    """SymPy's version, read from its ``release.py`` without importing SymPy (unless it is imported already, or laid
    out otherwise: then its import says).

    Examples
    --------
    >>> import sympy
    >>> _sympy_version() == sympy.__version__
    True
    """
    if "sympy" in sys.modules:
        return sys.modules["sympy"].__version__
    if os.environ.get("LLMCOURSE_SYMPY_VERSION"):
        # the browser's live runtime fetches SymPy only when it is first imported, and names the one it ships
        return os.environ["LLMCOURSE_SYMPY_VERSION"]
    try:
        spec = importlib.util.find_spec("sympy")
        text = spec.loader.get_data(os.path.join(os.path.dirname(spec.origin), "release.py")).decode()
        return re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE).group(1)
    except (AttributeError, ImportError, OSError, TypeError, UnicodeDecodeError, ValueError):
        return importlib.import_module("sympy").__version__


def _sources_digest() -> str | None:
    """A digest of SymPy's version and the source of every module of :data:`DEFINING` (read as text, so that it
    is the same on every Python version); ``None`` if a source cannot be read."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # llmcourse/
    h = hashlib.sha256(_sympy_version().encode())
    try:
        for name in DEFINING:
            path = os.path.join(package, *name.split("."))
            with open(os.path.join(path, "__init__.py") if os.path.isdir(path) else f"{path}.py", "rb") as src:
                h.update(b"\0" + src.read().replace(b"\r\n", b"\n"))
    except OSError:
        return None
    return h.hexdigest()[:20]


#: The digest of the defining modules now (:func:`_sources_digest`): the cache is current while its own is this one.
SOURCES = _sources_digest()
#: Whether the formulas are registered from :mod:`llmcourse.formulas.cache`'s table (names, units, inputs, code)
#: and their expressions made on first use: the import then does no SymPy arithmetic at all, and the symbols are made
#: (SymPy imported) only when something symbolic is first asked for (:func:`later`).
_LAZY = USE_CACHE and SOURCES is not None and getattr(cache, "SOURCES", None) == SOURCES


@dataclass(frozen=True)
class Symbol:
    """A named quantity: its SymPy symbol, its Python name, its unit and what it means."""

    name: str
    latex: str
    unit: str
    meaning: str
    integer: bool = False
    allow_zero: bool = False
    at_most: float | None = None
    at_least: float | None = None
    bound_note: str = ""  # why the bounds are there, for the message

    @cached_property
    def sym(self) -> sp.Symbol:
        return sp.Symbol(self.latex, positive=True, integer=self.integer or None)


SYMBOLS: dict[str, Symbol] = {}
_LATEX: set[str] = set()  # the symbols' LaTeX names, each defined once
#: The sections not run yet (in the order their modules defined them), and whether they are running.
_PENDING: list[Callable[[], None]] = []
_FILLING = False


def symbol(
    name: str,
    latex: str,
    unit: str,
    meaning: str,
    integer: bool = False,
    allow_zero: bool = False,
    at_most: float | None = None,
    at_least: float | None = None,
    bound_note: str = "",
) -> sp.Symbol:
    """Define and register a symbol; its SymPy symbol, or while the cache is current (:data:`_LAZY`) what stands
    for it until SymPy is first needed (:func:`later`)."""
    if _FILLING:  # a section's symbol would be missing from SYMBOLS until the section ran
        raise RuntimeError(f"symbol {name!r} is defined in a section: define it where the module's code runs")
    if latex in _LATEX:
        raise ValueError(f"symbol {latex!r} defined twice")
    _LATEX.add(latex)
    SYMBOLS[name] = Symbol(name, latex, unit, meaning, integer, allow_zero, at_most, at_least, bound_note)
    return symbols(name)[0]


class _Later:
    """What a name of a module that defines formulas stands for until SymPy is first needed: a value made of SymPy
    symbols (a symbol, a table of them), made then by ``make`` (:func:`later`)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def __repr__(self) -> str:
        return "<made on SymPy's first use: the module's name is bound by make_symbols>"


#: The names of the defining modules that stand for values made of symbols, taken out of their namespaces until
#: SymPy is first needed: (namespace, name, what makes the value), in the order the modules defined them.
_UNMADE: list[tuple[dict[str, Any], str, Callable[[], Any]]] = []


def later(make: Callable[[], Any]) -> Any:
    """A module-level value of a defining module made of SymPy symbols (``_S = later(lambda: {...})``): ``make()``
    now, or, while the cache is current (:data:`_LAZY`), made when SymPy is first needed. The module ends with
    ``defer(globals())``, which takes such names out of its namespace; its ``__getattr__``
    (:func:`deferred_getattr`) then makes them on first use, so that ``from llmcourse.formulas import batch`` gives
    the symbol itself, and the sections run with every name bound (:func:`make_symbols`)."""
    return _Later(make) if _LAZY else make()


def symbols(*names: str) -> tuple[Any, ...]:
    """The SymPy symbols of ``names`` (of :data:`SYMBOLS`), as :func:`later` gives them: for a module's names."""
    return tuple(later(lambda n=n: SYMBOLS[n].sym) for n in names)


def defer(namespace: dict[str, Any]) -> None:
    """The last line of a module that defines formulas: its names that stand for values made of symbols
    (:func:`later`) leave its namespace until SymPy is first needed (:func:`make_symbols`)."""
    for name, value in list(namespace.items()):
        if isinstance(value, _Later):
            del namespace[name]
            _UNMADE.append((namespace, name, value.make))


def make_symbols() -> None:
    """Make every deferred value (:func:`later`: SymPy is imported) and bind it to its name in its module."""
    while _UNMADE:
        namespace, name, make = _UNMADE[0]
        namespace[name] = make()
        _UNMADE.pop(0)


@dataclass
class Formula:
    """One formula: ``target = expr`` with the unit of every symbol.

    Parameters
    ----------
    name : str
        Python name, used as ``FORMULAS[name]``.
    target : str
        Name (in :data:`SYMBOLS`) of the quantity the formula gives; its unit is the result's.
    expr : sympy.Expr
        The right-hand side, over symbols from :data:`SYMBOLS`.
    meaning : str
        One line for the book's table of formulas.
    chapter : str
        The chapter that derives it.
    """

    name: str
    target: str
    _expr: sp.Expr | None = field(repr=False)  # None until its section runs (a formula read from the cache's table)
    meaning: str
    chapter: str
    _numeric: Callable[..., float] | None = field(default=None, repr=False)
    _inputs: tuple[Symbol, ...] | None = field(default=None, repr=False)
    _cached: bool = field(default=False, repr=False)  # registered from the cache's table: its code is current

    @property
    def expr(self) -> sp.Expr:
        """The right-hand side: made by its module's section the first time it is asked for, if the formula was
        registered from the cache's table (:func:`section`)."""
        if self._expr is None:
            _fill()
            if self._expr is None:  # pragma: no cover - the table names a formula no section defines
                raise RuntimeError(f"no section defines formula {self.name!r}: run `make formulas-cache`")
        return self._expr

    @property
    def inputs(self) -> list[Symbol]:
        """The input symbols, in a fixed order (the numeric function's argument order)."""
        if self._inputs is None:  # worked out once: every call of the formula needs it
            by_sym = {s.sym: s for s in SYMBOLS.values()}
            self._inputs = tuple(sorted((by_sym[s] for s in self.expr.free_symbols), key=lambda s: s.name))
        return list(self._inputs)

    @property
    def unit(self) -> str:
        return SYMBOLS[self.target].unit

    @property
    def numeric(self) -> Callable[..., float]:
        """Plain-float function of the inputs (in their declared units), from ``lambdify``."""
        if self._numeric is None:
            self._numeric = self.positional(*(s.name for s in self.inputs))
        return self._numeric

    def positional(self, *names: str) -> Callable[..., float]:
        """The plain-float function of the inputs (in their declared units) taking them in the order
        ``names`` gives (every input once): ``lambdify``'s code, read from :mod:`llmcourse.formulas.cache`
        when it was generated from this expression, else printed by ``lambdify`` now.

        Examples
        --------
        >>> FORMULAS["throughput"].positional("step_time", "batch")(0.02, 64)
        3200.0
        """
        inputs = self.inputs
        index = {s.name: i for i, s in enumerate(inputs)}
        if sorted(names) != sorted(index):
            raise ValueError(f"{self.name} takes {', '.join(sorted(index))}; got {', '.join(names)}.")
        cached = cache.NUMERIC.get(self.name) if USE_CACHE else None
        if cached is not None and (self._cached or cached[0] == digest(self.expr, tuple(s.name for s in inputs))):
            params = ", ".join(f"_a{index[n]}" for n in names)
            scope = dict(LAMBDIFY_SCOPE)
            exec(f"def _lambdifygenerated({params}):\n    return {cached[1]}\n", scope)  # lambdify's code
            return scope["_lambdifygenerated"]
        syms = {s.name: s.sym for s in inputs}
        return sp.lambdify([syms[n] for n in names], self.expr, modules=["math"])

    def latex(self) -> str:
        """``target = expr`` as LaTeX, for display in a chapter."""
        return f"{SYMBOLS[self.target].latex} = {sp.latex(self.expr, mul_symbol=' ')}".replace("  ", " ")

    @cached_property
    def _fast(self) -> tuple[frozenset[str], tuple[Symbol, ...], Any]:
        """What every call needs, worked out once: the input names, the inputs, the result's unit."""
        inputs = tuple(self.inputs)
        unit = parsed_unit(self.unit)[0] if self.unit else _DIMENSIONLESS
        return frozenset(s.name for s in inputs), inputs, unit._units

    @cached_property
    def value(self) -> Callable[..., float]:
        """The formula as a function of plain floats, by keyword, each in its symbol's unit (SI-coherent: B,
        s, FLOP, 1/s, ...), returning the plain float in the target's unit: the package's internal path,
        whose inputs were checked where they entered. Each input is still refused if zero or less (unless
        the symbol allows zero) or not finite, and the result if not finite, with the messages of a call
        with quantities. Generated once from :attr:`inputs` around :attr:`numeric`.

        Examples
        --------
        >>> FORMULAS["kv_bytes_per_token"].value(layers=80, kv_heads=8, head_dim=128, kv_bytes=2.0)
        327680.0
        """
        names = [s.name for s in self.inputs]
        lines = [f"def value(*, {', '.join(names)}):"]
        for s in self.inputs:
            low = "0.0 <=" if s.allow_zero else "0.0 <"
            lines += [
                f"    if type({s.name}) is bool or not ({low} {s.name} < _INF):",
                f"        _refuse({s.name!r}, {s.name})",
                f"    {s.name} = float({s.name})",
            ]
        args = ", ".join(names)
        lines += [
            "    try:",
            f"        result = _numeric({args})",
            "        finite = _isfinite(result)",
            "    except (OverflowError, ZeroDivisionError, ValueError):",
            "        finite = False",
            "    if not finite:",
            f"        _not_finite(({args},))",
            "    return result",
        ]
        scope = {
            "_INF": math.inf,
            "_isfinite": math.isfinite,
            "_numeric": self.numeric,
            "_refuse": _refuse,
            "_not_finite": self._not_finite,
        }
        exec("\n".join(lines), scope)  # the code is built here from the symbols' names alone
        fn = scope["value"]
        fn.__doc__ = f"{self.name} by value: plain floats in the inputs' units, a plain float in {self.unit or '1'}."
        return fn

    def _not_finite(self, args: tuple[float, ...]) -> None:
        given = ", ".join(f"{s.name}={a:.3g}" for s, a in zip(self.inputs, args, strict=True))
        raise InputError(
            f"{self.name} ({self.meaning}) has no finite value for {given}: check the inputs for a value "
            "far too small or too large."
        )

    def __call__(self, **values: Any) -> pint.Quantity:
        """Evaluate with quantities (or plain numbers for counts); returns a quantity."""
        names, inputs, unit = self._fast
        if len(values) != len(names) or not names.issuperset(values):
            names_ = [s.name for s in inputs]
            missing = [n for n in names_ if n not in values]
            extra = [n for n in values if n not in names_]
            raise InputError(
                f"{self.name} takes {', '.join(names_)}; missing {missing or 'none'}, unexpected {extra or 'none'}."
            )
        args = [_plain(values[s.name], s) for s in inputs]
        try:
            result = self.numeric(*args)
            finite = math.isfinite(result)
        except (OverflowError, ZeroDivisionError, ValueError):
            finite = False
        if not finite:  # inputs at the edge of what floats hold (a share of 1e-300, a count of 1e300)
            self._not_finite(tuple(args))
        return quantity(result, unit)


def _refuse(name: str, x: float) -> None:
    """What :func:`_plain` says of a plain number a formula cannot take (zero or less, not finite)."""
    sym = SYMBOLS[name]
    plain_number(x, f"{name} ({sym.meaning})", allow_zero=sym.allow_zero)


#: Public functions' parameter names that stand for a symbol of another name.
PARAMETER_SYMBOLS: dict[str, str] = {
    "context_tokens": "context",
    "tensor_parallel": "n_gpus",
    "requests": "request_rate",
    "price_per_hour": "price",
    "tokens_per_s": "throughput",
    "input_tokens_per_s": "token_rate",
}
#: Parameters that share a symbol's name but take more than its unit (a precision name such as "fp8").
_NOT_CHECKED = frozenset({"kv_bytes", "weight_bytes"})


def check_value(value: Any, sym: Symbol, name: str) -> Any:
    """``value`` checked against what ``sym`` says of it: its unit's dimension, a whole number, zero
    allowed or not, the bounds. A count comes back as a float, a quantity as itself."""
    if sym.unit:
        q = as_quantity(value, sym.unit, name)
        plain_number(q.magnitude, name, allow_zero=sym.allow_zero)
        return q
    return plain_number(
        value,
        name,
        integer=sym.integer,
        allow_zero=sym.allow_zero,
        at_most=sym.at_most,
        at_least=sym.at_least,
        why=sym.bound_note,
    )


_FLAG_ANNOTATIONS = frozenset({"bool", "bool | None", "Optional[bool]"})


def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Check a public function's arguments by their names: a parameter named like a symbol of
    :data:`SYMBOLS` (or mapped to one in :data:`PARAMETER_SYMBOLS`) is checked as :func:`check_value`
    says, and a parameter annotated ``bool`` is a flag (:func:`llmcourse.units.flag`: ``True`` or
    ``False``, numpy's ``bool_`` too; text such as ``"False"`` is refused). A ``None`` value, an
    optional input left out, is passed through, and so is the word ``"auto"`` for a parameter annotated
    ``... | Literal["auto"]`` (a search the function does itself).

    Examples
    --------
    >>> @checked
    ... def per_gpu(batch, n_gpus=1):
    ...     return batch / n_gpus
    >>> per_gpu(8, 2)
    4.0
    >>> per_gpu(8, n_gpus=1.5)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: n_gpus must be a whole number; got 1.5.
    """
    sig = inspect.signature(fn)
    plan = [
        (name, SYMBOLS[PARAMETER_SYMBOLS.get(name, name)])
        for name in sig.parameters
        if name not in _NOT_CHECKED and PARAMETER_SYMBOLS.get(name, name) in SYMBOLS
    ]
    flags = [n for n, p in sig.parameters.items() if p.annotation in _FLAG_ANNOTATIONS or p.annotation is bool]
    # a parameter annotated with Literal["auto"] takes the word "auto" (a search the function does) besides a number
    auto = frozenset(n for n, p in sig.parameters.items() if "Literal['auto']" in str(p.annotation).replace('"', "'"))
    # A fast binding for the usual signature (no positional-only parameters, no *args or **kwargs): the
    # arguments by name, as inspect's bind gives them; anything it would refuse goes to inspect for its message.
    params = sig.parameters
    simple = all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params.values())
    positional = tuple(n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD)
    required = frozenset(n for n, p in params.items() if p.default is p.empty)
    known = frozenset(params)

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        if not simple or len(args) > len(positional):
            return None
        values = dict(zip(positional, args, strict=False))
        for k, v in kwargs.items():
            if k in values or k not in known:
                return None
            values[k] = v
        return values if required.issubset(values) else None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = bind(args, kwargs)
        if values is None:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                for k in kwargs:
                    left, went = MOVED_KEYWORDS.get(k, ((), ""))
                    if k not in known and (left is None or fn.__name__ in left):
                        raise InputError(f"{fn.__name__}() takes no {k}= now: {went}.") from None
                raise InputError(f"{fn.__name__}: {exc}") from None
            values = bound.arguments
        for name, sym in plan:
            v = values.get(name)
            if v is not None and not (name in auto and type(v) is str and v == "auto"):
                values[name] = check_value(v, sym, name)
        for name in flags:
            v = values.get(name)
            if v is not None:
                values[name] = flag(v, name)
        if simple:
            return fn(**values)
        return fn(*bound.args, **bound.kwargs)

    return wrapper


_DIMENSIONLESS = parsed_unit("")[0]

#: Conversion factors from a quantity's units to a symbol's unit, worked out (and the dimension
#: checked) once per pair: pint's conversion was most of the time of every formula call.
_FACTORS: dict[tuple[Any, str], float] = {}


def _plain(value: Any, sym: Symbol) -> float:
    """The magnitude of ``value`` in ``sym``'s unit, refusing NaN, infinities and non-positive values."""
    if sym.unit:
        if type(value) is ureg.Quantity:  # this registry's quantities: the fast path
            key = (value._units, sym.unit)
            factor = _FACTORS.get(key)
            if factor is None:
                one = as_quantity(ureg.Quantity(1.0, value._units), sym.unit, sym.name)  # checks the dimension
                factor = _FACTORS[key] = float(one.to(parsed_unit(sym.unit)[0]).magnitude)
            value = value._magnitude * factor
        else:
            value = as_quantity(value, sym.unit, sym.name).to(parsed_unit(sym.unit)[0]).magnitude
    return plain_number(value, f"{sym.name} ({sym.meaning})", allow_zero=sym.allow_zero)


def scalar(name: str, *args: str) -> Callable[..., float]:
    """A formula as a plain-float function of the named inputs (in their declared units, SI), positional in the
    order given: lambdify's code, from the formulas' cache when current. The inputs must be the formula's own.

    Examples
    --------
    >>> f = scalar("throughput", "batch", "step_time")
    >>> f(64, 0.032)
    2000.0
    """
    f = FORMULAS[name]
    names = sorted(x.name for x in f.inputs)
    if names != sorted(args):
        raise ValueError(f"{name} takes {', '.join(names)}; got {', '.join(args)}.")
    return f.positional(*args)


def si(value: Any, name: str) -> float:
    """``value`` (a quantity, or a plain number for a count) as the plain float a formula computes with:
    its magnitude in the unit of the symbol ``name`` (checked as a formula's input is).

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> si(Q_(3.35, "TB/s"), "bandwidth")
    3350000000000.0
    """
    return _plain(value, SYMBOLS[name])


#: What the code ``lambdify(..., modules=["math"])`` prints may name: the math module's names and the builtins.
LAMBDIFY_SCOPE: dict[str, Any] = {**vars(math), "__builtins__": builtins}


def digest(*parts: Any) -> str:
    """A digest of SymPy expressions (and plain values) by their exact form, :func:`exact_repr`: the key of a
    cached result."""
    return hashlib.sha256(exact_repr(parts).encode()).hexdigest()[:20]


#: exact_repr of each SymPy node written so far (the formulas share their subexpressions; the digests of the
#: cache's keys write each many times). A Float is written each time: Floats of other precisions compare equal.
_EXACT: dict[sp.Basic, str] = {}
_EXACT_TYPE: dict[sp.Basic, type] = {}  # and its class: a node equal to another of another class is written anew


@functools.cache
def srepr_scope() -> dict[str, Any]:
    """The names ``srepr`` writes, to read back what :func:`exact_repr` writes: SymPy's own, and the pairs of a
    ``Piecewise``."""
    return {**vars(sp), "ExprCondPair": sp.functions.elementary.piecewise.ExprCondPair}


def exact_repr(value: Any) -> str:
    """``value`` (a SymPy expression, or a tuple or list of them) as the code that rebuilds it as it stands:
    each node's class applied to its arguments in the order the node holds them (``srepr`` writes a product's
    factors in print order), the atoms by ``srepr``. Read back by :func:`derived` with SymPy's evaluation off.

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> exact_repr(x / 2)
    "Mul(Rational(1, 2), Symbol('x'))"
    """
    if isinstance(value, list):
        return f"[{', '.join(exact_repr(v) for v in value)}]"
    if isinstance(value, tuple):
        return f"({''.join(exact_repr(v) + ', ' for v in value)})"
    if not isinstance(value, sp.Basic):
        return repr(value)
    text = _EXACT.get(value)
    if text is None or type(value) is not _EXACT_TYPE[value]:
        if not value.args:
            text = sp.srepr(value)
        else:
            text = f"{type(value).__name__}({', '.join(exact_repr(a) for a in value.args)})"
        if not isinstance(value, sp.Float):
            _EXACT[value], _EXACT_TYPE[value] = text, type(value)
    return text


#: Every derivation :func:`derived` was asked for: key -> (digest of its inputs, the function that works it out).
DERIVATIONS: dict[str, tuple[str, Callable[[], Any]]] = {}


def derived(key: str, inputs: tuple[Any, ...], derive: Callable[[], Any]) -> Any:
    """What ``derive()`` works out with SymPy (an expression, or a tuple of them) from ``inputs`` (the
    expressions and symbols it starts from): read from :mod:`llmcourse.formulas.cache` when the cache
    was generated from the same inputs, else worked out now. The derivation stays the source of truth:
    the cache is generated from it (``make formulas-cache``) and ``tests/test_formulas_cache.py`` checks
    that every cached result is what ``derive()`` returns now.

    Examples
    --------
    >>> x = sp.Symbol("x", positive=True)
    >>> derived("example_square_root", (x,), lambda: sp.solve(x**2 - 2, x)[0])
    sqrt(2)
    """
    inputs_digest = digest(*inputs)
    DERIVATIONS[key] = (inputs_digest, derive)
    cached = cache.DERIVED.get(key) if USE_CACHE else None
    if cached is not None and cached[0] == inputs_digest:
        return _rebuilt(key, cached[1])
    return derive()


#: The cached results rebuilt so far: key -> (the text it was rebuilt from, the expression).
_REBUILT: dict[str, tuple[str, Any]] = {}


def _rebuilt(key: str, text: str) -> Any:
    """SymPy's result ``text`` (:func:`exact_repr`'s) rebuilt as it stands, with SymPy's evaluation off (checked by
    the generator). Every cached result is rebuilt at the first one asked for: each switch of SymPy's evaluation
    clears SymPy's cache, which twenty switches, one a derivation, made most of the time of reading them."""
    if _REBUILT.get(key, ("",))[0] != text:
        with sp.evaluate(False):
            for k, (_, t) in cache.DERIVED.items():
                if k not in _REBUILT:
                    _REBUILT[k] = (t, eval(t, srepr_scope()))
            if _REBUILT[key][0] != text:
                _REBUILT[key] = (text, eval(text, srepr_scope()))
    return _REBUILT[key][1]


def built(key: str, build: Callable[[], Any]) -> Any:
    """The expression ``build()`` makes with SymPy (a right-hand side whose making queries the assumptions of
    its symbols: a root, a power with a symbolic exponent, a ``Piecewise``, a substitution), read from
    :mod:`llmcourse.formulas.cache` while ``build``'s code and the values of the names it reads are the ones
    the cache was generated from, else made now: a :func:`derived` whose inputs are read off ``build`` itself,
    so that an edit of the expression is a new digest, never a stale result. A name whose value is not a SymPy
    expression, a plain value or a module (a table, a function) leaves the result uncached.

    Examples
    --------
    >>> x = sp.Symbol("x", positive=True)
    >>> built("example_root", lambda: sp.sqrt(4 * x**2))
    2*x
    """
    inputs = _read_by(build)
    return build() if inputs is None else derived(key, inputs, build)


_PLAIN = (int, float, str, bool, type(None))


def _read_by(fn: Callable[[], Any]) -> tuple[Any, ...] | None:
    """What ``fn``'s result follows from: its source text (the lines that hold it, so that an edit of the
    expression is a new digest) and the value of each global or enclosing name its code names, by name (the
    same on every Python version, unlike its bytecode); ``None`` if its source cannot be read or a value is
    not one a digest can hold."""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ()), strict=True))
    names: set[str] = set(cells)
    todo = [fn.__code__]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        todo += [k for k in c.co_consts if isinstance(k, type(c))]
    parts: list[Any] = [source]
    plain_values = (sp.Basic, *_PLAIN)
    for name in sorted(names):
        if name in cells:
            value = cells[name]
        elif name in fn.__globals__:
            value = fn.__globals__[name]
        else:  # an attribute's name (sp.sqrt's "sqrt") or a builtin: the source says which
            continue
        if isinstance(value, types.ModuleType | types.BuiltinFunctionType):
            parts.append((name, getattr(value, "__name__", name)))
        elif callable(value) and getattr(value, "__module__", "").startswith("sympy."):  # sympy's sqrt, Max
            parts.append((name, f"{value.__module__}.{value.__qualname__}"))
        elif isinstance(value, plain_values) or (
            isinstance(value, tuple) and all(isinstance(v, plain_values) for v in value)
        ):
            parts.append((name, value))
        else:
            return None
    return tuple(parts)


def _kept(name: str) -> Callable[..., sp.Expr]:
    """SymPy's function ``name`` (``ceiling``, ``floor``, ``Max``, ``Min``), whose result is read from the cache
    (:func:`derived`): SymPy evaluates each of these by querying the assumptions of its arguments, which
    took most of the time of defining the formulas."""

    def apply(*args: Any) -> sp.Expr:
        func = getattr(sp, name)
        args = tuple(sp.sympify(a) for a in args)
        return derived(f"{name}:{digest(*args)[:12]}", args, lambda: func(*args))

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"``sympy.{name}``, its result kept in :mod:`llmcourse.formulas.cache`."
    return apply


ceiling, floor, Max, Min = (_kept(f) for f in ("ceiling", "floor", "Max", "Min"))


class _Table(Mapping[str, Formula]):
    def __init__(self) -> None:
        self._f: dict[str, Formula] = {}

    def add(self, f: Formula) -> Formula:
        if f.name in self._f:
            raise ValueError(f"formula {f.name!r} defined twice")
        self._f[f.name] = f
        return f

    def __getitem__(self, k: str) -> Formula:
        if isinstance(k, str) and k in self._f:
            return self._f[k]
        close = difflib.get_close_matches(k, list(self._f), n=3, cutoff=0.5) if isinstance(k, str) else []
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise UnknownNameError(f"no formula named {k!r}.{hint} The formulas are listed by list(FORMULAS).")

    def __contains__(self, k: object) -> bool:  # Mapping's would look the name up, "did you mean" and all
        return isinstance(k, str) and k in self._f

    def __iter__(self) -> Iterator[str]:
        return iter(self._f)

    def __len__(self) -> int:
        return len(self._f)


FORMULAS = _Table()


def formula(name: str, target: str, expr: sp.Expr, meaning: str, chapter: str) -> Formula:
    """Define and register a formula (the topic modules call it; any module may add its own). While the deferred
    sections run (:func:`section`), the formula registered from the cache's table gets its expression (checked to
    be the one the table was made from: the same target, meaning, chapter and inputs)."""
    if _FILLING:
        f = FORMULAS._f.get(name)
        if f is not None and f._expr is None:
            inputs = {s.sym for s in f._inputs or ()}
            if (f.target, f.meaning, f.chapter) != (target, meaning, chapter) or inputs != expr.free_symbols:
                raise RuntimeError(f"formula {name!r} is not the one llmcourse/formulas/cache.py was made from")
            f._expr = expr
            return f
    return FORMULAS.add(Formula(name, target, expr, meaning, chapter))


def section(define: Callable[[], None]) -> Callable[[], None]:
    """A module's code that builds formulas' expressions with SymPy (``formula(...)`` calls and what they share,
    never a symbol: symbols are defined where the module's code runs, with :func:`symbol`): run now, or, while the
    cache's table is current (:data:`_LAZY`), the first time an expression is asked for, every deferred section
    then in the order they were defined (:func:`_fill`)."""
    if _LAZY:
        _PENDING.append(define)
    else:
        define()
    return define


def _fill() -> None:
    """Run the deferred sections: every formula registered from the cache's table gets its expression, and the
    names the sections define (``_t_mem``, ``EXPECTED_TOKENS_SUM``, ...) their values."""
    global _FILLING
    if _FILLING:
        raise RuntimeError("a formula's expression was asked for before the section that defines it ran")
    make_symbols()
    for define in _PENDING:
        if any(isinstance(v, _Later) for v in define.__globals__.values()):
            raise RuntimeError(f"module {define.__module__} must end with `defer(globals())`")
    _FILLING = True
    try:
        while _PENDING:
            _PENDING[0]()
            _PENDING.pop(0)
    finally:
        _FILLING = False


def deferred_getattr(namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` (PEP 562) for its symbols not made yet (:func:`later`: makes them) and the names its
    deferred sections define (runs them first); a name neither deferred nor named by a section of the module is
    missing at once (IPython's probes of a module run nothing)."""
    module = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if any(ns is namespace and n == name for ns, n, _ in _UNMADE):  # a symbol (:func:`later`)
            make_symbols()
            return namespace[name]
        if any(d.__module__ == module and name in d.__code__.co_names for d in _PENDING):
            _fill()
            if name in namespace:
                return namespace[name]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def register_cached() -> None:
    """While the cache is current (:data:`_LAZY`), register every formula from its table (name, target, meaning,
    chapter, inputs), in the order the sections define them, their expressions made on first use: called by
    :mod:`llmcourse.formulas` once every topic module is imported (each has defined its symbols by then)."""
    if not _LAZY:
        return
    for name, target, meaning, chapter, names in cache.TABLE:
        FORMULAS.add(
            Formula(
                name, target, None, meaning, chapter, _inputs=tuple(SYMBOLS[n] for n in names.split()), _cached=True
            )
        )
