"""The auto-checked exercise notebooks (``exercises/NN_topic.md``), generated from the definitions.

Each exercise is written once, in its chapter's ``defs_<chapter>.py``: its title, story, givens,
variants, answer, unit, hints and slips. The notebook a student opens is generated from those
definitions by :func:`notebook`; nothing in it is typed by hand. A chapter's definitions module
may set three optional constants that only the notebook shows:

``NOTEBOOK_METHOD``
    a paragraph on the method the exercises follow, where it is not the course's alone;
``VARIES``
    what a student's own variant changes (default: "a different model, GPU or traffic figure");
``EXAMPLE_UNIT``
    the unit of the example answer in the instructions (default: ``"GB"``).

Regenerate the notebooks after changing a definition (a test fails until you do)::

    python -m llmcourse.exercises.notebooks

Examples
--------
>>> text = notebook("tokens")
>>> text.startswith("---\\njupytext:") and "(exercises_tokens)=" in text
True
>>> 'check("tokens_ex1", answer)' in text
True
>>> notebook("nonsense")
Traceback (most recent call last):
...
llmcourse.errors.UnknownNameError: no exercise chapter 'nonsense'; known: first_estimate, tokens, ...
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from llmcourse.errors import UnknownNameError
from llmcourse.exercises.engine import CHAPTERS, Exercise, exercises

#: The notebook file of each chapter (``exercises/<stem>.md``), named as its chapter in ``book/``.
FILES: dict[str, str] = {
    "first_estimate": "00_first_estimate",
    "tokens": "01_tokens",
    "weights": "02_weights",
    "kv_cache": "03_kv_cache",
    "gqa": "04_gqa",
    "decode": "05_decode",
    "prefill": "06_prefill",
    "moe": "07_moe",
    "batching": "08_batching",
    "speculative": "08b_speculative",
    "many_gpus": "08c_many_gpus",
    "fleet": "09_fleet",
    "queueing": "10_queueing",
    "disaggregation": "10b_disaggregation",
    "design_review": "11_design_review",
}

_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

_INTRO = """Auto-checked exercises for the chapter {{ref}}`{chapter}`. Run the first cell, then for each exercise read the
story, put your answer in place of `None` (with its unit, e.g. `Q_(value, "{unit}")`: any unit of the same kind
works) and run the cell. `check` says whether it is right, which unit it expected and, if not, how far
off you are; each wrong try reveals one more hint. The expected answers are computed by `llmcourse`
when you check; they are not stored in this notebook.

To get your own numbers ({varies} for each student), put your student
number or name in `student(...)`. Without it you work the book's variant. A teacher grades a saved
notebook with `python -m llmcourse check exercises/{stem}.ipynb --seed <student>`.
"""

_SETUP = """```{code-cell} ipython3
import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises import check, progress, show, student

student(None)  # your student number or name, e.g. student("s1234567")
```
"""


def _answer_hint(ex: Exercise) -> str:
    """The comment on a blank answer line: what kind of answer the checker reads."""
    if not ex.unit:
        return "a whole number" if ex.integer else "a plain number"
    hint = f'e.g. Q_(value, "{ex.unit}")'
    return f"{hint}; a bare number is read as {ex.unit}" if ex.bare_ok else hint


def _exercise(ex: Exercise) -> str:
    hint = _answer_hint(ex)
    sep = ": " if not ex.unit else ", "
    return (
        f"## {ex.number}. {ex.title}\n\n"
        f'```{{code-cell}} ipython3\nshow("{ex.id}")\n```\n\n'
        f'```{{code-cell}} ipython3\nanswer = None  # your answer{sep}{hint}\ncheck("{ex.id}", answer)\n```\n'
    )


def notebook(chapter: str) -> str:
    """The MyST notebook of ``chapter``'s exercises, as ``exercises/<stem>.md`` holds it."""
    if chapter not in CHAPTERS or chapter not in FILES:
        raise UnknownNameError(f"no exercise chapter {chapter!r}; known: {', '.join(CHAPTERS)}.")
    items = exercises(chapter)
    defs = importlib.import_module(f"llmcourse.exercises.defs_{chapter}")
    stem = FILES[chapter]
    parts = [
        _HEADER,
        f"(exercises_{chapter})=\n# Exercises: {CHAPTERS[chapter]}\n",
        _INTRO.format(
            chapter=chapter,
            unit=getattr(defs, "EXAMPLE_UNIT", "GB"),
            varies=getattr(defs, "VARIES", "a different model, GPU or traffic figure"),
            stem=stem,
        ),
    ]
    method = getattr(defs, "NOTEBOOK_METHOD", "")
    if method:
        parts.append(method.strip() + "\n")
    parts.append(_SETUP)
    parts += [_exercise(ex) for ex in items]
    parts.append(f'## Progress\n\n```{{code-cell}} ipython3\nprogress("{chapter}")\n```\n')
    return "\n".join(parts)


def write(root: Path | str = ".") -> list[Path]:
    """Write every chapter's notebook under ``root/exercises``; return the files that changed."""
    changed = []
    for chapter, stem in FILES.items():
        path = Path(root) / "exercises" / f"{stem}.md"
        text = notebook(chapter)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


if __name__ == "__main__":
    done = write(sys.argv[1] if len(sys.argv) > 1 else ".")
    print("\n".join(f"wrote {p}" for p in done) or "the exercise notebooks are up to date")
