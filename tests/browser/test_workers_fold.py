"""Workers & pools in a real browser: a worker restarted under the same name leaves one
row for its stopped runs (folded by name, with their count), not one per run."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, sign_in, strict, wait_for

from taskyard.store import open_store

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def test_stopped_workers_are_folded_by_name(server: Server, page: Any) -> None:
    violations = strict(page, server)
    store = open_store(server.db_url)
    try:
        for _ in range(3):  # three runs of one worker, each stopped
            worker = store.workers.register("batch-1", ["default"], 1, lease_seconds=30)
            store.workers.stop(worker.id)
    finally:
        store.close()
    sign_in(page, server)
    page.goto(f"{server.url}/#/workers?all=1")
    page.wait_for_selector("tr[data-name=batch-1]")
    rows = page.locator("#workers tr[data-name=batch-1]")
    assert rows.count() == 1
    assert rows.get_attribute("data-runs") == "3"
    assert rows.get_attribute("data-state") == "stopped"
    assert "3 runs" in rows.inner_text()
    page.goto(f"{server.url}/#/workers")
    page.wait_for_selector("#workers h2")
    assert page.locator("#workers tr[data-name=batch-1]").count() == 0
    assert violations == [], violations


def test_drain_a_worker_from_the_page(server: Server, page: Any) -> None:
    violations = strict(page, server)
    store = open_store(server.db_url)
    try:
        store.workers.register("spare", ["spare-pool"], 2, lease_seconds=600)
    finally:
        store.close()
    with server.api() as api:
        assert api.post("/api/v1/task-types", json={
            "name": "spare-job", "handler": "shell:true"}).status_code == 201
    sign_in(page, server)
    page.goto(f"{server.url}/#/workers")
    row = page.locator("#workers tr[data-name=spare]")
    row.wait_for()
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("button.drain").click()
    page.wait_for_selector("#workers tr[data-name=spare] .badge[data-state=draining]")
    assert row.locator("button.drain").count() == 0
    with server.api() as api:
        job = api.post("/api/v1/jobs", json={"type": "spare-job", "pools": ["spare-pool"]}).json()
        # The only worker of its pool takes nothing new: the job waits for room.
        wait_for("the job held for capacity", lambda: "no_capacity" in [
            e["code"] for e in api.get(f"/api/v1/jobs/{job['id']}").json()["explain"]])
        assert api.get(f"/api/v1/jobs/{job['id']}").json()["state"] == "pending"
        assert api.post("/api/v1/workers/nobody/drain").status_code == 404
    assert violations == [], violations
