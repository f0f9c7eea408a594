"""Jobs search in a real browser: text in args, a job id, state and type, pool, time
range and order, under a strict Content-Security-Policy."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, shot, sign_in, strict, wait_for

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def rows(page: Any) -> list[int]:
    return [int(i) for i in page.eval_on_selector_all(
        "#results table.jobs tbody tr", "trs => trs.map(t => t.dataset.id)")]


def test_search_jobs_by_text_id_state_type_and_time(server: Server, page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        for body in ({"name": "invoice", "handler": "shell:echo {customer}"},
                     {"name": "refund", "handler": "shell:exit 2"}):
            assert api.post("/api/v1/task-types", json=body).status_code == 201
        invoices = [api.post("/api/v1/jobs", json={"type": "invoice", "args": {
            "customer": f"ACME-{n}"}}).json()["id"] for n in range(12)]
        refunds = [api.post("/api/v1/jobs", json={"type": "refund", "args": {
            "customer": f"ACME-{n}"}, "pools": ["default", "billing"]}).json()["id"]
            for n in range(3)]
        wait_for("every job to end", lambda: all(
            api.get(f"/api/v1/jobs/{i}").json()["state"] in ("succeeded", "failed")
            for i in invoices + refunds), 120)
    sign_in(page, server)
    page.goto(f"{server.url}/#/jobs")
    page.wait_for_selector("#results table.jobs")
    assert rows(page) == (invoices + refunds)[::-1]
    page.fill("#filter-q", "acme-7")
    page.press("#filter-q", "Enter")
    wait_for("one invoice", lambda: rows(page) == [invoices[7]])
    assert page.inner_text("#results .table-foot").strip() == "1 shown"
    shot(page, "jobs-search")
    page.fill("#filter-q", f"#{refunds[1]}")
    page.press("#filter-q", "Enter")
    wait_for("the job by id", lambda: rows(page) == [refunds[1]])
    page.fill("#filter-q", "")
    page.select_option("#filter-state", "failed")
    wait_for("the refunds", lambda: rows(page) == refunds[::-1])
    page.fill("#filter-type", "invoice")
    page.press("#filter-type", "Enter")
    wait_for("no failed invoice", lambda: page.locator("#results .empty").count() == 1)
    page.goto(f"{server.url}/#/jobs?pool=billing&since=1h&sort=created")
    wait_for("the refunds, oldest first", lambda: rows(page) == refunds)
    assert page.input_value("#filter-sort") == "created"
    assert page.input_value("#filter-since") == "1h"
    assert violations == [], violations
