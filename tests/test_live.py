"""The live calculators' Python side (``llmcourse/_live.py``), in CPython, as the browser runs it.

The browser's Python has no IPython: the session below runs in a fresh Python where importing IPython
fails, with a list standing in for the page. The page's own side (the widget manager, the worker) is
checked in a real browser by ``tests/browser``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from typing import Any

import pytest

# A browser-like session: IPython cannot be imported; every message the page would get is recorded.
SESSION = r"""
import json, sys
class NoIPython:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "IPython":
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, NoIPython())
from llmcourse import _live
sent = []
_live.install(None)  # as the browser does: set up first, connected to the page after its memory snapshot
_live.connect(lambda text, buffers: sent.append(json.loads(text)))
out = {"run": _live.run(sys.stdin.read(), 7)}
opened = {m["comm_id"]: m["data"]["state"] for m in sent if m["msg_type"] == "comm_open"}
box = next(i for i, s in opened.items() if s.get("description") == "Prompt tokens")
states = [m["data"].get("state", {}) for m in sent if m["msg_type"] in ("comm_open", "comm_msg")]
out["before"] = [s["value"] for s in states if "llmcourse-result" in str(s.get("value"))][-1]
n = len(sent)
_live.receive(json.dumps({"msg_type": "comm_msg", "msg_id": "page-1", "comm_id": box,
                          "data": {"method": "update", "state": {"value": 4000}, "buffer_paths": []}}))
out["reply"] = sent[n:]
out["errors"] = [_live.run("1 / 0", 8), _live.run("x = (", 9), _live.run("undefined_name", 10)]
n = len(sent)
_live.run("40 + 2", 11)
out["plain"] = sent[n:]
# a widget's callback that raises: the page is told (ipywidgets alone would only log it, and nobody would see it)
_live.run("import ipywidgets as w\nbox = w.IntText(value=1)\nbox.observe(lambda change: 1 / 0, names='value')\n"
          "import builtins\nbuiltins.box = box\nbox", 12)
import builtins
n = len(sent)
_live.receive(json.dumps({"msg_type": "comm_msg", "msg_id": "page-2", "comm_id": builtins.box.comm.comm_id,
                          "data": {"method": "update", "state": {"value": 2}, "buffer_paths": []}}))
out["callback"] = sent[n:]
# the page closes the comm, then Python closes the widget: no second close, no error
_live.receive(json.dumps({"msg_type": "comm_close", "msg_id": "page-3", "comm_id": builtins.box.comm.comm_id}))
n = len(sent)
builtins.box.close()
out["closed"] = sent[n:]
# a calculator the cell shows is warmed before the page shows it live, with its own inputs; one that failed is not
n = len(sent)
_live.run("import builtins, ipywidgets as w\nfrom llmcourse.errors import InputError\n"
          "from llmcourse.widgets import Calculator\nbuiltins.calls = []\n"
          "def compute(n):\n    builtins.calls.append(n)\n    if n < 0:\n        raise InputError('n < 0')\n"
          "    return [('n', str(n))]\n"
          "builtins.compute = compute\n"
          "Calculator(compute, {'n': w.IntText(value=3)})", 13)
out["warmed"] = [list(builtins.calls), sent[n:]]
builtins.calls.clear()
_live.run("import builtins, ipywidgets as w\nfrom llmcourse.widgets import Calculator\n"
          "Calculator(builtins.compute, {'n': w.IntText(value=-1)})", 14)
out["failed"] = list(builtins.calls)
out["messages"] = sent
out["ipython"] = type(sys.modules["IPython"]).__name__, hasattr(sys.modules["IPython"], "__file__")
print(json.dumps(out))
"""
CODE = "from llmcourse.widgets.first_estimate import serving_plan_calculator\nserving_plan_calculator()"


class _Table(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("th", "td"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self.cell is not None:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _rows(table_html: str) -> list[tuple[str, str]]:
    """A result table's rows as text, as a reader sees them."""
    parser = _Table()
    parser.feed(table_html)
    return [tuple(r) for r in parser.rows]  # type: ignore[misc]


@pytest.fixture(scope="module")
def session() -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", SESSION], input=CODE, capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_calculator_runs_and_shows_its_widget_without_ipython(session: dict[str, Any]) -> None:
    assert session["run"] is None
    assert session["ipython"] == ["module", False]  # the stand-in, not IPython itself
    messages = session["messages"]
    display = [m for m in messages if m["msg_type"] == "display" and m["run"] == 7]
    assert len(display) == 1
    view = display[0]["data"]["application/vnd.jupyter.widget-view+json"]
    opened = {m["comm_id"]: m for m in messages if m["msg_type"] == "comm_open"}
    # the displayed model is the calculator's top box, opened (as the widget protocol wants) before it is shown
    top = opened[view["model_id"]]
    assert top["data"]["state"]["_model_name"] == "VBoxModel"
    assert top["target_name"] == "jupyter.widget" and top["metadata"]["version"].startswith("2.")
    assert messages.index(top) < messages.index(display[0])
    # every child it names was opened before it
    children = [c.removeprefix("IPY_MODEL_") for c in top["data"]["state"]["children"]]
    assert children and all(messages.index(opened[c]) < messages.index(top) for c in children)


