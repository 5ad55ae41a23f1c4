"""The interview practice of the chapter *Drills* live in the browser, at a desktop's width and a phone's (collected
from tests/browser/test_site.py, on its server and chromium, as phone_checks.py is).

A reader presses "Run live" on the practice, answers today's first card (an answer the checker cannot read first:
told, not counted; then the worked answer: graded right), and reloads the page: the live practice, started again,
finds the card in box 2 and deals the next one, because the page kept the progress in its localStorage
(``llmcourse.page_store``). The expected card and answer are computed here, by the package in CPython, for the same
day (the browser's Python deals the same card and variant: both follow the card's id, the day and its reviews).
On the desktop the mock interview is started and answered too. The page must not scroll sideways at 390 px with the
live widgets in it, and nothing may leave 127.0.0.1 or raise a script error.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

pytestmark = pytest.mark.browser

PAGE = "book/15_drills.html"
LIVE_TIMEOUT_MS = 240_000


def _start_live(page: Any, n: int) -> float:
    """Press the n-th "Run live" of the page; wait until its cell is live. Returns the page's own start time, s."""
    root = page.locator(".llmcourse-live").nth(n)
    root.locator(".llmcourse-live-run").click()
    page.wait_for_function(
        "n => document.querySelectorAll('.llmcourse-live')[n].dataset.state !== 'starting'",
        arg=n,
        timeout=LIVE_TIMEOUT_MS,
    )
    assert root.get_attribute("data-state") == "live", root.inner_text()
    return int(root.get_attribute("data-ready-ms")) / 1000


def _practice_index(page: Any) -> int:
    codes = page.eval_on_selector_all(".llmcourse-live", "els => els.map(e => e.dataset.code || '')")
    return next(i for i, c in enumerate(codes) if "Practice()" in c)


def _answer(scope: Any, text: str, button: str) -> float:
    """Type ``text`` into the live widget's answer box and press ``button``; wait for new feedback. Seconds taken."""
    feedback = scope.locator("p[style*='color']")
    before = feedback.all_inner_texts()
    box = scope.locator(".widget-text input[type=text]").first
    box.fill(text)
    t0 = time.monotonic()
    scope.locator("button", has_text=button).first.click()
    while time.monotonic() < t0 + 60:
        now = feedback.all_inner_texts()
        if now != before and now:
            return time.monotonic() - t0
        time.sleep(0.02)
    raise AssertionError(f"no feedback to {text!r} within 60 s")


def _feedback(scope: Any) -> str:
    return scope.locator("p[style*='color']").last.inner_text()


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390])
def test_practice_keeps_progress_over_a_reload(browser: Any, server: str, request: Any, width: int) -> None:
    from test_site import SITE, Recorder, Watch, skip_or_fail

    from llmcourse import page_store
    from llmcourse.widgets.interview import STORE_KEY, Practice

    skip_or_fail()
    if not (SITE / PAGE).exists():
        pytest.skip(f"{PAGE} is not in the built book")
    today = dt.date.today()
    page_store.fill({})
    here = Practice(today=today)  # what the browser's Python deals to a new reader today
    first, answer = here.card, here.answer_text
    here.check(answer)
    here.deal()
    second = here.card
    page_store.fill({})

    rec = Recorder(server)
    w = rec.current = Watch()
    context = browser.new_context(viewport={"width": width, "height": 900})
    rec.attach(context)
    page = context.new_page()
    t0 = time.monotonic()
    page.goto(f"{server}/{PAGE}", wait_until="load")
    loaded = time.monotonic() - t0
    n = _practice_index(page)
    ready = _start_live(page, n)
    scope = page.locator(".llmcourse-live-cell").nth(n).locator(".llmcourse-live-output")
    scope.locator(".llmcourse-practice").wait_for(timeout=30_000)
    assert first.title in scope.inner_text()
    _answer(scope, "lots", "Check")
    assert "Not counted" in _feedback(scope) or "Not read" in _feedback(scope), _feedback(scope)
    graded = _answer(scope, answer, "Check")
    assert _feedback(scope).startswith("Correct"), _feedback(scope)
    assert "today 1/1 right" in scope.inner_text()
    kept = page.evaluate(f"() => localStorage.getItem({STORE_KEY!r})")
    assert kept and f'"{first.id}"' in kept
    if width < 500:
        assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth + 1"), "scrolls sideways"

    page.reload(wait_until="load")
    again = _start_live(page, n)
    scope = page.locator(".llmcourse-live-cell").nth(n).locator(".llmcourse-live-output")
    scope.locator(".llmcourse-practice").wait_for(timeout=30_000)
    text = scope.inner_text()
    assert "cards seen 1, by box 1: 0, 2: 1" in text, text  # the card answered before the reload, in box 2
    assert second.title in text, text  # and today's set goes on with the next card

    if width >= 1000:  # the mock: started, one answer not read, one graded
        m = next(
            i
            for i, c in enumerate(
                page.eval_on_selector_all(".llmcourse-live", "els => els.map(e => e.dataset.code || '')")
            )
            if "Mock()" in c
        )
        _start_live(page, m)
        mock = page.locator(".llmcourse-live-cell").nth(m).locator(".llmcourse-live-output")
        mock.locator(".llmcourse-mock").wait_for(timeout=30_000)
        mock.locator("button", has_text="Start the mock").click()
        mock.get_by_text("Question 1 of").wait_for(timeout=30_000)
        _answer(mock, "a few GPUs", "Answer")
        assert "Not" in _feedback(mock), _feedback(mock)
        _answer(mock, "12", "Answer")
        assert "A strong answer" in _feedback(mock) or "Not yet" in _feedback(mock), _feedback(mock)
    context.close()
    for name, secs in [
        (f"drills page load at {width} px", loaded),
        (f"practice live, from the click ({width} px, first start)", ready),
        (f"practice live after a reload ({width} px)", again),
        (f"time to grade an answer ({width} px)", graded),
    ]:
        request.node.user_properties.append(("live timing", (name, round(secs, 3))))
    assert w.clean() == ([], [], []), w.clean()
