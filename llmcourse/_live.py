"""The live calculators' Python side in the reader's browser: ipywidgets with no Jupyter kernel.

A live calculator in the published book runs its chapter cell with this package under Pyodide, in a
Web Worker of the page (``_ext/static/live_worker.js``). There is no Jupyter kernel and no IPython:
starting IPython in the browser costs more than the whole package, and a calculator needs only the
widgets' messages. This module is what stands in for the kernel:

* :func:`install` gives ``ipywidgets`` what it imports from IPython (``get_ipython``, ``display``,
  ``clear_output``, ``InteractiveShell``) when IPython is not installed, and makes every widget's
  comm a :class:`PageComm`, whose messages go to the page's widget manager (the same Jupyter widgets
  HTML manager that draws the book's snapshots) through one ``post`` function;
* :func:`run` runs a cell as Jupyter would, in a fresh namespace, and *displays* its last expression:
  a widget (or a calculator, through its ``_ipython_display_``) becomes a display message naming the
  widget's model;
* :func:`receive` hands a message from the page (a control the reader changed) to its widget, as a
  kernel's comm manager does; the page is told when it has been handled (its manager throttles on it).

The messages are those of the Jupyter widgets protocol (version 2), as JSON text: ``comm_open``,
``comm_msg`` and ``comm_close`` with ``comm_id``, ``data``, ``metadata`` and, for a message sent while a
page message is handled, the ``parent_header`` naming it (the page drops the echo of its own change).

Examples
--------
In CPython, with a list standing in for the page:

>>> import json
>>> from llmcourse import _live
>>> sent = []
>>> _live.install(lambda text, buffers, out=sent: out.append(json.loads(text)))
>>> error = _live.run("import ipywidgets as w\\nw.IntSlider(value=3, description='Batch')", run_id=1)
>>> error is None
True
>>> [m["msg_type"] for m in sent][-1]
'display'
>>> slider = next(m for m in sent if m.get("data", {}).get("state", {}).get("_model_name") == "IntSliderModel")
>>> slider["data"]["state"]["value"]
3
>>> _live.uninstall()
"""

from __future__ import annotations

import ast
import gc
import importlib
import importlib.abc
import json
import linecache
import logging
import sys
import traceback
import types
import uuid
from collections.abc import Callable, Sequence
from typing import Any

#: ``post(json_text, buffers)``: sends one message to the page (set by :func:`install`).
Post = Callable[[str, Sequence[bytes]], None]

_post: Post | None = None
_run_id: int | None = None  # the cell being run: its display messages go to its place in the page
_parent: dict[str, str] | None = None  # the page message being handled (its echo is marked with it)


class LazyWheels(importlib.abc.MetaPathFinder):
    """Fetches a wheel the first time one of its modules is imported, and imports from it as a zip archive.

    ``wheels`` maps a top-level import name to a wheel's file name; ``fetch(file_name)`` gets the wheel and returns
    the path it was written to. In the browser that is SymPy and mpmath, which no calculator imports: a live start
    does not download them until something symbolic is used.
    """

    def __init__(self, fetch: Callable[[str], str], wheels: dict[str, str]) -> None:
        self.fetch, self.wheels = fetch, dict(wheels)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        wheel = self.wheels.get(name.partition(".")[0])
        if wheel is not None:
            for top in [k for k, v in self.wheels.items() if v == wheel]:  # one fetch per wheel
                del self.wheels[top]
            sys.path.insert(0, self.fetch(wheel))
            importlib.invalidate_caches()
        return None  # the path finder, after this one, now finds the module in the wheel


def _send(msg: dict[str, Any], buffers: Sequence[Any] | None = None) -> None:
    if _post is None:
        return  # not connected (before install, after uninstall): there is no page to tell
    if _parent is not None:
        msg["parent_header"] = _parent
    _post(json.dumps(msg), [bytes(b) for b in buffers or ()])


class _PageErrors(logging.Handler):
    """Sends an error that ipywidgets or the comm package only log (an exception in a widget's callback, say)
    to the page, which shows it beside the calculator whose message caused it: with no IPython there is no
    other place it would appear."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info is None:
            return
        exc = record.exc_info[1]
        _send({"msg_type": "error", "text": _cell_traceback(exc) if exc is not None else record.getMessage()})


def _cell_traceback(exc: BaseException) -> str:
    """The traceback of an exception without this module's own frames."""
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(exc)).rstrip()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    return "".join(traceback.format_list(frames) + traceback.format_exception_only(exc)).rstrip()


_ERRORS = _PageErrors()


