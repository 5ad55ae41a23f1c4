"""The auto-checked exercise notebooks (``exercises/NN_topic.md``) and the chapters' exercise statements,
generated from the definitions.

Each exercise is written once, in its chapter's ``defs_<chapter>.py``: its title, story, givens,
variants, answer, unit, hints, slips, and what the book's statement asks beyond the checked answer
(``followup``). The notebook a student opens is generated from those definitions by :func:`notebook`,
and so is the statement of each exercise in the chapter (the ``{exercise}`` block with its label:
:func:`chapter_text`, the story at the book's variant plus the follow-up); the worked solution below
it is written once, in the chapter. Nothing generated is typed by hand. A chapter's definitions module
may set three optional constants that only the notebook shows:

``NOTEBOOK_METHOD``
    a paragraph on the method the exercises follow, where it is not the course's alone;
``VARIES``
    what a student's own variant changes (default: "a different model, GPU or traffic figure");
``EXAMPLE_UNIT``
    the unit of the example answer in the instructions (default: ``"GB"``).

Regenerate the notebooks and statements after changing a definition (a test fails until you do)::

    python -m llmcourse.exercises.notebooks                  # every chapter
    python -m llmcourse.exercises.notebooks . --only tokens  # one chapter's notebook and statements

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
import re
import sys
import textwrap
from pathlib import Path

from llmcourse.errors import UnknownNameError
from llmcourse.exercises.engine import CHAPTERS, Exercise, exercises, get

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


_BOX = """## Check in the browser

In the HTML book, **Run live** above the box below starts Python in the page: pick an exercise, type your answer
and its unit, and **Check**. It is the same checker as `check` (on your student id's variants if you give one);
nothing is saved, and nothing there is graded. In Jupyter, answer in each exercise's own cell below: those are
what a teacher grades.

```{{code-cell}} ipython3
from llmcourse.widgets.exercises import answer_box

answer_box("{chapter}")
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
    parts.append(_BOX.format(chapter=chapter))
    parts += [_exercise(ex) for ex in items]
    parts.append(f'## Progress\n\n```{{code-cell}} ipython3\nprogress("{chapter}")\n```\n')
    return "\n".join(parts)


#: An exercise block of a chapter: its label, then its statement up to the closing fence.
_BLOCK = re.compile(
    r"^(?P<fence>`{3,})\{exercise\}[ \t]*\n:label: (?P<label>\w+)[ \t]*\n(?P<opts>(?::\w+:[^\n]*\n)*)\n?"
    r"(?P<body>.*?)\n(?P=fence)[ \t]*$",
    re.M | re.S,
)


def statement(exercise_id: str) -> str:
    """The book's statement of an exercise: the story at the book's variant, then its follow-up, wrapped."""
    ex = get(exercise_id)
    text = _MONEY_OR_MATH.sub(lambda m: m[1] or r"\$", " ".join(f"{ex.text(None)} {ex.followup}".split()))
    lines = textwrap.wrap(text, width=100, break_long_words=False, break_on_hyphens=False)
    for i in range(len(lines) - 1, 0, -1):  # a line that starts like a list or a heading would not read as prose
        if _MARKUP_START.match(lines[i]):
            first, _, rest = lines[i].partition(" ")
            lines[i - 1] += " " + first
            lines[i] = rest
    return "\n".join(line for line in lines if line)


#: Inline math (``$r_d$``, ``$2\,P\,T_p$``: no space inside) is kept; any other dollar is money and escaped.
_MONEY_OR_MATH = re.compile(r"(\$[^\s$]+\$)|\$")

#: What Markdown reads as the start of a list, a heading, a quote or a directive at the start of a line.
_MARKUP_START = re.compile(r"^(?:[-+*>#]|\d+[.)]|:::|```)(?:\s|$)")


def chapter_text(text: str) -> str:
    """A chapter's MyST source with the statement of every exercise that has a definition regenerated
    (an exercise block whose label names no definition, a reasoning exercise of the book alone, is kept)."""
    known = {e.id for chapter in FILES for e in exercises(chapter)}

    def one(m: re.Match[str]) -> str:
        label = m["label"]
        if label not in known:
            return m[0]
        fence = m["fence"]
        return f"{fence}{{exercise}}\n:label: {label}\n{m['opts']}\n{statement(label)}\n{fence}"

    return _BLOCK.sub(one, text)


def _update(path: Path, text: str, changed: list[Path]) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
        changed.append(path)


def write(root: Path | str = ".", chapters: list[str] | None = None) -> list[Path]:
    """Write every chapter's notebook under ``root/exercises`` and regenerate the exercise statements of
    ``root/book``'s chapters (only those of ``chapters``, if given); return the files that changed."""
    changed: list[Path] = []
    for name in chapters or ():
        if name not in FILES:
            raise UnknownNameError(f"no exercise chapter {name!r}; known: {', '.join(FILES)}.")
    for chapter, stem in FILES.items():
        if chapters and chapter not in chapters:
            continue
        _update(Path(root) / "exercises" / f"{stem}.md", notebook(chapter), changed)
        book = Path(root) / "book" / f"{stem}.md"
        if book.exists():
            _update(book, chapter_text(book.read_text()), changed)
    return changed


if __name__ == "__main__":  # python -m llmcourse.exercises.notebooks [ROOT] [--only CHAPTER ...]
    args = sys.argv[1:]
    only = args[args.index("--only") + 1 :] if "--only" in args else None
    rest = args[: args.index("--only")] if "--only" in args else args
    done = write(rest[0] if rest else ".", only)
    print("\n".join(f"wrote {p}" for p in done) or "the exercise notebooks and statements are up to date")
