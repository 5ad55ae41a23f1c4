"""What each chapter's exercise section says about auto-checked versions is true: every exercise of
the chapter has a twin in ``llmcourse.exercises`` (same label), except exactly those the tip names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmcourse.exercises.engine import CHAPTERS, exercises

BOOK = Path(__file__).resolve().parents[1] / "book"
TIP = re.compile(r"Each exercise below (?:except ([\d, and]+?) \([^)]*\) )?has an auto-checked version")


def _chapter_file(key: str) -> Path:
    found = [p for p in BOOK.glob("*.md") if re.fullmatch(rf"\d\d[a-z]?_{key}\.md", p.name)]
    assert len(found) == 1, (key, found)
    return found[0]


@pytest.mark.parametrize("key", list(CHAPTERS))
def test_tip_names_exactly_the_exercises_without_a_twin(key: str) -> None:
    text = _chapter_file(key).read_text(encoding="utf-8")
    labels = re.findall(r"```\{exercise\}\s*\n:label: (\w+_ex(\d+))", text)
    twins = {e.id for e in exercises(key)}
    if not labels:  # a chapter with no exercises of its own says how many auto-checked ones it has
        words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
        stated = re.search(r"(\w+) auto-checked exercises", text)
        assert stated, f"{key}: no exercise blocks, and no sentence saying how many auto-checked exercises there are"
        assert words.index(stated.group(1).lower()) + 1 == len(twins), (stated.group(0), len(twins))
        return
    without = [int(n) for label, n in labels if label not in twins]
    tip = TIP.search(text)
    assert tip, f"{key}: the exercise section does not say which exercises are auto-checked"
    said = [int(n) for n in re.findall(r"\d+", tip.group(1) or "")]
    assert said == without, f"{key}: the tip names {said} as not auto-checked; the registry lacks {without}"
