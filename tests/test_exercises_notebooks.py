"""The exercise notebooks are generated from the definitions: regenerating them changes nothing."""

from pathlib import Path

import pytest

from llmcourse.errors import UnknownNameError
from llmcourse.exercises.engine import CHAPTERS, exercises
from llmcourse.exercises.notebooks import FILES, notebook, write

ROOT = Path(__file__).resolve().parents[1]


def test_every_chapter_has_a_notebook_file():
    assert set(FILES) == set(CHAPTERS)
    on_disk = {p.stem for p in (ROOT / "exercises").glob("*.md")}
    assert on_disk == set(FILES.values())
    for stem in FILES.values():  # named as the chapter it belongs to
        assert (ROOT / "book" / f"{stem}.md").exists(), stem


@pytest.mark.parametrize("chapter", list(FILES))
def test_regenerating_changes_nothing(chapter):
    """Edit the definitions, then run `python -m llmcourse.exercises.notebooks`: never the notebook."""
    path = ROOT / "exercises" / f"{FILES[chapter]}.md"
    assert path.read_text() == notebook(chapter), f"{path} is stale: run python -m llmcourse.exercises.notebooks"


def test_a_changed_definition_changes_the_notebook(tmp_path, monkeypatch):
    """The test above can fail: a retitled exercise shows in the regenerated notebook, and write() reports it."""
    (tmp_path / "exercises").mkdir()
    assert len(write(tmp_path)) == len(FILES)
    assert write(tmp_path) == []  # up to date
    ex = exercises("tokens")[0]
    monkeypatch.setattr(type(ex), "title", property(lambda self: "A retitled exercise"), raising=False)
    assert "## 1. A retitled exercise" in notebook("tokens")
    assert [p.name for p in write(tmp_path) if p.name == "01_tokens.md"] == ["01_tokens.md"]


def test_answer_lines_say_what_the_checker_reads():
    text = notebook("design_review")
    whole = [e for e in exercises("design_review") if e.integer and not e.unit]
    assert whole and text.count("# your answer: a whole number") == len(whole)
    assert '# your answer, e.g. Q_(value, "B"); a bare number is read as B' in notebook("weights")


def test_unknown_chapter_is_named():
    with pytest.raises(UnknownNameError, match="known: first_estimate"):
        notebook("tokenz")