def test_a_change_from_the_page_recomputes_and_is_echoed_to_it(session: dict[str, Any]) -> None:
    from llmcourse.widgets.first_estimate import serving_plan_calculator

    reply = session["reply"]
    # every message sent while the page's change was handled names it, so the page can drop its own echo
    assert reply and all(m["parent_header"] == {"msg_id": "page-1"} for m in reply)
    echo = [m for m in reply if m["data"].get("method") == "echo_update"]
    assert [m["data"]["state"] for m in echo] == [{"value": 4000}]
    tables = [m["data"]["state"]["value"] for m in reply if "llmcourse-result" in str(m["data"].get("state"))]
    # the table before and after the change are what the calculator computes here for the same inputs
    calc = serving_plan_calculator()
    assert _rows(session["before"]) == calc.rows
    assert _rows(tables[-1]) == calc.set(prompt=4000).rows != _rows(session["before"])


def test_a_failing_cell_returns_its_error_for_the_page(session: dict[str, Any]) -> None:
    zero, syntax, missing = session["errors"]  # each cell's own error, for the page to show
    assert zero.splitlines()[-1] == "ZeroDivisionError: division by zero"
    assert 'File "<live calculator 8>", line 1' in zero and "_live.py" not in zero  # the cell's lines only
    assert "    1 / 0\n" in zero  # with the line itself
    assert syntax.splitlines()[-1].startswith("SyntaxError") and "ast.py" not in syntax
    assert missing.splitlines()[-1] == "NameError: name 'undefined_name' is not defined"


def test_an_exception_in_a_widget_callback_reaches_the_page(session: dict[str, Any]) -> None:
    errors = [m for m in session["callback"] if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["parent_header"] == {"msg_id": "page-2"}
    assert errors[0]["text"].splitlines()[-1] == "ZeroDivisionError: division by zero"
    assert "line 3, in <lambda>" in errors[0]["text"] and "1 / 0" in errors[0]["text"]  # the cell's own line


def test_a_comm_the_page_closed_is_closed_here_too(session: dict[str, Any]) -> None:
    assert session["closed"] == []  # Python's close() of a comm the page closed sends nothing, raises nothing


def test_a_shown_calculator_is_warmed_with_its_own_inputs_before_it_is_live(session: dict[str, Any]) -> None:
    from llmcourse._live import WARM_UPDATES

    calls, messages = session["warmed"]
    assert WARM_UPDATES >= 1 and calls == [3] * (1 + WARM_UPDATES)  # made once, then recomputed; its own value only
    shown = [i for i, m in enumerate(messages) if m["msg_type"] == "display"]
    after = messages[shown[0] + 1 :]
    assert len(shown) == 1 and after  # the same figures: after it is shown, only the warmed control's own value
    assert [(m["msg_type"], m["data"]) for m in after] == [
        ("comm_msg", {"method": "echo_update", "state": {"value": 3}, "buffer_paths": []})
    ]
    assert session["failed"] == [-1]  # a calculator that cannot compute is not recomputed


def test_a_plain_value_is_shown_as_text(session: dict[str, Any]) -> None:
    assert session["plain"] == [{"msg_type": "display", "run": 11, "data": {"text/plain": "42"}}]


def test_a_lazy_wheel_is_fetched_once_on_first_import(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the browser does for SymPy: nothing until the first import, then one fetch, then a zip import."""
    import importlib
    import zipfile

    from llmcourse._live import LazyWheels

    wheel = tmp_path / "lazypkg_demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("lazypkg_demo/__init__.py", "from .part import VALUE\n")
        z.writestr("lazypkg_demo/part.py", "VALUE = 42\n")
        z.writestr("lazypkg_extra/__init__.py", "")
    fetched: list[str] = []

    def fetch(name: str) -> str:
        fetched.append(name)
        return str(tmp_path / name)

    finder = LazyWheels(fetch, {"lazypkg_demo": wheel.name, "lazypkg_extra": wheel.name})
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert fetched == []
    assert importlib.import_module("lazypkg_demo").VALUE == 42
    importlib.import_module("lazypkg_extra")  # the same wheel: not fetched again
    assert fetched == [wheel.name]
    assert importlib.util.find_spec("lazypkg_absent") is None and fetched == [wheel.name]
    for name in ("lazypkg_demo", "lazypkg_demo.part", "lazypkg_extra"):
        sys.modules.pop(name, None)
