"""Reading the registry: the physical dimension of a formula's expression (the check every formula passes) and the
notation table of every symbol (the book's notation page)."""

from __future__ import annotations

import pint

from llmcourse.formulas.core import SYMBOLS, sp
from llmcourse.units import Q_

__all__ = ["dimension_of", "notation_table"]


def dimension_of(expr: sp.Expr) -> pint.util.UnitsContainer:
    """The physical dimension of ``expr`` from its symbols' units; raises if terms disagree.

    Sums, ``Max``, comparisons and the branches of a ``Piecewise`` need all their terms in one
    dimension; ``floor`` and ``ceiling`` keep their argument's; exponents, ``exp`` and ``lgamma`` take plain numbers.

    Examples
    --------
    >>> from llmcourse.formulas import FORMULAS
    >>> dimension_of(FORMULAS["decode_step_time"].expr)
    <UnitsContainer({'[time]': 1.0})>
    """
    by_sym = {s.sym: s for s in SYMBOLS.values()}
    none = Q_(1).dimensionality
    if expr in by_sym:
        return Q_(1, by_sym[expr].unit).dimensionality
    if expr.is_number:
        return none
    if isinstance(expr, sp.Mul):
        out = none
        for a in expr.args:
            out = out * dimension_of(a)
        return out
    if isinstance(expr, sp.Pow):
        base, exp = expr.args
        if dimension_of(exp) != none or not exp.is_number:
            if dimension_of(base) != none:
                raise pint.DimensionalityError(
                    str(base), str(exp), extra_msg=": a dimensioned base needs a numeric exponent"
                )
            return dimension_of(base)
        return dimension_of(base) ** float(exp)
    if isinstance(expr, sp.Add | sp.Max | sp.Min):
        dims = {dimension_of(a) for a in expr.args}
        if len(dims) > 1:
            raise pint.DimensionalityError(*[str(d) for d in list(dims)[:2]], extra_msg=f" in {expr}")
        return dims.pop()
    if isinstance(expr, sp.floor | sp.ceiling):
        return dimension_of(expr.args[0])
    if isinstance(expr, sp.Piecewise):  # every branch in one dimension; each condition within itself
        for _branch, cond in expr.args:
            if isinstance(cond, sp.core.relational.Relational):
                dimension_of(cond.lhs - cond.rhs)
        dims = {dimension_of(branch) for branch, _ in expr.args}
        if len(dims) > 1:
            raise pint.DimensionalityError(*[str(d) for d in list(dims)[:2]], extra_msg=f" in {expr}")
        return dims.pop()
    if isinstance(expr, sp.exp) or (isinstance(expr, sp.Function) and type(expr).__name__ == "lgamma"):
        # exp and ln Gamma take and give plain numbers (the dispatch formula's binomials)
        for a in expr.args:
            if dimension_of(a) != none:
                raise pint.DimensionalityError(str(a), "dimensionless", extra_msg=f" in {expr}")
        return none
    raise TypeError(f"dimension_of cannot handle {type(expr).__name__}")


def notation_table() -> list[tuple[str, str, str, str]]:
    """Rows of (symbol in LaTeX, Python name, unit, meaning) for the book's notation tables."""
    return [(f"${s.latex}$", s.name, s.unit or "-", s.meaning) for s in SYMBOLS.values()]
