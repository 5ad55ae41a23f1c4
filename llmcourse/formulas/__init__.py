"""The course's formulas, each written once as a SymPy expression.

Each :class:`Formula` holds a SymPy expression over named symbols, the unit of every
input and of the result. Its numeric function is derived from the expression once,
with :func:`sympy.lambdify`, the first time it is used; nothing else in the package
re-types the arithmetic. Calling a formula with quantities checks each input's
dimension and returns a quantity.

The package: :mod:`~llmcourse.formulas.core` is the framework (:class:`Symbol`, :class:`Formula`, the registry
:data:`SYMBOLS` and :data:`FORMULAS`, :func:`checked`, :func:`si`, SymPy on first use, the cache's reader) and
imports no topic module; the topic modules define the symbols and formulas, each importing the framework (and
the topic modules whose symbols it takes by name): :mod:`~llmcourse.formulas.serving` (one replica and its
fleet: tokens, weights, the KV cache, decode, prefill, mixtures of experts, the roofline, fleets and sizing,
queueing), :mod:`~llmcourse.formulas.bill`, :mod:`~llmcourse.formulas.parallel`,
:mod:`~llmcourse.formulas.disagg`, :mod:`~llmcourse.formulas.speculative` and
:mod:`~llmcourse.formulas.validation`. This module imports them all, so that ``import llmcourse.formulas``
registers every formula whoever imports what first, and gives the framework's names (and a symbol by its name:
``from llmcourse.formulas import batch``).

What SymPy works out (``solve``, ``simplify``, ``summation``, ``ceiling``, ``Max``; the right-hand sides
made with :func:`built`; the code ``lambdify`` prints) is kept in :mod:`llmcourse.formulas.cache`, generated from
the derivations by ``make formulas-cache`` (``scripts/build_formulas_cache.py``): :func:`derived` and
:attr:`Formula.numeric` read it when the expressions it was generated from are the ones defined now (a digest of
them), and work it out again otherwise; ``tests/test_formulas_cache.py`` fails while it is stale.

The expressions themselves are built in *sections* (``core.section``: a function holding a module's
``formula(...)`` calls, its symbols defined outside it). While the cache was generated from the source of
the modules that define formulas as it stands (:data:`~llmcourse.formulas.core.DEFINING`), an import registers
every formula from the cache's table (name, target, meaning, chapter, inputs; its numeric code) and runs the
sections only when an expression is first asked for (:attr:`Formula.expr`, :meth:`Formula.latex`):
``import llmcourse`` and the planner do no SymPy arithmetic. Any other source runs the sections at import, as
written.

Nor do they import SymPy (half the time of the import otherwise, and of the live book's start): ``sp`` here is
SymPy imported on the first use of one of its names, a symbol's SymPy object (:attr:`Symbol.sym`) is made when
first asked for, and a defining module's names that stand for symbols (``batch = symbol(...)``; values made of them,
``later``, ``symbols``) are taken out of its namespace by ``defer(globals())``, its last line, until
something symbolic is first needed: the sections, or the name itself (``from llmcourse.formulas import batch``
makes them then, through the module's ``__getattr__``). Everything symbolic gives the objects an eager import
would have; the numeric paths (the formulas' calls, ``@checked``, :func:`si`) read only a symbol's name, unit and
bounds.

The chapters display ``formula.latex()`` and call the planner, which composes these.

Examples
--------
>>> from llmcourse.formulas import FORMULAS
>>> from llmcourse.units import Q_
>>> f = FORMULAS["kv_bytes_per_token"]
>>> f.latex()
'\\\\kappa = 2 H_{kv} L b_{kv} d_{head}'
>>> f(layers=80, kv_heads=8, head_dim=128, kv_bytes=Q_(2, "B")).to("KiB")
<Quantity(320.0, 'kibibyte')>
"""

from __future__ import annotations

from typing import Any

# Each topic module imports the framework, and the topic modules whose symbols it takes by name, first: the
# symbols and formulas are registered in the same order whoever imports what first.
from llmcourse.formulas import bill, core, disagg, parallel, serving, speculative, validation  # noqa: F401
from llmcourse.formulas.core import (  # noqa: F401  (the framework's names, as llmcourse.formulas gave them)
    DEFINING,
    DERIVATIONS,
    FORMULAS,
    PARAMETER_SYMBOLS,
    SYMBOLS,
    Formula,
    Max,
    Min,
    Symbol,
    built,
    ceiling,
    check_value,
    checked,
    derived,
    exact_repr,
    floor,
    formula,
    scalar,
    si,
    sp,
)
from llmcourse.formulas.dimensions import dimension_of, notation_table

__all__ = [
    "FORMULAS",
    "PARAMETER_SYMBOLS",
    "SYMBOLS",
    "Formula",
    "Symbol",
    "built",
    "checked",
    "derived",
    "dimension_of",
    "formula",
    "notation_table",
    "scalar",
    "si",
]

core.register_cached()  # while the cache is current: every formula, from its table (the topic modules are in)


def __getattr__(name: str) -> Any:
    """A serving symbol by its name (``from llmcourse.formulas import batch``: made then, SymPy imported) or a name
    a serving section defines (:mod:`~llmcourse.formulas.serving`), else a name of the framework
    (:mod:`~llmcourse.formulas.core`: ``formulas._LAZY``), as the one module ``llmcourse.formulas`` gave them."""
    try:
        return getattr(serving, name)
    except AttributeError:
        pass
    try:
        return getattr(core, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
