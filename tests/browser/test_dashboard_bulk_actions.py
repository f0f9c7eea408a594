"""Bulk actions from the Jobs page in a real browser: retry every failed job of a type
and cancel every waiting one, each after a confirmation showing the count."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, shot, sign_in, strict, wait_for

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def test_retry_every_failed_job_of_a_type_then_cancel_the_held_ones(
        server: Server, page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        for body in ({"name": "flaky", "handler": "shell:exit 3"},
                     {"name": "held", "handler": "shell:true"}):
            assert api.post("/api/v1/task-types", json=body).status_code == 201
        failed = [api.post("/api/v1/jobs", json={"type": "flaky"}).json()["id"]
                  for _ in range(3)]
        held = [api.post("/api/v1/jobs", json={"type": "held", "pools": ["nowhere"]}
                         ).json()["id"] for _ in range(4)]
        wait_for("the flaky jobs to fail", lambda: all(
            api.get(f"/api/v1/jobs/{i}").json()["state"] == "failed" for i in failed), 120)
    sign_in(page, server)
    page.goto(f"{server.url}/#/jobs?type=flaky&state=failed")
    page.wait_for_selector("#results table.jobs")
    asked: list[str] = []

    def accept(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    page.click("#bulk-retry")
    wait_for("the retries", lambda: "Retried 3 job(s)" in (page.text_content("#toast") or ""))
    assert asked == ["Retry 3 job(s) matching this search?"]
    with server.api() as api:
        wait_for("a second attempt each", lambda: all(
            len(api.get(f"/api/v1/jobs/{i}").json()["attempts"]) == 2 for i in failed), 120)
    page.goto(f"{server.url}/#/jobs?type=held")
    page.wait_for_selector("#results table.jobs")
    page.click("#bulk-cancel")
    wait_for("the cancels", lambda: "Canceled 4 job(s)" in (page.text_content("#toast") or ""))
    assert asked[-1] == "Cancel 4 job(s) matching this search?"
    shot(page, "jobs-bulk-cancel")
    with server.api() as api:
        assert {api.get(f"/api/v1/jobs/{i}").json()["state"] for i in held} == {"canceled"}
        # A read token gets no bulk buttons (and the route refuses it).
        refused = api.post("/api/v1/jobs/bulk/cancel", params={"type": "held"},
                           headers={"Authorization": "Bearer ty_wrong"})
        assert refused.status_code == 401
    assert violations == [], violations
