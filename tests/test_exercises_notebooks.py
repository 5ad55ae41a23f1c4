"""The exercise notebooks are generated from the definitions: regenerating them changes nothing."""

import re
from pathlib import Path

import pytest

from llmcourse.errors import UnknownNameError
from llmcourse.exercises.engine import CHAPTERS, exercises
from llmcourse.exercises.notebooks import FILES, chapter_text, notebook, statement, write

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


@pytest.mark.parametrize("chapter", list(FILES))
def test_chapter_statements_are_the_definitions(chapter):
    """Each {exercise} block with a definition states the definition's story at the book's variant (and its
    follow-up): regenerating the chapter changes nothing."""
    path = ROOT / "book" / f"{FILES[chapter]}.md"
    text = path.read_text()
    assert chapter_text(text) == text, f"{path}: stale exercise statements: run python -m llmcourse.exercises.notebooks"


def test_a_statement_is_the_story_then_the_followup(monkeypatch):
    exercises()  # every definition loaded before the class is patched
    ex = exercises("weights")[3]
    monkeypatch.setattr(type(ex), "followup", property(lambda self: "How are the GPUs split?"), raising=False)
    text = statement(ex.id)
    assert text.endswith("How are the GPUs split?") and max(len(line) for line in text.splitlines()) <= 100
    block = f"```{{exercise}}\n:label: {ex.id}\n\nold words\n```\n"
    assert chapter_text(block) == f"```{{exercise}}\n:label: {ex.id}\n\n{text}\n```\n"
    alone = "````{exercise}\n:label: weights_ex99\nA question of the book alone.\n````\n"
    assert chapter_text(alone) == alone  # no definition: kept as written


def test_a_statement_stays_prose(monkeypatch):
    """Money is not math, and no wrapped line starts like a list item or a heading."""
    exercises()
    ex = exercises("weights")[3]
    words = " ".join(["word"] * 30)
    monkeypatch.setattr(
        type(ex), "followup", property(lambda self: f"Is $5 {words} + $3 {words} - 1. # more? Take $r_d$ and $2\\,P$.")
    )
    text = statement(ex.id)
    assert r"\$5" in text and r"\$3" in text and "$5" not in text.replace(r"\$5", "")
    assert "$r_d$" in text and r"$2\,P$" in text  # inline math is not money
    for line in text.splitlines():
        assert not re.match(r"(?:[-+*>#]|\d+[.)])\s", line), line


def test_a_block_keeps_its_options_and_nothing_after_it():
    exercises()
    ex = exercises("weights")[0]
    block = f"```{{exercise}}\n:label: {ex.id}\n:class: hard\n\nold words\n```  \n\nProse after.\n\n```{{code-cell}}\nx = 1\n```\n"
    out = chapter_text(block)
    assert (
        ":class: hard" in out
        and "old words" not in out
        and out.endswith("\n\nProse after.\n\n```{code-cell}\nx = 1\n```\n")
    )


@pytest.mark.parametrize("chapter", list(FILES))
def test_every_exercise_block_is_read(chapter):
    """An exercise block the generator cannot read (a title, an option before the label) would go stale unseen."""
    from llmcourse.exercises.notebooks import _BLOCK

    text = (ROOT / "book" / f"{FILES[chapter]}.md").read_text()
    assert len(_BLOCK.findall(text)) == len(re.findall(r"^`{3,}\{exercise\}", text, flags=re.M))
