"""The house's shape (README, "Layout and architecture"): the counts of ``scripts/house.py`` held at the issue's
bounds. ``lint-imports`` (``.importlinter``) checks the floors and the cycles too; these add what it does not
state: imports inside functions as edges of the same graph, long modules and functions, wide public callables and
the private names one package takes from another. Each test names the offenders it finds."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def house():
    spec = importlib.util.spec_from_file_location("house", ROOT / "scripts" / "house.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["house"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def counts(house):
    return house.measure()


@pytest.mark.parametrize(
    ("label", "most"),
    [
        ("import cycles (imports inside functions count)", 0),
        ("upward imports", 0),
        ("hand-written modules over 900 lines", 0),
        ("private names taken across packages", 10),
        ("private names taken across modules inside a package", 0),
        ("public callables over 12 parameters", 5),
        ("functions over 100 lines", 0),
    ],
)
def test_the_house_stays_in_shape(counts, label, most):
    found = counts[label]
    assert len(found) <= most, f"{label}: {len(found)} (at most {most}):\n" + "\n".join(found)


def test_the_counter_sees_a_cycle_an_upward_import_and_a_private_name(house, tmp_path, monkeypatch):
    """The counts can fail: a toy package with one of each is counted so."""
    pkg = tmp_path / "llmcourse"
    (pkg / "replica").mkdir(parents=True)
    (pkg / "planner").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "replica" / "__init__.py").write_text("")
    (pkg / "planner" / "__init__.py").write_text("")
    (pkg / "replica" / "a.py").write_text("def f():\n    from llmcourse.replica import b\n")
    (pkg / "replica" / "b.py").write_text("from llmcourse.replica import a\nfrom llmcourse.planner.c import _g\n")
    (pkg / "planner" / "c.py").write_text("def _g():\n    pass\n")
    monkeypatch.setattr(house, "ROOT", tmp_path)
    monkeypatch.setattr(house, "PACKAGE", pkg)
    got = house.measure()
    assert got["import cycles (imports inside functions count)"] == ["llmcourse.replica.a -> llmcourse.replica.b"]
    assert got["upward imports"] == ["llmcourse.replica.b:2 imports llmcourse.planner.c"]
    assert got["private names taken across packages"] == ["llmcourse.replica.b:2 takes llmcourse.planner.c._g"]


def test_the_counter_sees_a_circle_through_a_package_init_and_a_private_name_inside_a_package(
    house, tmp_path, monkeypatch
):
    """A module importing a name from its own package's __init__, which imports that module back, is a circle; a
    private name one module takes from its sibling is counted too."""
    pkg = tmp_path / "llmcourse"
    (pkg / "replica").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "replica" / "__init__.py").write_text("from llmcourse.replica.a import f\n")
    (pkg / "replica" / "a.py").write_text("from llmcourse.replica import g\nfrom llmcourse.replica.b import _h\n")
    (pkg / "replica" / "b.py").write_text("def _h():\n    pass\n")
    monkeypatch.setattr(house, "ROOT", tmp_path)
    monkeypatch.setattr(house, "PACKAGE", pkg)
    got = house.measure()
    assert got["import cycles (imports inside functions count)"] == ["llmcourse.replica -> llmcourse.replica.a"]
    assert got["private names taken across modules inside a package"] == [
        "llmcourse.replica.a:2 takes llmcourse.replica.b._h"
    ]


def test_no_package_hides_one_of_its_modules():
    """A name a package exports must not hide a module of the package (``import llmcourse.x.y as m`` would give the
    function, and a monkeypatch of ``llmcourse.x.y.name`` would miss): the one exception is ``llmcourse.replica``, the
    folder of the replica model and the function ``lc.replica()`` both, said in README."""
    import importlib
    import pkgutil

    import llmcourse

    hidden = []

    def walk(pkg):
        for info in pkgutil.iter_modules(pkg.__path__):
            full = f"{pkg.__name__}.{info.name}"
            module = importlib.import_module(full)
            if getattr(pkg, info.name, module) is not module and full != "llmcourse.replica":
                hidden.append(full)
            if info.ispkg:
                walk(module)

    walk(llmcourse)
    assert hidden == []
