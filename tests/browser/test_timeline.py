"""A graph's timeline (Gantt) in a real browser: durations, the critical path outlined,
"critical path only", a click opens the job; the graphs list shows each graph's time."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, shot, sign_in, strict, wait_for

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

RELEASE = {
    "routing": "release",
    "tasks": {
        "checkout": {"type": "step", "args": {"pause": 0.2}},
        "compile": {"type": "step", "requires": ["checkout"], "args": {"pause": 1.5}},
        "lint": {"type": "step", "requires": ["checkout"], "args": {"pause": 0.2}},
        "docs": {"type": "step", "requires": ["checkout"], "args": {"pause": 0.4}},
        "test": {"type": "step", "requires": ["compile"], "args": {"pause": 0.8}},
        "package": {"type": "step", "requires": ["test", "lint", "docs"], "args": {"pause": 0.2}},
    },
}


def test_a_graph_s_timeline_shows_durations_and_its_critical_path(
        server: Server, page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        assert api.post("/api/v1/task-types", json={
            "name": "step", "handler": "shell:sleep {pause}"}).status_code == 201
        graph = api.post("/api/v1/graphs", json=RELEASE).json()
        wait_for("the release graph", lambda: api.get(
            f"/api/v1/graphs/{graph['id']}").json()["state"] == "finished", 120)
    sign_in(page, server)
    page.goto(f"{server.url}/#/graphs/{graph['id']}")
    page.click(".tabs button[data-tab=timeline]")
    page.wait_for_selector("#gantt svg .row")
    assert page.locator("#gantt .row").count() == 6
    critical = page.eval_on_selector_all(
        "#gantt .row.critical", "rows => rows.map(r => r.dataset.label)")
    assert set(critical) == {"checkout", "compile", "test", "package"}, critical
    assert "critical path: 4 job(s)" in page.inner_text("#gantt .gantt-note")
    compile_row = page.locator("#gantt .row[data-label=compile] .dur").text_content() or ""
    assert compile_row.endswith("s") and float(compile_row[:-1]) >= 1.0, compile_row
    shot(page, "graph-timeline")
    page.check("#critical-only")
    wait_for("the critical path alone", lambda: page.locator("#gantt .row").count() == 4)
    page.click("#gantt .row[data-label=compile]")
    page.wait_for_selector("h1:text-matches('Job #')")
    page.goto(f"{server.url}/#/graphs")
    took = page.locator(f"tr[data-id='{graph['id']}'] td[data-took]").inner_text()
    assert took.endswith("s"), took
    assert violations == [], violations
