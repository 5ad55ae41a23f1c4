"""Figures for the chapters: thin over the planner, axes always labelled with units.

Chapter figures live in the submodules (``llmcourse.plots.<topic>``); this module holds the
shared style helpers.

Every figure is drawn for a phone first. The book's column is :data:`PHONE_COLUMN_PX` wide on a 390-px phone,
so a figure drawn ``w`` inches wide is shown at ``PHONE_COLUMN_PX / (w x dpi)`` of its size there; :func:`finish`
raises every text of the figure to the size that still reads :data:`READABLE_PX` high at that scale (for a figure
wider than :data:`WIDTH` the book links it to its full-size image instead, where the reader zooms). A figure also
carries its alt text (what it shows, for a reader who cannot see it), which its PNG holds in its ``Description``
(read by the book's ``_ext/book_layout.py`` into the page's ``alt``), with the smallest font it was drawn with, in
pixels, under ``llmcourse-min-font-px`` (checked by ``tests/browser/test_phone.py``).
"""

from __future__ import annotations

import base64
import io
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = ["WIDTH", "BookFigure", "describe", "finish", "mark_point", "new_figure", "new_panels", "smallest_font_px"]

#: the width (CSS px) of the book's column on a phone 390 px wide (sphinx-book-theme: 16 px margins each side)
PHONE_COLUMN_PX = 358
#: the smallest rendered text size (CSS px) that reads on that phone
READABLE_PX = 9.5
#: a single-panel figure's width (inches); its text then reads at READABLE_PX on the phone
WIDTH = 5.4
#: the PNG text key holding the smallest font size (px) a figure was drawn with
MIN_FONT_KEY = "llmcourse-min-font-px"


class BookFigure(Figure):
    """A matplotlib figure that carries its alt text (:attr:`alt`), shown in a notebook as a PNG whose metadata
    hold that alt text (``Description``) and the smallest font it was drawn with (:data:`MIN_FONT_KEY`, px).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig, ax = new_figure()
    >>> _ = ax.plot([1, 2], [3, 4])
    >>> ax = finish(ax, "A rising line.")
    >>> fig.alt
    'A rising line.'
    >>> data, meta = fig._repr_mimebundle_()
    >>> meta["image/png"]["alt"]
    'A rising line.'
    >>> plt.close(fig)
    """

    alt: str = ""

    def png(self) -> bytes:
        """The figure as the notebook shows it (a tight PNG at the figure's dpi), with its alt text and smallest
        font size in the PNG's text chunks."""
        self.draw_without_rendering()
        meta = {"Description": self.alt, MIN_FONT_KEY: f"{smallest_font_px(self):.2f}"}
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight", metadata=meta)
        return buf.getvalue()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        data = {"image/png": base64.b64encode(self.png()).decode("ascii"), "text/plain": f"<Figure: {self.alt}>"}
        return data, {"image/png": {"alt": self.alt}}


def _show_with_alt() -> None:
    """In IPython, show a BookFigure as its own PNG, with its alt text. (The inline backend registers a PNG printer
    for every matplotlib figure, which IPython prefers to a figure's own ``_repr_mimebundle_``; one registered for
    the subclass comes first.)"""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover (IPython is installed with the book)
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(BookFigure, lambda fig: (fig.png(), {"alt": fig.alt}))


def new_figure(width: float = WIDTH, height: float = 3.4) -> tuple[Any, Any]:
    """A figure and axes in the book's style (call :func:`finish` on them when drawn)."""
    _show_with_alt()
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained", FigureClass=BookFigure)
    ax.grid(True, alpha=0.3)
    return fig, ax


def new_panels(nrows: int, ncols: int, width: float = WIDTH, height: float = 3.4, **kwargs: Any) -> tuple[Any, Any]:
    """A figure of several panels in the book's style (stacked in one column reads on a phone)."""
    _show_with_alt()
    return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", FigureClass=BookFigure, **kwargs)


def smallest_font_px(fig: Any) -> float:
    """The smallest font (px at the figure's dpi) of the visible, non-empty texts of a drawn figure."""
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_figure(root=True) is fig
    ]
    return min(sizes, default=0.0) * fig.dpi / 72


def _texts(fig: Any) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_text().strip()]


def describe(fig: Any) -> str:
    """What a figure shows, read off its panels: title, axes, lines and marked points.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig, ax = new_figure()
    >>> _ = ax.plot([1, 2], [3, 4], label="a line")
    >>> _ = ax.set(xlabel="x (s)", ylabel="y (m)", title="T")
    >>> mark_point(ax, 2, 4, "4 m at 2 s")
    >>> describe(fig)
    'T: y (m) against x (s); lines: a line; marked: \u201c4 m at 2 s\u201d.'
    >>> plt.close(fig)
    """
    parts = []
    if getattr(fig, "_suptitle", None) is not None and fig._suptitle.get_text():
        parts.append(fig._suptitle.get_text() + ".")
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        x, y = ax.get_xlabel(), ax.get_ylabel()
        what = f"{y} against {x}" if x and y else x or y
        text = f"{ax.get_title()}: {what}" if ax.get_title() else what
        labels = [lab for lab in ax.get_legend_handles_labels()[1] if not lab.startswith("_")]
        if labels:
            text += "; lines: " + ", ".join(labels)
        marks = [t.get_text().replace("\n", ": ") for t in ax.texts if t.get_text().strip()]
        if marks:
            text += "; marked: " + ", ".join(f"\u201c{m}\u201d" for m in marks)
        if text:
            parts.append(text + ".")
    return " ".join(p.replace("..", ".") for p in parts)


def finish(ax: Any, lead: str) -> Any:
    """Make the figure of ``ax`` (an axes or an array of them) phone-legible and give it its alt text: ``lead`` (one
    sentence: what the figure shows) and :func:`describe` of it. Returns ``ax``.

    Every text is raised to the size that reads :data:`READABLE_PX` high on a phone, where the figure is shown
    :data:`PHONE_COLUMN_PX` wide (a figure wider than :data:`WIDTH` is raised as one of :data:`WIDTH` would be; the
    book links it to its full-size image)."""
    first = ax.flat[0] if hasattr(ax, "flat") else ax
    fig = first.get_figure(root=True)
    width = min(fig.get_figwidth(), WIDTH)
    # points: READABLE_PX x (the saved width, w + the 0.1-inch pads, x dpi) / column px, x 72 / dpi
    floor = READABLE_PX * (width + 2 * plt.rcParams["savefig.pad_inches"]) * 72 / PHONE_COLUMN_PX
    for each in fig.axes:
        for axis, ticks in (("x", each.xaxis), ("y", each.yaxis)):
            labels = ticks.get_ticklabels(which="both")
            size = min((t.get_fontsize() for t in labels), default=floor)
            if size < floor:
                each.tick_params(axis=axis, which="both", labelsize=floor)
    for each in fig.axes:  # a title wider than the figure wraps (drawn beyond it, it would widen the image)
        each.title.set_wrap(True)
    fig.draw_without_rendering()
    for t in _texts(fig):
        if t.get_fontsize() < floor:
            t.set_fontsize(floor)
    fig.alt = f"{lead.strip()} {describe(fig)}".strip()
    return ax


def mark_point(ax: Any, x: float, y: float, label: str) -> None:
    """Mark and label the point the text talks about."""
    ax.plot([x], [y], "o", color="crimson", zorder=5)
    ax.annotate(label, (x, y), textcoords="offset points", xytext=(8, 8), color="crimson")
