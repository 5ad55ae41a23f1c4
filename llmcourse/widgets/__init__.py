"""Calculators: ipywidgets forms over the planner.

A :class:`Calculator` joins input controls to one function that calls the planner and
returns rows of (label, value). It recomputes on every change, shows an input error as a
message (never a traceback), and can be driven from code: ``calc.set(context=4096)``
recomputes synchronously and ``calc.result`` / ``calc.rows`` hold the answer, which is how
the tests and the benchmark drive it.

Chapter calculators live in the submodules (``llmcourse.widgets.<topic>``) and are built
from the shared controls here.

Examples
--------
>>> import ipywidgets as w
>>> from llmcourse import kv_bytes_per_token, fmt
>>> calc = Calculator(
...     lambda model: [("KV per token", fmt(kv_bytes_per_token(model), "KiB"))],
...     {"model": model_dropdown("Qwen2.5-72B")}, title="KV per token")
>>> calc.rows
[('KV per token', '320 KiB')]
>>> calc.set(model="Llama-2-7B").rows
[('KV per token', '512 KiB')]
"""

from __future__ import annotations

import html
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as w

from llmcourse.assumptions import PRESETS
from llmcourse.catalog import PRECISIONS, gpus, models
from llmcourse.errors import InputError, UnknownNameError

__all__ = [
    "Calculator",
    "float_slider",
    "gpu_dropdown",
    "int_box",
    "int_slider",
    "model_dropdown",
    "precision_dropdown",
    "preset_dropdown",
    "replica_controls",
    "rows_to_html",
]

Rows = Sequence[tuple[str, str]]

SNAPSHOT_NOTE = (
    "In the published book this calculator is a snapshot computed when the page was built; "
    "open the chapter in Jupyter (or the live version of the page) to recompute as you change the inputs."
)


def rows_to_html(rows: Rows, title: str = "") -> str:
    """A small two-column HTML table for a calculator's result."""
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in rows
    )
    cap = f"<caption style='text-align:left;font-weight:bold'>{html.escape(title)}</caption>" if title else ""
    return f"<table class='llmcourse-result'>{cap}{body}</table>"


