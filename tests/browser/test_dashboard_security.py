"""The dashboard under its Content-Security-Policy in a real browser (issue 36, F4): every
page works and the browser reports no violation; the token is kept for the tab only
unless "remember" is ticked (it is not by default)."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
"""


def test_every_page_runs_under_the_csp(server: Server, strict_page: Any) -> None:
    page = strict_page
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.add_init_script(WATCH)
    with server.api() as api:
        api.post("/api/v1/task-types", json={"name": "step", "handler": "shell:echo {what}"})
        graph = api.post("/api/v1/graphs", json={"tasks": {
            "a": {"type": "step", "args": {"what": "a"}},
            "b": {"type": "step", "requires": ["a"], "args": {"what": "b"}}}}).json()
        api.post("/api/v1/schedules", json={"name": "s", "type": "step", "every": "1h",
                                            "args": {"what": "s"}, "paused": True})
    answer = page.goto(server.url + "/")
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    page.wait_for_selector("#signin[open]")
    assert not page.is_checked("#remember")
    page.fill("#token-input", server.token)
    page.click("#signin-button")
    page.wait_for_selector("#live.on")
    assert page.evaluate("localStorage.getItem('taskyard.token')") is None
    assert page.evaluate("sessionStorage.getItem('taskyard.token')") == server.token
    for route, ready in ((f"#/graphs/{graph['id']}", "#dag canvas"), ("#/graphs", "h1"),
                         ("#/jobs", "table.jobs tbody tr"),
                         (f"#/jobs/{graph['jobs'][0]['id']}", "h1:text-matches('Job #')"),
                         ("#/workers", "h1"), ("#/schedules", "tr[data-name=s]"),
                         ("#/", "h1:text('Overview')")):
        page.goto(f"{server.url}/{route}")
        page.wait_for_selector(ready)
    assert page.evaluate("window.__violations") == []
    assert not [line for line in console if "Content Security Policy" in line], console
    # Ticked, the token outlives the tab (and only one copy is kept).
    page.click("#signout")
    page.wait_for_selector("#signin[open]")
    page.fill("#token-input", server.token)
    page.check("#remember")
    page.click("#signin-button")
    page.wait_for_selector("#live.on")
    assert page.evaluate("localStorage.getItem('taskyard.token')") == server.token
    assert page.evaluate("sessionStorage.getItem('taskyard.token')") is None
