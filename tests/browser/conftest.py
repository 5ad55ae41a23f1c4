"""The browser tests' shared fixtures: one server of the built site and one chromium for every test file of this
folder (a second sync Playwright session in the same process cannot start while the first runs)."""

from __future__ import annotations

import functools
import socketserver
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from test_site import BLACKHOLE_PROXY, SITE, _Handler, _skip_or_fail  # (it puts scripts/ on the path)


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    _skip_or_fail()
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(SITE)))
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="session")
def browser(server: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright
    from serve import CHROMIUM, CHROMIUM_FLAGS  # scripts/serve.py (test_site puts scripts/ on the path)

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, proxy=BLACKHOLE_PROXY)
        yield b
        b.close()