class Calculator:
    """Input controls -> ``compute(**values)`` -> a table of results.

    Parameters
    ----------
    compute : callable
        Called with the controls' values as keyword arguments; returns rows of
        (label, text) or an object with a ``rows()`` method.
    controls : mapping of name to widget
        Each widget's ``value`` is passed to ``compute`` under its name.
    title : str
        Caption of the result table.
    extra : callable, optional
        Called with the compute result after each successful update (e.g. to redraw a plot
        held in a widget the chapter adds to ``calc.widget``); its return value is ignored.
    """

    def __init__(
        self,
        compute: Callable[..., Any],
        controls: Mapping[str, w.ValueWidget],
        *,
        title: str = "",
        extra: Callable[[Any], Any] | None = None,
    ) -> None:
        self.compute = compute
        self.controls = dict(controls)
        self.title = title
        self.extra = extra
        self.output = w.HTML()
        self.error: str | None = None
        self.result: Any = None
        self.rows: list[tuple[str, str]] = []
        for c in self.controls.values():
            c.observe(self._on_change, names="value")
        self.update()
        live_in_browser = sys.platform == "emscripten"  # the book's live (Pyodide) calculators need no note
        note = w.HTML("" if live_in_browser else f"<small><i>{html.escape(SNAPSHOT_NOTE)}</i></small>")
        self.widget = w.VBox(
            [
                w.HTML(f"<b>{html.escape(title)}</b>") if title else w.HTML(""),
                *self.controls.values(),
                self.output,
                note,
            ]
        )

    def values(self) -> dict[str, Any]:
        return {k: c.value for k, c in self.controls.items()}

    def _on_change(self, _change: Any) -> None:
        self.update()

    def update(self) -> Calculator:
        """Recompute from the controls' current values and refresh the display."""
        try:
            result = self.compute(**self.values())
        except (InputError, UnknownNameError, ValueError) as exc:
            self.error = str(exc)
            self.result, self.rows = None, []
            self.output.value = f"<p style='color:#b00'>Cannot compute: {html.escape(self.error)}</p>"
            return self
        self.error = None
        self.result = result
        self.rows = list(result.rows() if hasattr(result, "rows") else result)
        self.output.value = rows_to_html(self.rows)
        if self.extra is not None:
            self.extra(result)
        return self

    def set(self, **values: Any) -> Calculator:
        """Set some controls (as a reader would) and recompute once."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise InputError(f"this calculator has no control {sorted(unknown)}; it has {sorted(self.controls)}.")
        for name, value in values.items():
            c = self.controls[name]
            # the change notification is released when the hold ends: observe again only after it, or every set()
            # computes twice (once for the released change, once below)
            c.unobserve(self._on_change, names="value")
            try:
                with c.hold_trait_notifications():
                    c.value = value
            finally:
                c.observe(self._on_change, names="value")
        return self.update()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        shown = self.error or "; ".join(f"{k}: {v}" for k, v in self.rows)
        return f"<Calculator {self.title!r}: {shown}>"


def model_dropdown(
    value: str = "Llama-3.1-8B", options: Sequence[str] | None = None, description: str = "Model"
) -> w.Dropdown:
    """A dropdown of catalog models."""
    return w.Dropdown(options=list(options or models), value=value, description=description)


def gpu_dropdown(value: str = "H100 SXM", options: Sequence[str] | None = None, description: str = "GPU") -> w.Dropdown:
    """A dropdown of catalog GPUs."""
    return w.Dropdown(options=list(options or gpus), value=value, description=description)


def precision_dropdown(
    value: str = "bf16", description: str = "Precision", options: Sequence[str] = ("bf16", "fp8", "int8", "int4")
) -> w.Dropdown:
    """A dropdown of precisions (names in :data:`llmcourse.catalog.PRECISIONS`)."""
    assert all(o in PRECISIONS for o in options)
    return w.Dropdown(options=list(options), value=value, description=description)


def preset_dropdown(value: str = "course", description: str = "Method") -> w.Dropdown:
    """A dropdown of the assumptions presets (:data:`llmcourse.assumptions.PRESETS`), labelled by what
    each method is; its value is the preset's name, for ``assumptions=``.

    Examples
    --------
    >>> d = preset_dropdown()
    >>> d.value, d.options[-1]
    ('course', ("the course's method", 'course'))
    """
    labels = {
        "envelope": "back-of-the-envelope",
        "lab": "interactive lab",
        "capacity": "capacity planning",
        "planner": "six-step planner",
        "course": "the course's method",
    }
    return w.Dropdown(options=[(labels.get(k, k), k) for k in PRESETS], value=value, description=description)


def int_slider(value: int, lo: int, hi: int, step: int = 1, description: str = "") -> w.IntSlider:
    """An integer slider that updates only on release (cheap for the kernel)."""
    return w.IntSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        continuous_update=False,
        style={"description_width": "initial"},
    )


def float_slider(value: float, lo: float, hi: float, step: float, description: str = "") -> w.FloatSlider:
    """A float slider that updates only on release."""
    return w.FloatSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=description,
        continuous_update=False,
        style={"description_width": "initial"},
    )


def replica_controls(
    model: str, gpu: str, tensor_parallel: int, batch: int, prompt: int, answer: int, precision: str, method: str
) -> dict[str, w.Widget]:
    """The controls of one replica the fleet-sized calculators share: model, GPU, GPUs per replica, batch,
    prompt and answer tokens, weight precision and method (the names their compute functions take)."""
    return {
        "model": model_dropdown(model),
        "gpu": gpu_dropdown(gpu),
        "tensor_parallel": int_slider(tensor_parallel, 1, 8, description="GPUs per replica (TP)"),
        "batch": int_slider(batch, 1, 512, description="Batch"),
        "prompt": int_box(prompt, "Prompt tokens"),
        "answer": int_box(answer, "Answer tokens"),
        "precision": precision_dropdown(precision, "Weights"),
        "method": preset_dropdown(method),
    }


def int_box(value: int, description: str = "") -> w.IntText:
    """A box for a whole number (large ranges such as context lengths).

    Unbounded on purpose: a zero or negative entry reaches the planner, whose message says what
    to change, rather than being clamped silently.
    """
    return w.IntText(value=value, description=description, style={"description_width": "initial"})
