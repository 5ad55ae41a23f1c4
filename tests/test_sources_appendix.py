"""The sources appendix (book/16_sources.md): in the table of contents after the interview track, a
section per source text, every figure and every erratum of the data file listed with the numbers the
data file gives (read here with json, formatted here), and no other chapter naming the source files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "16_sources.md"
ENTRIES = json.loads((ROOT / "llmcourse" / "data" / "source_figures.json").read_text(encoding="utf-8"))["figures"]
HEADINGS = {
    "000": "The back-of-the-envelope method",
    "001": "The interactive lab",
    "002": "The capacity-planning method",
    "004": "The estimation that matters",
}
SEED_FILE = re.compile(r"\b00\d_[0-9a-f]{16}\b|seeds/")


def printed(value, tolerance) -> str:
    """A figure the way the data file says the source rounds it (independent of llmcourse.planner.sources)."""
    if value is None or isinstance(value, bool):
        return {None: "none", True: "yes", False: "no"}[value]
    if isinstance(value, str):
        return value
    digits = tolerance["digits"]
    return f"{round(value, digits):,.{max(digits, 0)}f}"


def section(text: str, heading: str) -> str:
    """The page's source from ``## heading`` to the next ``## ``."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def rows(table: str) -> list[str]:
    """A Markdown table's body rows."""
    return [line for line in table.splitlines() if line.startswith("| ")][1:]


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def glued() -> dict:
    """Run the page's code cells in one namespace, keeping what each glue() call stores, by name."""
    import myst_nb

    out: dict = {}
    patch = pytest.MonkeyPatch()
    patch.setattr(
        myst_nb, "glue", lambda name, value, display=True: out.__setitem__(name, getattr(value, "data", value))
    )
    try:
        namespace: dict = {}
        for cell in jupytext.read(PAGE).cells:
            if cell.cell_type == "code":
                exec(compile(cell.source, str(PAGE), "exec"), namespace)
    finally:
        patch.undo()
    return out


def tables_in(text: str, glued: dict) -> list[str]:
    """The Markdown tables a stretch of the page shows with ``{glue:md}``, in order."""
    return [glued[name] for name in re.findall(r"```\{glue:md\} (\w+)", text)]


def test_page_is_the_appendix_part_after_the_interview_track():
    """_toc.yml: an unnumbered Appendix part holding the page (then the references), after Interview track, before
    Exercises."""
    parts = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["parts"]
    captions = [p["caption"] for p in parts]
    appendix = parts[captions.index("Appendix")]
    assert captions.index("Appendix") == captions.index("Interview track") + 1
    assert captions.index("Exercises") == captions.index("Appendix") + 1
    assert appendix["numbered"] is False and appendix["chapters"] == [
        {"file": "book/16_sources"},
        {"file": "book/references"},
    ]


def test_page_has_its_label_title_and_a_section_per_source(page):
    """The page opens with (sources)= and its title, and has a section heading for each source text."""
    assert page.startswith("---\njupytext:") and "\n(sources)=\n# Where the numbers come from\n" in page
    for heading in [*HEADINGS.values(), "Errata", "The course's own figures"]:
        assert f"\n## {heading}\n" in page, heading


def test_every_glued_name_the_page_shows_is_glued(page, glued):
    """Each {glue:text} and {glue:md} name the prose uses is set by the page's code."""
    names = set(re.findall(r"\{glue:text\}`(\w+)`", page)) | set(re.findall(r"```\{glue:md\} (\w+)", page))
    assert names and not names - set(glued)


@pytest.mark.parametrize("source", list(HEADINGS))
def test_each_source_section_lists_all_its_figures_with_the_printed_values(source, page, glued):
    """A source's figure table has one row per data entry, in order, showing the printed value and a mark."""
    entries = [e for e in ENTRIES if e["source"] == source]
    figures = [t for t in tables_in(section(page, HEADINGS[source]), glued) if "| printed |" in t]
    assert len(figures) == 1
    body = rows(figures[0])
    assert len(body) == len(entries)
    for row, entry in zip(body, entries, strict=True):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert any(printed(entry["expected"], entry.get("tolerance")) in c for c in cells[1:]), (entry["id"], row)
        assert ("erratum" in cells) == bool(entry.get("erratum")) and ("✓" in cells) != bool(entry.get("erratum"))


def test_errata_lists_every_erratum_with_both_numbers(page, glued):
    """One errata row per data entry with an erratum, holding what the source printed and what its method gives."""
    errata = [e for e in ENTRIES if e.get("erratum")]
    assert errata  # the data file has errata, so this test can fail
    table = tables_in(section(page, "Errata"), glued)[0]
    body = rows(table)
    assert len(body) == len(errata)
    for row, entry in zip(body, errata, strict=True):
        method = printed(entry["erratum_value"], entry.get("erratum_tolerance", entry.get("tolerance")))
        assert printed(entry["expected"], entry["tolerance"]) in row and method in row, (entry["id"], row)


def test_course_figures_are_all_shown_with_their_derivations(page, glued):
    """Every course figure's value and hand derivation appear in the course's table."""
    table = tables_in(section(page, "The course's own figures"), glued)[0]
    for entry in (e for e in ENTRIES if e["source"] == "course"):
        assert printed(entry["expected"], entry["tolerance"]) in table, entry["id"]
        assert entry["derivation"].split(":")[0].replace("$", r"\$") in table, entry["id"]


def test_figure_ids_stay_out_of_the_reader_text(glued):
    """No figure id appears in what the page shows (the ids are for maintainers)."""
    shown = "\n".join(str(v) for v in glued.values())
    assert not [e["id"] for e in ENTRIES if e["id"] in shown]


def test_no_other_chapter_page_names_the_source_files():
    """Only the appendix may speak of the source texts' files; no other page links them by file name."""
    pages = [p for p in (ROOT / "book").glob("*.md") if p != PAGE]
    assert len(pages) > 10
    assert not [p.name for p in pages if SEED_FILE.search(p.read_text(encoding="utf-8"))]
