"""Write :mod:`llmcourse.formulas.cache`, or check it, from the derivations in ``llmcourse/formulas/``.

    python scripts/build_formulas_cache.py           # (re)write llmcourse/formulas/cache.py (make formulas-cache)
    python scripts/build_formulas_cache.py --check   # list what is stale; exit 1 if anything is

The cache holds what SymPy works out when the package is imported, so that an import does not work it
out again: the result of every :func:`llmcourse.formulas.derived` derivation (``solve``, ``simplify``,
``summation``) as ``srepr`` text, and the code ``lambdify`` prints for every formula's numeric function
(the body of ``def _lambdifygenerated(...)``, the inputs named ``_a0, _a1, ...`` in the order of
:attr:`~llmcourse.formulas.Formula.inputs`). Each entry is keyed by a digest of the expressions it was
worked out from; an entry whose digest differs from the expressions of the package now is not used.

Run it in a fresh interpreter after changing a formula or a derivation: the derivations are run here
again (whatever the cache holds), so the file follows from the code alone; it reads and writes the package of
the checkout it sits in (put first on ``sys.path``). ``lambdify`` names the inputs whose names are not Python
identifiers ``Dummy_<n>`` by a process-wide counter, and sorts the factors of a
product by those names: the counter is set to the same value before each formula here, so the printed
code does not depend on what ran before (the order is that of a counter with as many digits for every input,
the usual case of a plain ``lambdify`` in a fresh interpreter).
"""

from __future__ import annotations

import builtins
import inspect
import io
import os
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import sympy as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever the environment has installed

import llmcourse  # noqa: E402,F401  (registers every formula and derivation)
from llmcourse.formulas import cache, core  # noqa: E402
from llmcourse.formulas.core import (  # noqa: E402
    DERIVATIONS,
    FORMULAS,
    LAMBDIFY_SCOPE,
    Formula,
    digest,
    exact_repr,
    srepr_scope,
)

__all__ = ["build", "main", "stale"]

PATH = Path(cache.__file__)
_DUMMY_BASE = 100  # the Dummy counter before each lambdify: names Dummy_101, Dummy_102, ... (the same width)


def _derived() -> dict[str, tuple[str, str]]:
    """key -> (digest of the inputs, srepr of the result worked out now), for every registered derivation."""
    out = {}
    for key, (key_digest, derive) in sorted(DERIVATIONS.items()):
        result = derive()
        text = exact_repr(result)
        with sp.evaluate(False):  # as core.derived rebuilds it
            rebuilt = eval(text, srepr_scope())
        if (
            exact_repr(rebuilt) != text or sp.srepr(rebuilt) != sp.srepr(result) or rebuilt != result
        ):  # pragma: no cover
            raise RuntimeError(f"the srepr of derivation {key!r} does not rebuild the same expression")
        out[key] = (key_digest, text)
    return out


def _body(f: Formula) -> str:
    """The expression ``lambdify`` prints for ``f`` (inputs in :attr:`Formula.inputs` order), inputs renamed
    ``_a0, _a1, ...``; checked to name only what the runtime scope holds, as lambdify's namespace does."""
    syms = [s.sym for s in f.inputs]
    sp.Dummy._count = _DUMMY_BASE
    fn = sp.lambdify(syms, f.expr, modules=["math"])
    lines = inspect.getsource(fn).rstrip("\n").split("\n")
    if len(lines) != 2 or not lines[0].startswith("def _lambdifygenerated(") or not lines[1].startswith("    return "):
        raise RuntimeError(f"unexpected lambdify code for {f.name}: {lines}")  # pragma: no cover
    params = [p.strip() for p in lines[0][len("def _lambdifygenerated(") : -len("):")].split(",") if p.strip()]
    if len(params) != len(syms):  # pragma: no cover
        raise RuntimeError(f"unexpected lambdify arguments for {f.name}: {params}")
    rename = {p: f"_a{i}" for i, p in enumerate(params)}
    text = lines[1][len("    return ") :]
    body, done = [], 0
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):  # one line: columns are offsets
        if tok.type == tokenize.NAME and tok.string in rename:
            body += [text[done : tok.start[1]], rename[tok.string]]
            done = tok.end[1]
    body.append(text[done:])
    for name in fn.__code__.co_names:  # every global the code names is the object lambdify's namespace gives
        theirs = fn.__globals__.get(name, getattr(builtins, name, None))
        ours = LAMBDIFY_SCOPE.get(name, getattr(builtins, name, None))
        if theirs is None or theirs is not ours:  # pragma: no cover
            raise RuntimeError(f"lambdify's code for {f.name} names {name!r}, which the runtime scope lacks")
    return "".join(body)


def _numeric() -> dict[str, tuple[str, str]]:
    """name -> (digest of the expression and input names, lambdify's code), for every formula."""
    return {name: (digest(f.expr, tuple(s.name for s in f.inputs)), _body(f)) for name, f in sorted(FORMULAS.items())}


def _table() -> list[tuple[str, str, str, str, str]]:
    """(name, target, meaning, chapter, input names joined by spaces) of every formula, in the order they are
    registered."""
    return [(f.name, f.target, f.meaning, f.chapter, " ".join(s.name for s in f.inputs)) for f in FORMULAS.values()]