def display(*objs: Any, **_kwargs: Any) -> None:
    """Show objects in the page: a widget by its model, anything else as text (IPython's ``display``)."""
    for obj in objs:
        show = getattr(obj, "_ipython_display_", None)
        if callable(show):
            show()
            continue
        bundle = getattr(obj, "_repr_mimebundle_", None)
        data = bundle(include=None, exclude=None) if callable(bundle) else None
        if isinstance(data, tuple):
            data = data[0]
        if not data:
            data = {"text/plain": repr(obj)}
        _send({"msg_type": "display", "run": _run_id, "data": data})


def clear_output(wait: bool = False) -> None:
    """IPython's ``clear_output``: nothing to clear in the page (a calculator redraws its own widgets)."""


class _NoShell:
    """Stands in for IPython's ``InteractiveShell`` (only the Output widget's ``append_display_data`` uses it)."""

    @classmethod
    def instance(cls) -> Any:
        raise RuntimeError("the live page has no IPython shell: show results in widgets, not an Output widget")


def _stub_ipython() -> None:
    """The part of IPython that ipywidgets imports, when IPython is not installed."""
    modules = {name: types.ModuleType(name) for name in ("IPython", "IPython.display", "IPython.core")}
    modules["IPython.core.interactiveshell"] = types.ModuleType("IPython.core.interactiveshell")
    modules["IPython"].get_ipython = lambda: None  # type: ignore[attr-defined]
    modules["IPython"].display = modules["IPython.display"]  # type: ignore[attr-defined]
    modules["IPython"].core = modules["IPython.core"]  # type: ignore[attr-defined]
    modules["IPython"].__path__ = []  # a package, so that its submodules import
    modules["IPython.core"].__path__ = []
    modules["IPython.core"].interactiveshell = modules["IPython.core.interactiveshell"]  # type: ignore[attr-defined]
    modules["IPython.display"].display = display  # type: ignore[attr-defined]
    modules["IPython.display"].clear_output = clear_output  # type: ignore[attr-defined]
    modules["IPython.core.interactiveshell"].InteractiveShell = _NoShell  # type: ignore[attr-defined]
    sys.modules.update(modules)


def _page_comm() -> type:
    from comm.base_comm import BaseComm

    class PageComm(BaseComm):
        """A widget's comm whose messages go to the page."""

        def publish_msg(
            self,
            msg_type: str,
            data: dict[str, Any] | None = None,
            metadata: dict[str, Any] | None = None,
            buffers: Sequence[Any] | None = None,
            **keys: Any,
        ) -> None:
            msg = {"msg_type": msg_type, "comm_id": self.comm_id, "data": data or {}, "metadata": metadata or {}}
            msg.update({k: v for k, v in keys.items() if k in ("target_name", "target_module")})
            if msg_type == "comm_open" and _run_id is not None:
                msg["run"] = _run_id  # the cell that made it: the page shows its errors there
            _send(msg, buffers)

    return PageComm


def install(post: Post | None) -> None:
    """Connect ipywidgets to the page: every message goes out through ``post(json_text, buffers)``.

    Call it before the first widget is made. Where IPython is not installed (the browser), the names
    ipywidgets imports from it are provided here; where it is (CPython), IPython itself is left alone.
    ``post`` may be None and given later to :func:`connect`: the browser takes a memory snapshot of its
    Python between the two, and a snapshot cannot hold a JavaScript function.
    """
    connect(post)
    try:
        import IPython  # noqa: F401
    except ImportError:
        _stub_ipython()
    import comm

    page_comm = _page_comm()
    comm.create_comm = page_comm  # type: ignore[assignment]
    import ipywidgets

    ipywidgets.register_comm_target()
    for name in ("traitlets", "Comm"):  # where ipywidgets' callbacks and the comm package log an exception
        logging.getLogger(name).addHandler(_ERRORS)
    # What start-up made (modules, the unit registry, catalogs: most of the heap) is set aside from the cyclic
    # garbage collector, so that a collection during a recompute looks only at what recomputing made.
    gc.freeze()


def connect(post: Post | None) -> None:
    """Send every message from now on through ``post(json_text, buffers)`` (None: to nowhere); what the cells keep
    in :mod:`llmcourse.page_store` goes to the page too, as a ``store`` message (the page writes it into its
    ``localStorage``)."""
    from llmcourse import page_store  # here, not at the top: the worker loads this module before the package

    global _post
    _post = post
    page_store.connect(None if post is None else _keep)


def _keep(key: str, value: str) -> None:
    _send({"msg_type": "store", "key": key, "value": value})


