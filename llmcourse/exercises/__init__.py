"""Auto-checked exercises: one problem set per chapter, checked by the planner.

In a notebook::

    from llmcourse import Q_
    from llmcourse.exercises import check, show, progress, student

    student("s1234567")          # optional: your own variant of every exercise
    show("kv_cache_ex1")         # the story with your givens
    answer = Q_(..., "KiB")      # your answer, in any unit of the right kind
    check("kv_cache_ex1", answer)
    progress("kv_cache")

Expected answers are computed by the planner when :func:`check` runs; they are stored nowhere, and
only the teacher's interface gives them (``python -m llmcourse check --key kv_cache --seed S``).
Importing this package is cheap: the chapters' exercise definitions load on first use.
A teacher grades a notebook with ``python -m llmcourse check exercises/03_kv_cache.md --seed S``.
"""

from __future__ import annotations

from llmcourse.exercises import engine as _engine
from llmcourse.exercises.engine import *  # noqa: F403 (the public API is the engine's)

__all__ = list(_engine.__all__)
