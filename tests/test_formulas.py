"""Formulas: dimensions agree, numeric functions equal their SymPy expressions, inputs are checked."""

import math

import pint
import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS, SYMBOLS, dimension_of
from llmcourse.units import Q_


@pytest.mark.parametrize("name", list(FORMULAS))
def test_every_formula_is_dimensionally_consistent(name):
    """The expression's dimension, from its symbols' units, is the target's."""
    f = FORMULAS[name]
    assert dimension_of(f.expr) == Q_(1, f.unit).dimensionality


def test_dimension_check_catches_a_mixed_sum():
    """Adding bytes to seconds is caught."""
    bad = SYMBOLS["weights"].sym + SYMBOLS["step_time"].sym
    with pytest.raises(pint.DimensionalityError):
        dimension_of(bad)


@pytest.mark.parametrize("name", list(FORMULAS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_numeric_function_equals_the_expression(name, data):
    """lambdify's function and SymPy's own evaluation agree on random positive inputs."""
    f = FORMULAS[name]
    values = {}
    for s in f.inputs:
        if s.integer:
            values[s] = data.draw(st.integers(1, 500))
        else:
            values[s] = data.draw(st.floats(0.01, s.at_most or 1e4, allow_nan=False, allow_infinity=False))
    if name.startswith("moe"):  # k <= E
        values[SYMBOLS["experts_per_token"]] = min(values[SYMBOLS["experts_per_token"]], values[SYMBOLS["experts"]])
    subs = {s.sym: sp.Float(v) if not s.integer else v for s, v in values.items()}
    # SymPy's own evaluation at the point: every symbol replaced by its number at once (xreplace: the same tree as
    # subs() with symbols for keys, without subs()'s matching, which took ~0.2 s an evaluation of the larger formulas)
    exact = f.expr.xreplace(subs).evalf()
    assume(exact.is_finite and exact.is_real)  # a pole (e.g. a crossover that does not exist) is not compared
    for step in f.expr.atoms(sp.ceiling, sp.floor):
        # at a step's edge, rounding decides the side (ceil(1.1 / 0.01) is 111 in floats, 110 in SymPy's
        # decimal Floats): such a point tests float rounding, not the formula, and is not compared
        inner = float(step.args[0].xreplace(subs).evalf())
        assume(abs(inner - round(inner)) > 1e-9 * max(1.0, abs(inner)))
    symbolic = float(exact)
    numeric = f.numeric(*[values[s] for s in f.inputs])
    # near a pole (a crossover's denominator, the difference of two nearly equal terms, close to zero) the value
    # hangs on the last bits of the inputs: floats and SymPy's decimal Floats then differ, even in sign, and such a
    # point tests float rounding, not the formula. It is not compared: one input moved by a part in 10^7 moves the
    # value by more than a part in 10^3. Judged on the SymPy expression, not on the function under test (a numeric
    # function made steep by a bug must not exempt itself).
    for s in f.inputs:
        if not s.integer:
            moved = f.expr.xreplace({**subs, s.sym: sp.Float(values[s] * (1 - 1e-7))}).evalf()
            assume(moved.is_finite and moved.is_real)
            assume(abs(float(moved) - symbolic) <= 1e-3 * max(abs(symbolic), 1e-12))
    assert numeric == pytest.approx(symbolic, rel=1e-9, abs=1e-12)


def test_latex_names_the_target():
    """Displayed formulas read target = expression."""
    assert FORMULAS["kv_bytes_per_token"].latex().startswith(r"\kappa = 2")


def test_call_checks_dimensions_and_signs():
    """Bad inputs get an InputError that names the symbol."""
    f = FORMULAS["weight_bytes"]
    assert f(params=8e9, weight_bytes_per_param=Q_(2, "B")) == Q_(16e9, "B")
    with pytest.raises(InputError, match="weight_bytes_per_param needs a unit"):
        f(params=8e9, weight_bytes_per_param=2)
    with pytest.raises(InputError, match=r"params .* greater than zero"):
        f(params=-1, weight_bytes_per_param=Q_(2, "B"))
    with pytest.raises(InputError, match="finite"):
        f(params=math.nan, weight_bytes_per_param=Q_(2, "B"))
    with pytest.raises(InputError, match="missing"):
        f(params=1)


def test_every_symbol_has_a_unique_latex_name_and_meaning():
    """Symbols are distinct (SymPy would merge two with the same name)."""
    latex = [s.latex for s in SYMBOLS.values()]
    assert len(latex) == len(set(latex))
    assert all(s.meaning for s in SYMBOLS.values())