def _table_entries(table: list[tuple[str, str, str, str, str]]) -> list[str]:
    out = []
    for row in table:
        parts = [_q(x) for x in row]
        one = f"    ({', '.join(parts)}),"
        out += [one] if len(one) <= 120 else ["    (", *(f"        {p}," for p in parts), "    ),"]
    return out


def _source(
    derived: dict[str, tuple[str, str]],
    numeric: dict[str, tuple[str, str]],
    table: list[tuple[str, str, str, str, str]],
) -> str:
    lines = [
        '"""What SymPy works out for the formulas, generated by ``python scripts/build_formulas_cache.py``',
        "(``make formulas-cache``) from the derivations in ``llmcourse/formulas/``: do not edit.",
        "",
        "DERIVED: derivation key -> (digest of its inputs, its result as ``formulas.core.exact_repr`` writes it).",
        "NUMERIC: formula name -> (digest of its expression and inputs, the expression lambdify prints, inputs",
        "``_a0, _a1, ...``).",
        "SOURCES: digest of SymPy's version and the source of the modules that define the formulas",
        "(``formulas.core.DEFINING``); while it is theirs now, the formulas are registered from TABLE: (name, target,",
        "meaning, chapter, input names joined by spaces), in the order of registration, their expressions made",
        "on first use.",
        f"Generated with SymPy {sp.__version__}.",
        '"""',
        "",
        "DERIVED: dict[str, tuple[str, str]] = {",
        *_entries(derived),
        "}",
        "NUMERIC: dict[str, tuple[str, str]] = {",
        *_entries(numeric),
        "}",
        f"SOURCES = {_q(core.SOURCES or '')}",
        "TABLE: tuple[tuple[str, str, str, str, str], ...] = (",
        *_table_entries(table),
        ")",
        "",
    ]
    return "\n".join(lines)


def _q(text: str) -> str:
    """``text`` as a string literal the way ``ruff format`` writes it (double quotes), so the file is format-clean."""
    r = repr(text)
    if r.startswith('"'):
        return r
    if "'" in text or '"' in text:  # pragma: no cover - srepr writes single quotes only
        raise RuntimeError(f"cannot quote {text!r} as ruff format would")
    return f'"{r[1:-1]}"'


def _entries(table: dict[str, tuple[str, str]]) -> list[str]:
    out = []
    for key, (key_digest, text) in table.items():
        one = f"    {_q(key)}: ({_q(key_digest)}, {_q(text)}),"
        out += (
            [one]
            if len(one) <= 120
            else [f"    {_q(key)}: (", f"        {_q(key_digest)},", f"        {_q(text)},", "    ),"]
        )
    return out


def build() -> str:
    """The text of :mod:`llmcourse.formulas.cache` as the derivations and formulas give it now (in a Python
    started with ``LLMCOURSE_FORMULAS_CACHE=0``)."""
    if core.USE_CACHE:  # pragma: no cover
        raise RuntimeError("run with LLMCOURSE_FORMULAS_CACHE=0: python scripts/build_formulas_cache.py")
    if core.SOURCES is None:  # pragma: no cover
        raise RuntimeError("the sources of the modules that define the formulas cannot be read")
    return _source(_derived(), _numeric(), _table())


def stale() -> list[str]:
    """What the committed cache holds that differs from what the derivations give now (empty when current);
    in a Python started with ``LLMCOURSE_FORMULAS_CACHE=0`` (:func:`main` starts one)."""
    if core.USE_CACHE:  # pragma: no cover - the derivations would start from cached results
        raise RuntimeError("run with LLMCOURSE_FORMULAS_CACHE=0: python scripts/build_formulas_cache.py --check")
    want = {"DERIVED": _derived(), "NUMERIC": _numeric()}
    have: dict[str, dict[str, Any]] = {"DERIVED": cache.DERIVED, "NUMERIC": cache.NUMERIC}
    out = []
    for table, entries in want.items():
        for key in sorted(set(entries) | set(have[table])):
            if key not in have[table]:
                out.append(f"{table}[{key!r}] missing")
            elif key not in entries:
                out.append(f"{table}[{key!r}] is no longer derived")
            elif have[table][key][0] != entries[key][0]:
                out.append(f"{table}[{key!r}] was generated from other expressions (digest)")
            elif have[table][key][1] != entries[key][1]:
                out.append(f"{table}[{key!r}] differs from what the derivation gives now")
    if getattr(cache, "SOURCES", None) != core.SOURCES:
        out.append("SOURCES: the modules that define the formulas (formulas.core.DEFINING) changed")
    if [tuple(t) for t in getattr(cache, "TABLE", ())] != _table():
        out.append("TABLE differs from the formulas registered now")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if core.USE_CACHE:  # work everything out from the code alone: again, in a Python that reads no cache
        env = {**os.environ, "LLMCOURSE_FORMULAS_CACHE": "0"}
        return subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], env=env).returncode
    if args == ["--check"]:
        problems = stale()
        print("\n".join(problems) if problems else f"{PATH.name} is current")
        return 1 if problems else 0
    if args:
        print(__doc__)
        return 2
    PATH.write_text(build(), encoding="utf-8")
    print(f"wrote {PATH} ({len(DERIVATIONS)} derivations, {len(FORMULAS)} formulas)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
