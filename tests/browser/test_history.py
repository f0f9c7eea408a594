"""History charts in a real browser: the overview's throughput, queue depth, waits,
failures and cycle times from stored history, over an hour, a day and a week; a pool's
and a task type's pages."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, shot, sign_in, strict, wait_for

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def test_charts_of_the_overview_a_pool_and_a_type(server: Server, page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        for body in ({"name": "resize", "handler": "shell:sleep 0.2"},
                     {"name": "flaky", "handler": "shell:exit 1", "pools": ["edge", "default"]},
                     {"name": "later", "handler": "shell:true", "pools": ["nobody"]}):
            assert api.post("/api/v1/task-types", json=body).status_code == 201
        ok = [api.post("/api/v1/jobs", json={"type": "resize"}).json()["id"] for _ in range(6)]
        bad = [api.post("/api/v1/jobs", json={"type": "flaky"}).json()["id"] for _ in range(2)]
        for _ in range(3):
            api.post("/api/v1/jobs", json={"type": "later"})  # stays pending: queue depth
        wait_for("the jobs", lambda: all(api.get(f"/api/v1/jobs/{i}").json()["state"] in (
            "succeeded", "failed") for i in ok + bad), 120)
        # The scheduler's history keeper samples the queue depth every 10 s; on PostgreSQL
        # the history counts an event once every older transaction of the cluster ended
        # (another test's too): the page is read once both are there.
        wait_for("a depth reading and every end counted", lambda: (
            (h := api.get("/api/v1/history").json())["totals"]["finished"] == 8
            and any(p["depth"] for p in h["points"])), 120)
    sign_in(page, server)
    page.wait_for_selector("#history #chart-throughput svg")
    assert page.locator("#history .chart-card").count() == 5
    assert page.get_attribute("#chart-throughput", "data-total") == "8"
    assert page.get_attribute("#chart-failures", "data-total") == "2"
    assert page.locator("#chart-throughput rect.bar[data-series=succeeded]").count() >= 1
    assert page.locator("#chart-depth path[data-series=depth], #chart-depth circle").count() >= 1
    assert page.locator("#chart-wait path, #chart-wait circle").count() >= 1
    assert page.locator("#chart-cycle path, #chart-cycle circle").count() >= 1
    assert "8 jobs ended" in page.inner_text("#history-note")
    shot(page, "overview-history")
    page.click("#history-window button[data-window=week]")
    wait_for("the week", lambda: page.get_attribute("#history", "data-window") == "week")
    assert page.get_attribute("#chart-throughput", "data-total") == "8"
    page.click("#history-by a[data-pool=edge]")
    page.wait_for_selector("h1:text('Pool edge')")
    wait_for("the pool's charts", lambda: page.get_attribute(
        "#chart-throughput", "data-total") == "2")
    shot(page, "pool-history")
    page.goto(f"{server.url}/#/types/resize")
    page.wait_for_selector("h1:text('Task type resize')")
    wait_for("the type's charts", lambda: page.get_attribute(
        "#chart-throughput", "data-total") == "6")
    assert "sleep 0.2" in page.inner_text("dl.fields")
    page.click("#type-jobs")
    wait_for("its jobs", lambda: page.locator("#results tbody tr").count() == 6)
    assert violations == [], violations
