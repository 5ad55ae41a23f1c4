"""What a reader's practice keeps between visits: a small key-value store of text, kept by the page.

A live calculator runs under Pyodide in a Web Worker (``llmcourse._live``), which has no ``localStorage``; the
page it runs in has. So the page hands its entries to Python when it runs a cell (:func:`fill`, called by
``llmcourse._live.run``), and Python hands every change back (:func:`put` calls the function given to
:func:`connect`; ``llmcourse._live`` sends it to the page as a ``store`` message, and the page writes it into
its ``localStorage``, ``_ext/static/live_calculators.js``). The interview practice of the chapter *Drills*
(:mod:`llmcourse.widgets.interview`) keeps its Leitner boxes here, so a reader who reloads the page, or comes
back the next day, finds them again.

Outside the browser (Jupyter, tests) nothing is connected: :func:`put` keeps the entry in this Python only, and
it lasts as long as the kernel. Only keys that start with :data:`PREFIX` are stored, in the page and here, and a
value holds at most :data:`MAX_CHARS` characters: the store is the book's, never the rest of the site's.

Examples
--------
>>> from llmcourse import page_store
>>> sent = []
>>> page_store.connect(lambda key, value: sent.append((key, value)))
>>> page_store.fill({"llmcourse:demo": "1", "other": "x"})  # what the page holds (other keys are not the book's)
>>> page_store.get("llmcourse:demo"), page_store.get("other")
('1', None)
>>> page_store.put("llmcourse:demo", "2")
>>> page_store.get("llmcourse:demo"), sent
('2', [('llmcourse:demo', '2')])
>>> page_store.connect(None); page_store.fill({})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from llmcourse.errors import InputError

__all__ = ["MAX_CHARS", "PREFIX", "connect", "fill", "get", "put"]

#: Every key the book stores starts with this (the page reads and writes no other).
PREFIX = "llmcourse:"
#: The longest value kept (characters): a progress file of the whole bank is a few tens of thousands.
MAX_CHARS = 1_000_000

_entries: dict[str, str] = {}
_send: Callable[[str, str], None] | None = None


def connect(send: Callable[[str, str], None] | None) -> None:
    """Hand every :func:`put` from now on to ``send(key, value)`` (None: keep it in this Python only)."""
    global _send
    _send = send


def fill(entries: Mapping[Any, Any]) -> None:
    """Replace what this Python holds with the page's entries: those whose key starts with :data:`PREFIX` and whose
    key and value are text no longer than :data:`MAX_CHARS` (others are left out, never refused: they are the page's
    business, not the reader's)."""
    _entries.clear()
    for key, value in entries.items():
        if isinstance(key, str) and key.startswith(PREFIX) and isinstance(value, str) and len(value) <= MAX_CHARS:
            _entries[key] = value


def get(key: str) -> str | None:
    """The value kept under ``key``, or None."""
    return _entries.get(key)


def put(key: str, value: str) -> None:
    """Keep ``value`` under ``key`` here and, when connected, in the page.

    Refuses (:class:`~llmcourse.errors.InputError`) a key without :data:`PREFIX`, and a value that is not text or
    is longer than :data:`MAX_CHARS`."""
    if not isinstance(key, str) or not key.startswith(PREFIX):
        raise InputError(f"page_store key must be text starting with {PREFIX!r}, not {key!r}.")
    if not isinstance(value, str) or len(value) > MAX_CHARS:
        raise InputError(f"page_store value for {key!r} must be text of at most {MAX_CHARS:,} characters.")
    _entries[key] = value
    if _send is not None:
        _send(key, value)