def uninstall() -> None:
    """Disconnect: widgets made from now on get the ``comm`` package's own comm again (for tests)."""
    global _post
    import comm

    _post = None
    connect(None)
    comm.create_comm = comm._create_comm
    for name in ("traitlets", "Comm"):
        logging.getLogger(name).removeHandler(_ERRORS)
    gc.unfreeze()


def run(code: str, run_id: int, stored: str | None = None) -> str | None:
    """Run a cell as Jupyter would (a fresh namespace; its last expression displayed).

    ``stored``: the page's ``localStorage`` entries of the book (JSON text of an object, key -> text), handed to
    :func:`llmcourse.page_store.fill` first, so the cell finds what the reader kept (unreadable text: none).
    Returns None, or the error as the traceback of the cell's own lines (for the page to show).
    """
    from llmcourse import page_store

    global _run_id
    if stored is not None:
        try:
            entries = json.loads(stored)
        except (TypeError, ValueError):
            entries = {}
        page_store.fill(entries if isinstance(entries, dict) else {})
    _run_id = run_id
    namespace: dict[str, Any] = {"__name__": "__live__"}
    name = f"<live calculator {run_id}>"
    linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)  # its lines in a traceback
    try:
        tree = ast.parse(code, name)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
            if value is not None and not code.rstrip().endswith(";"):  # a trailing ";" shows nothing, as in Jupyter
                display(value)
                _warm(value)
    except Exception as exc:
        return _cell_traceback(exc)
    finally:
        _run_id = None
    return None


#: Recomputes of a calculator a live cell makes, with its own inputs, before the page shows it live (:func:`_warm`).
WARM_UPDATES = 2


def _warm(value: Any) -> None:
    """Get a calculator the cell displayed ready for the reader's first change, before the page shows it live:
    recompute it :data:`WARM_UPDATES` times with its own inputs (the planner's kept set-ups set aside, so that
    each recompute runs the code a new input runs), hand one of its controls its own value as a
    message from the page would (the path a reader's change takes), then collect the cell's garbage.

    Measured on a page restored from the snapshot (``scripts/measure_live.py``), a reader's first one to three
    changes took 12-25 ms of Python and later ones 2-8 ms: the browser runs code unoptimised at first and
    optimises what runs often, and the first change also paid for a collection of the objects the cell had made.
    Either step alone left the first change slow; with both, it takes as long as the later ones. The same inputs
    give the same figures, so the page gets nothing new: the control's echo of its own value, and a simulation's
    new wall time.
    """
    from llmcourse.replica import setups
    from llmcourse.widgets import Calculator

    if not isinstance(value, Calculator) or value.error is not None:
        return
    for _ in range(WARM_UPDATES):
        # the whole path, as a change of a length or a precision takes it, not the kept set-ups (left as they are
        # for this page's other calculators)
        with setups.set_ups_aside():
            value.update()
    control = next(iter(value.controls.values()), None)
    if control is not None and control.comm is not None:
        state = {"value": control.get_state("value")["value"]}
        message = {"method": "update", "state": state, "buffer_paths": []}
        receive(json.dumps({"msg_type": "comm_msg", "comm_id": control.comm.comm_id, "data": message}))
    gc.collect()


def _bytes(buffer: Any) -> bytes:
    """A buffer from the page as bytes (in Pyodide, a JavaScript typed array arrives as a proxy)."""
    to_bytes = getattr(buffer, "to_bytes", None)
    return to_bytes() if callable(to_bytes) else bytes(buffer)


def receive(text: str, buffers: Sequence[Any] = ()) -> None:
    """Hand one message from the page to its widget (a reader's change, or the page closing a comm).

    ``text`` is JSON: ``{"msg_type": "comm_msg" | "comm_close", "msg_id", "comm_id", "data"}``.
    """
    global _parent
    import comm

    msg = json.loads(text)
    _parent = {"msg_id": msg.get("msg_id") or uuid.uuid4().hex}
    kernel_msg = {
        "header": {"msg_id": _parent["msg_id"], "msg_type": msg["msg_type"]},
        "parent_header": {},
        "metadata": {},
        "content": {"comm_id": msg["comm_id"], "data": msg.get("data") or {}},
        "buffers": [memoryview(_bytes(b)) for b in buffers],
    }
    manager = comm.get_comm_manager()
    try:  # the comm package's own handlers, as a kernel's: they mark a closed comm, and log a callback's exception
        if msg["msg_type"] == "comm_close":
            manager.comm_close(None, None, kernel_msg)
        else:
            manager.comm_msg(None, None, kernel_msg)
    finally:
        _parent = None
