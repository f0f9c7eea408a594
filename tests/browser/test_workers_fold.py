"""Workers & pools in a real browser: a worker restarted under the same name leaves one
row for its stopped runs (folded by name, with their count), not one per run."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, sign_in, strict

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
