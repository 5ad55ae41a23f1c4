"""Checks of the built book on a phone (collected from tests/browser/test_site.py, which shares its one server and
chromium with them: a second sync Playwright session cannot start in the same process).

The built book on a phone (390 x 844) and on a desktop (1280 px), in headless chromium (as tests/browser/test_site.py:
the site of ``$LLMCOURSE_SITE`` or ``_build/html``, served on 127.0.0.1; skipped without a built site or chromium).

On a phone, for every chapter page: the page itself never scrolls sideways (a wide table or equation scrolls inside its
own box); code and outputs wrap (no box of code scrolls sideways, so no number is cut at its edge); every image has an
alt text that says what it shows (not its file path); every figure's text reads at 9 px or more, from the smallest font
the figure was drawn with (its PNG says, ``llmcourse.plots``) scaled by the width it is shown at, unless the figure is
wider than a phone figure (several panels side by side) and a tap opens it at full size. On a desktop, code does not
scroll sideways either. One browser, every page in one loop.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

sys.path.insert(0, str(ROOT / "_ext"))
from book_layout import png_text  # noqa: E402 (after _ext is on the path)

pytestmark = pytest.mark.browser

READABLE_PX = 9.0
#: a figure drawn wider than this (px) may rely on its zoom link (tap: the full-size image) instead
WIDE_PX = 700
MIN_FONT_KEY = "llmcourse-min-font-px"
LOOK = """() => {
  const W = innerWidth;
  const scrolls = sel => [...document.querySelectorAll(sel)].filter(e => e.scrollWidth > e.clientWidth + 1)
      .map(e => e.textContent.trim().slice(0, 60));
  return {
    scrollWidth: document.documentElement.scrollWidth, innerWidth: W,
    code: scrolls('.bd-article div.highlight pre, .bd-article .cell_output pre'),
    imgs: [...document.querySelectorAll('.bd-article img')].map(i => ({
      src: i.getAttribute('src'), alt: i.getAttribute('alt') || '', shown: i.getBoundingClientRect().width,
      natural: i.naturalWidth, zoom: !!i.closest('a.image-reference, a[href$=".png"]') })),
  }; }"""


def chapters() -> list[str]:
    from test_site import pages  # test_site imports this module at its end: no import at the top

    return [p for p in pages() if p.startswith(("book/", "exercises/"))]


#: pages loading at once in one context: most of a page's load is waiting (for its scripts, MathJax, and 500 ms
#: without a request for "networkidle"), which pages loading side by side share; each page is read only once it is
#: loaded, idle and typeset, as when it loaded alone
AT_ONCE = 4


def _looks(browser: Any, server: str, viewport: dict[str, int]) -> list[tuple[str, dict[str, Any]]]:
    """What :data:`LOOK` reads on every chapter page at ``viewport`` (each page loaded, network idle, equations
    typeset), in page order; :data:`AT_ONCE` pages load side by side in one context."""
    context = browser.new_context(viewport=viewport)
    paths, out = chapters(), []
    for i in range(0, len(paths), AT_ONCE):
        batch = [(path, context.new_page()) for path in paths[i : i + AT_ONCE]]
        for path, page in batch:
            page.goto(f"{server}/{path}", wait_until="commit")
        for path, page in batch:
            page.wait_for_load_state("load")
            page.wait_for_load_state("networkidle")
            if page.locator(".math").count():
                page.wait_for_selector("mjx-container", state="attached", timeout=20_000)
            out.append((path, page.evaluate(LOOK)))
            page.close()
    context.close()
    return out


def _is_path(alt: str) -> bool:
    return not alt.strip() or "_images/" in alt or bool(re.search(r"\.(png|svg|jpe?g|gif)$", alt.strip()))


def test_chapters_read_on_a_phone(browser: Any, server: str) -> None:
    from test_site import SITE, skip_or_fail

    skip_or_fail()
    problems: list[str] = []
    sizes: list[str] = []
    for path, r in _looks(browser, server, {"width": 390, "height": 844}):
        if r["scrollWidth"] > r["innerWidth"] + 1:
            problems.append(f"{path}: the page scrolls sideways ({r['scrollWidth']} px > {r['innerWidth']})")
        problems += [f"{path}: code scrolls sideways at 390 px: {c!r}" for c in r["code"]]
        for img in r["imgs"]:
            if _is_path(img["alt"]):
                problems.append(f"{path}: an image's alt text is its file path or empty: {img['alt']!r}")
            text = png_text(SITE / Path(path).parent / img["src"])
            if MIN_FONT_KEY not in text or not img["natural"]:
                problems.append(f"{path}: {img['src']} does not say the font size it was drawn with")
                continue
            shown = float(text[MIN_FONT_KEY]) * img["shown"] / img["natural"]
            sizes.append(f"{path}: {img['src'].rsplit('/', 1)[-1][:10]} {shown:.1f} px")
            if shown < READABLE_PX and not (img["natural"] > WIDE_PX and img["zoom"]):
                problems.append(f"{path}: figure text {shown:.1f} px at 390 px (< {READABLE_PX}): {img['src']}")
            if not img["zoom"]:
                problems.append(f"{path}: figure without a link to its full size: {img['src']}")
    print("\n".join(sizes))
    assert not problems, "\n".join(problems)


def test_code_does_not_scroll_on_a_desktop(browser: Any, server: str) -> None:
    from test_site import skip_or_fail

    skip_or_fail()
    problems = []
    for path, r in _looks(browser, server, {"width": 1280, "height": 900}):
        problems += [f"{path}: code scrolls sideways at 1280 px: {c!r}" for c in r["code"]]
        if r["scrollWidth"] > r["innerWidth"] + 1:
            problems.append(f"{path}: the page scrolls sideways at 1280 px")
    assert not problems, "\n".join(problems)
