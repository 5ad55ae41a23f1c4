"""The live-calculator Sphinx extension's build-time logic (``_ext/live_calculators.py``), without a build."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
live = pytest.importorskip("live_calculators")


def test_only_llmcourse_imports_are_carried_with_the_names_they_bind() -> None:
    code = (
        "import llmcourse as lc\nfrom llmcourse.widgets.tokens import traffic_calculator as tc\nimport numpy\nx = 1\n"
    )
    found = live._llmcourse_imports(code)
    assert found == [
        ("import llmcourse as lc", {"lc"}),
        ("from llmcourse.widgets.tokens import traffic_calculator as tc", {"tc"}),
    ]
    assert live._names_used("tc()\nlc.models") == {"tc", "lc"}


@pytest.mark.slow
def test_live_check_runs_a_calculator_with_only_the_browsers_modules() -> None:
    assert live.live_check(["from llmcourse.widgets.tokens import traffic_calculator\ntraffic_calculator()"]) is None
    # what the browser's Python lacks is "not installed" here too, even if this venv has it
    assert live.live_check(["import numpy"]) == "ModuleNotFoundError: No module named 'numpy'"
    assert live.live_check(["import importlib.util\nassert importlib.util.find_spec('matplotlib') is None"]) is None
    # a cell that relies on an earlier cell's variable fails on its own
    assert "NameError" in live.live_check(["calc.set(context=1)"])


def _calculator_factories() -> list[tuple[str, str]]:
    import importlib
    import pkgutil

    import llmcourse.widgets as widgets

    out = []
    for info in pkgutil.iter_modules(widgets.__path__):
        module = importlib.import_module(f"llmcourse.widgets.{info.name}")
        out += [(info.name, n) for n in getattr(module, "__all__", []) if n.endswith("_calculator")]
    return out


@pytest.mark.slow
def test_every_calculator_runs_with_only_the_browsers_modules() -> None:
    """Every chapter calculator builds in a Python that has only what the live book's Python has
    (no numpy, no matplotlib): so every calculator can run live."""
    factories = _calculator_factories()
    assert len(factories) >= 14, factories
    codes = {f"{m}.{n}": f"from llmcourse.widgets.{m} import {n}\nassert {n}().rows" for m, n in factories}
    if live.live_check(list(codes.values())) is None:  # all of them, in one such Python (one start, not 16)
        return
    for name, code in codes.items():  # which of them fails, each in a Python of its own
        assert live.live_check([code]) is None, f"{name}: {live.live_check([code])}"


def test_the_check_allows_exactly_what_the_live_runtime_ships() -> None:
    """LITE_MODULES (what the build-time check lets a cell import) are the import names of the wheels
    scripts/build_lite.py ships (its live.json), so the check neither rejects what the browser has nor
    passes what it lacks."""
    manifest = Path(__file__).resolve().parents[1] / "_build" / "lite" / "live.json"
    if not manifest.exists():
        pytest.skip("no live runtime built (make lite)")
    imports = set(json.loads(manifest.read_text())["imports"])
    assert imports - {"isympy"} == live.LITE_MODULES  # isympy: sympy's console script, imported by nothing
    assert "IPython" not in imports  # llmcourse._live stands in for it


def test_a_changed_script_reaches_the_built_site_when_no_page_is_rebuilt(tmp_path: Path) -> None:
    """Sphinx copies static files only when it rebuilds a page: the extension's build-finished step copies its own
    scripts when they differ from the site's (a stale worker would be what the browser tests run)."""
    from types import SimpleNamespace

    ext = live
    static = tmp_path / "_static"
    static.mkdir()
    (static / "live_worker.js").write_text("// an old worker")
    (static / "unrelated.js").write_text("// not the extension's")
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"))
    ext.refresh_static(app, None)  # type: ignore[arg-type]
    for f in ext.STATIC.iterdir():
        assert (static / f.name).read_bytes() == f.read_bytes(), f.name
    assert (static / "unrelated.js").read_text() == "// not the extension's"
    (static / "live_worker.js").write_text("// changed")
    ext.refresh_static(app, RuntimeError("the build failed"))  # a failed build is left as it is
    assert (static / "live_worker.js").read_text() == "// changed"


def test_the_exercise_pages_answer_box_checks_live_with_only_the_browsers_modules() -> None:
    """The answer box of the exercise pages (the cell exercises/*.md hold) builds in a Python that has only what
    the browser's has, and a reader's typing and click, sent as the page's widget manager sends them, check the
    answer: 320 KiB is kv_cache_ex1's (2 x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B = 320 KiB)."""
    from llmcourse.exercises.notebooks import notebook

    cell = 'from llmcourse.widgets.exercises import answer_box\n\nanswer_box("kv_cache")'
    assert cell in notebook("kv_cache")
    click = (
        "import json\nfrom llmcourse import _live\nfrom llmcourse.widgets.exercises import answer_box\n"
        "box = answer_box('kv_cache')\n"
        "def page(widget, data):\n"
        "    _live.receive(json.dumps({'msg_type': 'comm_msg', 'msg_id': 'p', 'comm_id': widget.comm.comm_id, "
        "'data': data}))\n"
        "page(box.answer, {'method': 'update', 'state': {'value': '320'}, 'buffer_paths': []})\n"
        "page(box.button, {'method': 'custom', 'content': {'event': 'click'}})\n"
        "assert 'Correct' in box.feedback.value, box.feedback.value\n"
        "page(box.unit, {'method': 'update', 'state': {'value': 'kB'}, 'buffer_paths': []})\n"
        "page(box.button, {'method': 'custom', 'content': {'event': 'click'}})\n"
        "assert 'KiB vs kB' in box.feedback.value, box.feedback.value\n"
    )
    assert live.live_check([cell.replace("\n\n", "\n"), click]) is None
