"""Acting from the dashboard in a real browser: a schedule paused, resumed, run now and
its jobs listed."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, shot, sign_in, strict, wait_for

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def test_pause_resume_and_run_a_schedule_now_then_see_its_jobs(
        server: Server, page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        assert api.post("/api/v1/task-types", json={
            "name": "report", "handler": "shell:echo report {day}"}).status_code == 201
        api.post("/api/v1/schedules", json={"name": "daily-report", "type": "report",
                                            "cron": "0 6 * * *", "args": {"day": "today"}})
    sign_in(page, server)
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{server.url}/#/schedules")
    row = "tr[data-name=daily-report]"
    page.click(f"{row} button[data-act=pause]")
    page.wait_for_selector(f"{row} button[data-act=resume]")
    assert "paused" in page.inner_text(row)
    with server.api() as api:
        assert api.get("/api/v1/schedules/daily-report").json()["paused"] is True
    page.click(f"{row} button[data-act=resume]")
    page.wait_for_selector(f"{row} button[data-act=pause]")
    page.click(f"{row} button[data-act=run]")
    page.wait_for_selector(".toast:has-text('submitted')")
    shot(page, "schedules-actions")
    page.click(f"{row} a[data-act=jobs]")
    page.wait_for_selector("#scope:has-text('daily-report')")
    wait_for("its run", lambda: page.locator(
        "#results tbody tr[data-state=succeeded]").count() == 1)
    page.click("#results tbody tr")
    page.wait_for_selector("#stdout:has-text('report today')")
    assert violations == [], violations
