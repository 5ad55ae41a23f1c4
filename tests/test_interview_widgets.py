"""The interview practice and mock as widgets (llmcourse.widgets.interview), and the page's store they keep progress
in (llmcourse.page_store, llmcourse._live's store messages): any typed answer gets feedback and never raises; the
Leitner boxes move by the rule and are kept; stored progress that cannot be read is set aside, never lost."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcourse import page_store
from llmcourse.errors import InputError
from llmcourse.interview import QUESTIONS
from llmcourse.interview.practice import answer_text, mock_chains
from llmcourse.widgets.interview import MAX_ANSWER, MOCKS_KEY, STORE_KEY, Mock, Practice

DAY = dt.date(2026, 3, 2)
STATUSES = {"correct", "wrong", "invalid", "closed"}


@pytest.fixture(autouse=True)
def empty_store() -> Iterator[None]:
    page_store.connect(None)
    page_store.fill({})
    yield
    page_store.connect(None)
    page_store.fill({})


def test_a_right_answer_moves_the_card_up_and_is_kept() -> None:
    p = Practice(today=DAY)
    first = p.card
    assert first.id == "weights_fit"  # new cards in the bank's order: the bank's first graded question
    said = p.check(p.answer_text)
    assert said.status == "correct" and "Next review: 2026-03-04 (box 2)" in said.message  # box 2: every 2^1 = 2 days
    assert (p.asked, p.right) == (1, 1)
    kept = json.loads(page_store.get(STORE_KEY))
    assert kept["cards"][first.id]["box"] == 2 and kept["topics"][first.topic] == [1, 1]
    again = Practice(today=DAY)  # a reload: the card is not dealt again today
    assert again.card.id != first.id and again.progress.cards[first.id].due == "2026-03-04"
    assert Practice(today=dt.date(2026, 3, 4)).card.id == first.id  # due two days later, before the new cards


def test_a_miss_sends_the_card_to_box_one() -> None:
    p = Practice(today=DAY)
    p.check(p.answer_text)
    later = Practice(today=dt.date(2026, 3, 4))
    assert later.card.id == "weights_fit"  # due again, first
    exact = later.card.key_figure(later.variant)
    ten_times = f"{10 * exact.m} {exact.units:~}" if hasattr(exact, "units") else f"{10 * exact}"
    said = later.check(ten_times)
    assert said.status == "wrong" and "(box 1)" in said.message and "2026-03-05" in said.message  # box 1: daily


def test_answers_that_cannot_be_read_do_not_count() -> None:
    p = Practice(today=DAY)
    for typed in ("", "   ", "lots", "5 s", "x" * (MAX_ANSWER + 1), None):
        said = p.check(typed)
        assert said.status == "invalid", (typed, said)
    assert p.asked == 0 and page_store.get(STORE_KEY) is None  # nothing counted, nothing kept
    assert p.check(p.answer_text).status == "correct"
    assert p.check(p.answer_text).status == "closed"  # one answer a card: the next card is a press away


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=80), st.from_regex(r"-?[0-9.,eE+]{1,12} ?(KiB|GB|tok/s|ms|GPUs|%|\$)?")))
def test_any_typed_answer_gets_feedback(typed: str) -> None:
    p = Practice(n=2, today=DAY)
    said = p.check(typed)
    assert said.status in STATUSES and said.message
    assert (p.asked == 1) == (said.status in ("correct", "wrong"))
    m = Mock(seed=3, clock=lambda: 0.0)
    m.start(next(iter(m.chains)))
    said = m.submit(typed)
    assert said.status in STATUSES and said.message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.text(max_size=200),
        st.recursive(
            st.none() | st.integers() | st.text(max_size=5),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        ).map(json.dumps),
    )
)
def test_any_stored_progress_is_read_or_set_aside(text: str) -> None:
    page_store.fill({STORE_KEY: text})
    p = Practice(today=DAY)  # never raises
    if p.note:  # unreadable: kept aside, the reader starts afresh
        assert page_store.get(STORE_KEY + ".unreadable") == text and p.progress.cards == {}
    assert p.check(p.answer_text).status == "correct"


def test_a_stored_progress_with_bad_counts_is_set_aside() -> None:
    bad = {"format": "llmcourse-interview-progress", "version": 1, "cards": {}, "topics": {"memory": [3, 1]}}
    page_store.fill({STORE_KEY: json.dumps(bad)})
    p = Practice(today=DAY)
    assert "could not be read" in p.note and p.progress.topics == {}


def test_forget_my_progress() -> None:
    p = Practice(today=DAY)
    p.check(p.answer_text)
    p.reset_button.click()
    assert json.loads(page_store.get(STORE_KEY))["cards"] == {} and p.card.id == "weights_fit"


def test_a_bad_topic_or_count_is_refused() -> None:
    with pytest.raises(InputError, match="--topic"):
        Practice(topic="nonsense")
    with pytest.raises(InputError, match="cards a day"):
        Practice(n=0)
    with pytest.raises(InputError, match="minutes"):
        Mock(minutes=0)


def test_a_mock_scores_by_competency_and_keeps_its_score() -> None:
    t = [0.0]
    m = Mock(minutes=10, seed=5, clock=lambda: t[0])
    cid = next(iter(mock_chains()))
    first = m.start(cid)
    assert first is QUESTIONS.chains()[cid][0]
    assert m.submit("lots").status == "invalid" and m.i == 0  # not read: the same question again
    m.submit(answer_text(m.qs[0], m.variant))
    t[0] = 11 * 60  # eleven minutes in, over the ten allowed
    said = m.submit(answer_text(m.qs[1], m.variant))
    assert said.status == "late" and not m.running
    assert sum(r for r, _a in m.score.values()) == 1 and sum(a for _r, a in m.score.values()) == len(m.qs)
    kept = json.loads(page_store.get(MOCKS_KEY))
    assert kept[-1]["right"] == 1 and kept[-1]["asked"] == len(m.qs) and kept[-1]["chain"] == cid
    assert m.submit("1").status == "closed"


def test_the_page_store_keeps_only_the_books_keys() -> None:
    page_store.fill({"llmcourse:a": "1", "theme": "dark", "llmcourse:b": 3, 4: "x"})
    assert (
        page_store.get("llmcourse:a") == "1"
        and page_store.get("theme") is None
        and page_store.get("llmcourse:b") is None
    )
    with pytest.raises(InputError, match="starting with"):
        page_store.put("theme", "light")
    with pytest.raises(InputError, match="must be text"):
        page_store.put("llmcourse:a", 5)  # type: ignore[arg-type]


def test_the_live_python_hands_the_page_its_store_and_back() -> None:
    from llmcourse import _live

    sent: list[dict] = []
    _live.install(lambda text, buffers: sent.append(json.loads(text)))
    try:
        code = (
            "from llmcourse import page_store\n"
            "page_store.put('llmcourse:n', str(int(page_store.get('llmcourse:n')) + 1))\n"
        )
        assert _live.run(code, 1, json.dumps({"llmcourse:n": "41", "other": "x"})) is None
        assert {"msg_type": "store", "key": "llmcourse:n", "value": "42"} in sent
        assert _live.run("from llmcourse import page_store\npage_store.get('other')", 2, "not json") is None
    finally:
        _live.uninstall()
    assert page_store.get("llmcourse:n") is None  # "not json": the page's entries read as none
