"""The formulas' cache (llmcourse/formulas/cache.py): generated from the derivations, read only while current."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

import llmcourse
from llmcourse.formulas import FORMULAS, cache, core

ROOT = Path(llmcourse.__file__).resolve().parents[1]


def test_cache_is_what_the_derivations_give():
    """Every cached SymPy result and lambdify code is what the package works out now (`make formulas-cache`)."""
    env = {**os.environ, "LLMCOURSE_FORMULAS_CACHE": "0", "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    out = subprocess.run(
        [sys.executable, "scripts/build_formulas_cache.py", "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, f"stale: run `make formulas-cache`\n{out.stdout}{out.stderr}"


def test_import_read_every_derivation_from_the_cache():
    """Each derivation the formulas' sections asked for was cached from the same inputs (nothing solved again)."""
    FORMULAS["crossover_batch"].expr  # noqa: B018 (runs the sections, if the import deferred them)
    asked = {k: d for k, (d, _) in core.DERIVATIONS.items() if k in cache.DERIVED}
    assert len(asked) == len(cache.DERIVED) >= 7
    assert all(cache.DERIVED[k][0] == d for k, d in asked.items())


def test_every_formula_has_its_code():
    """Every registered formula's numeric function comes from the cache, with the digest of its expression."""
    for name, f in FORMULAS.items():
        digest = core.digest(f.expr, tuple(s.name for s in f.inputs))
        assert cache.NUMERIC[name][0] == digest, name


def test_a_current_entry_is_read(monkeypatch):
    """An entry whose digest matches the inputs is what derived() returns (the derivation does not run)."""
    x = sp.Symbol("x", positive=True)
    monkeypatch.setattr(core, "DERIVATIONS", {})
    monkeypatch.setitem(cache.DERIVED, "test_root", (core.digest(x), "Integer(7)"))
    assert core.derived("test_root", (x,), lambda: pytest.fail("derived again")) == 7


def test_a_stale_entry_is_worked_out_again(monkeypatch):
    """An entry from other inputs is not used: the derivation runs."""
    x = sp.Symbol("x", positive=True)
    monkeypatch.setattr(core, "DERIVATIONS", {})
    monkeypatch.setitem(cache.DERIVED, "test_root", ("another digest", "Integer(7)"))
    assert core.derived("test_root", (x,), lambda: sp.sqrt(x**2)) == x


def test_exact_repr_rebuilds_the_same_expression():
    """exact_repr, read back with evaluation off, gives the expression as it stands (srepr reorders a product)."""
    x, y = sp.symbols("x y", positive=True)
    e = y / x + sp.Max(x, 2 * y)
    with sp.evaluate(False):
        back = eval(core.exact_repr(e), core.srepr_scope())
    assert back == e
    assert back.args == e.args


def test_positional_takes_the_order_named():
    """A formula's plain-float function in another order of its inputs: 64 sequences / 20 ms = 3,200 per s."""
    f = FORMULAS["throughput"]
    assert f.positional("batch", "step_time")(64, 0.02) == pytest.approx(3200)
    assert f.positional("step_time", "batch")(0.02, 64) == pytest.approx(3200)
    with pytest.raises(ValueError, match="takes batch, step_time"):
        f.positional("batch")


def test_import_builds_no_expression():
    """While the cache is current, `import llmcourse` and a first plan() register the formulas from the cache's
    table and build no SymPy expression: SymPy's first evaluated sum (which imports sympy.tensor) never runs;
    the first expression asked for runs every section, and each formula then has the expression and inputs the
    table named."""
    code = (
        "import sys\n"
        "import llmcourse\n"
        "from llmcourse.formulas import core\n"
        "from llmcourse.units import Q_\n"
        "llmcourse.plan('Llama-3.1-8B', 'H100 SXM', llmcourse.Brief(10, 2_000, 300, ttft_target=Q_(1, 's'), tpot_target=Q_(50, 'ms')))\n"
        "print(core._LAZY, len(core._PENDING) > 0, 'sympy.tensor.tensor' in sys.modules)\n"
        "table = {f.name: (f.target, f.meaning, [s.name for s in f.inputs]) for f in core.FORMULAS.values()}\n"
        "exprs = {name: f.expr for name, f in core.FORMULAS.items()}\n"
        "print(len(core._PENDING), all(e is not None for e in exprs.values()))\n"
        "print(table == {f.name: (f.target, f.meaning, [s.name for s in f.inputs]) for f in core.FORMULAS.values()})\n"
        "print(core.exact_repr(exprs['crossover_batch']))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    env.pop("LLMCOURSE_FORMULAS_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == ["True True False", "0 True", "True"]
    assert lines[3] == core.exact_repr(FORMULAS["crossover_batch"].expr)  # the same expression as made here
