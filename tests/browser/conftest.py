"""Fixtures of the browser tests: a fresh Chromium profile per test, a real server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import CHROMIUM, CHROMIUM_ARGS, Server, start_server
from playwright.sync_api import Page, Playwright, sync_playwright


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    with sync_playwright() as p:
        yield p


@pytest.fixture
def page(playwright: Playwright, tmp_path: Path) -> Iterator[Page]:
    # A persistent context on a new folder: a fresh user-data dir for every test. Playwright
    # evaluates the string predicates of wait_for_function with eval, which the dashboard's
    # CSP refuses: bypassed here; test_dashboard_security.py runs every page under it.
    context = playwright.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True,
        args=CHROMIUM_ARGS, viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(90_000)
    yield page
    context.close()


@pytest.fixture
def strict_page(playwright: Playwright, tmp_path: Path) -> Iterator[Page]:
    """A page that enforces the CSP (``page`` bypasses it for Playwright's own evals)."""
    context = playwright.chromium.launch_persistent_context(
        str(tmp_path / "strict"), executable_path=CHROMIUM, headless=True,
        args=CHROMIUM_ARGS, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(90_000)
    yield page
    context.close()


@pytest.fixture
def server(db_url: str) -> Iterator[Server]:
    started = start_server(db_url)
    yield started
    err = started.stop()
    assert "Traceback" not in err, err
