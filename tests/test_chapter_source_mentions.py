"""Chapters 0 to 8c lead with the course's own method: each names the source texts' methods, or their errata, at most
four times (the sources appendix, book/16_sources.md, is where those methods and their figures live; a chapter
keeps at most a short pointer to it). The count is over the whole page, its code cells and comments included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
#: What names a source's method or an erratum of one (case ignored).
MENTION = re.compile(r"the lab's|back-of-the-envelope|capacity-planning|six-step|erratum|errata", re.IGNORECASE)
LIMIT = 4
#: Chapters 0 to 8c: 00_first_estimate.md ... 08_batching.md, 08b_..., 08c_...
CHAPTER = re.compile(r"0[0-8][a-z]?_\w+\.md")


def chapters() -> list[Path]:
    return sorted(p for p in BOOK.glob("*.md") if CHAPTER.fullmatch(p.name))


def mentions(text: str) -> list[tuple[int, str]]:
    """Each mention with its line number (1-based), one entry per match."""
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1) for m in MENTION.finditer(line)]


def test_the_chapters_are_found():
    """Chapters 0 to 8c: eleven pages, from the first estimate to many GPUs (so the test below cannot pass empty)."""
    names = [p.name for p in chapters()]
    assert len(names) == 11 and names[0] == "00_first_estimate.md" and names[-1] == "08c_many_gpus.md", names


def test_mentions_counts_each_match_case_ignored():
    """Four mentions on three lines, counted by hand; "lab" or "envelope" alone is not a mention."""
    text = "By the lab's method.\nAn Erratum, and the ERRATA.\nThe six-step plan; the lab; an envelope."
    assert mentions(text) == [(1, "the lab's"), (2, "Erratum"), (2, "ERRATA"), (3, "six-step")]


@pytest.mark.parametrize("page", chapters(), ids=lambda p: p.stem)
def test_chapter_names_the_sources_methods_at_most_four_times(page: Path):
    found = mentions(page.read_text(encoding="utf-8"))
    lines = ", ".join(f"{n} ({word!r})" for n, word in found)
    assert len(found) <= LIMIT, (
        f"{page.name} names the sources' methods or errata {len(found)} times (at most {LIMIT}), at lines {lines}: "
        "lead with the course's method and move the source's figures to book/16_sources.md"
    )
