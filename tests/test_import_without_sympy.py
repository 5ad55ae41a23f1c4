"""While the formulas' cache is current, the package's numeric paths never import SymPy: ``import llmcourse``, a plan,
and every calculator built and updated (the live book's Python then spends no time on it); anything symbolic imports
it on first use and gives the objects an eager import would have."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import llmcourse
from llmcourse.formulas import cache, core

ROOT = Path(llmcourse.__file__).resolve().parents[1]


def _run(code: str, *path: str) -> list[str]:
    """``code`` run in a fresh Python that reads the cache (``path`` first on its sys.path); its printed lines."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT), *sys.path])}
    env.pop("LLMCOURSE_FORMULAS_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_import_plan_and_calculators_do_not_import_sympy():
    """The README's plan, then every calculator built and each numeric control moved once: no SymPy. Then a symbol
    imported by name brings it in, the same object as the table's symbol, in every module that names it."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import llmcourse as lc\n"
        "from llmcourse.units import Q_\n"
        "lc.plan('Llama-3.1-8B', 'H100 SXM', lc.Brief(10, 2_000, 300, ttft_target=Q_(1, 's'), tpot_target=Q_(50, 'ms')))\n"
        "print('sympy' in sys.modules)\n"
        "import llmcourse.widgets as widgets\n"
        "built = 0\n"
        "for info in pkgutil.iter_modules(widgets.__path__):\n"
        "    module = importlib.import_module(f'llmcourse.widgets.{info.name}')\n"
        "    for name in getattr(module, '__all__', []):\n"
        "        if name.endswith('_calculator'):\n"
        "            calc = getattr(module, name)()\n"
        "            built += 1\n"
        "            for key, c in calc.controls.items():\n"
        "                if isinstance(c.value, int | float) and not isinstance(c.value, bool):\n"
        "                    calc.set(**{key: c.value})\n"
        "                    break\n"
        "print(built >= 15, 'sympy' in sys.modules)\n"
        "from llmcourse.formulas import batch\n"
        "from llmcourse.formulas import parallel, speculative\n"
        "print('sympy' in sys.modules, batch is lc.SYMBOLS['batch'].sym is parallel.batch)\n"
        "print(batch in lc.FORMULAS['throughput'].expr.free_symbols, speculative.batch is batch)\n"
    )
    assert _run(code) == ["False", "True False", "True True", "True True"]


def test_a_section_or_latex_imports_sympy_on_first_use():
    """A formula's LaTeX (its expression) and a module's name a section defines make SymPy's objects then."""
    code = (
        "import sys\n"
        "import llmcourse as lc\n"
        "print('sympy' in sys.modules, lc.FORMULAS['kv_bytes_per_token'].latex())\n"
        "from llmcourse.formulas.speculative import EXPECTED_TOKENS_SUM\n"
        "print(type(EXPECTED_TOKENS_SUM).__name__)\n"
    )
    assert _run(code) == ["False \\kappa = 2 H_{kv} L b_{kv} d_{head}", "Piecewise"]


def test_sympys_version_is_read_without_importing_it(tmp_path):
    """The cache's key names SymPy's version, read from its release.py (here a wheel on sys.path, as the live book's
    Python has it, whose package cannot be imported at all): the formulas are registered from the cache."""
    wheel = tmp_path / "sympy.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("sympy/__init__.py", "raise ImportError('SymPy was imported')\n")
        z.writestr("sympy/release.py", f'__version__ = "{core._sympy_version()}"\n')
    code = "import sys\nfrom llmcourse.formulas import core\nprint(core._sympy_version(), core._LAZY)\n"
    assert cache.SOURCES == core.SOURCES
    assert _run(code, str(wheel)) == [f"{core._sympy_version()} True"]


def test_no_name_stands_in_for_a_symbol():
    """Every defining module's names are its values once SymPy is needed: nothing is left standing for a symbol."""
    core.FORMULAS["throughput"].expr  # noqa: B018 (makes the symbols and runs the sections)
    for module in (importlib.import_module(f"llmcourse.{name}") for name in core.DEFINING):
        assert not [n for n, v in vars(module).items() if isinstance(v, core._Later)], module.__name__
    assert core._UNMADE == []


def test_the_live_runtime_names_sympys_version_so_sympy_need_not_be_there(tmp_path):
    """The browser fetches SymPy only when it is first imported, so it names the version it ships instead
    (LLMCOURSE_SYMPY_VERSION): with SymPy not even findable, the formulas come from the cache; a wrong version
    makes the cache stale, and then the formulas are derived afresh (which needs SymPy)."""
    block = "import sys\nclass No:\n    def find_spec(self, name, path=None, target=None):\n"
    block += "        if name.split('.')[0] == 'sympy': raise ImportError('no SymPy here')\n"
    block += "sys.meta_path.insert(0, No())\n"
    code = block + "from llmcourse.formulas import core\nprint(core._LAZY, 'sympy' in sys.modules)\n"
    version = core._sympy_version()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]), "LLMCOURSE_SYMPY_VERSION": version}
    env.pop("LLMCOURSE_FORMULAS_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.stdout.split() == ["True", "False"], out.stderr
    env["LLMCOURSE_SYMPY_VERSION"] = "0.0.0"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode != 0 and "no SymPy here" in out.stderr  # stale: it tried to derive them
