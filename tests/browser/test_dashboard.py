"""The dashboard in a real browser (Debian's chromium, headless) against a real server with
workers: sign in, watch a graph submitted through the API turn succeeded, open a job's
detail and log, cancel a job from the page; large graphs open. Screenshots go to
tests/browser/artifacts/."""

from __future__ import annotations

import time
from typing import Any

import pytest
from browser_helpers import (
    Server,
    no_why_card,
    record,
    shot,
    sign_in,
    taskyard,
    wait_for,
)

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

BUILD_GRAPH = {
    "routing": "nightly",
    "tasks": {
        "checkout": {"type": "step", "args": {"what": "checkout", "pause": 0.4}},
        "compile": {"type": "step", "requires": ["checkout"],
                    "args": {"what": "compile", "pause": 0.6}},
        **{f"test-{n}": {"type": "step", "requires": ["compile"],
                         "args": {"what": f"test {n}", "pause": 0.5}} for n in range(1, 5)},
        "lint": {"type": "step", "requires": ["checkout"], "args": {"what": "lint", "pause": 0.3}},
        "package": {"type": "step", "requires": [f"test-{n}" for n in range(1, 5)] + ["lint"],
                    "args": {"what": "package", "pause": 0.3}},
    },
}


def test_sign_in_watch_a_graph_succeed_and_read_a_log(server: Server, page: Any) -> None:
    with server.api() as api:
        assert api.post("/api/v1/task-types", json={
            "name": "step", "handler": "shell:sleep {pause}; echo done {what}"}).status_code == 201
        api.post("/api/v1/schedules", json={"name": "nightly-build", "type": "step",
                                            "cron": "0 3 * * *", "args": {"what": "x", "pause": 0}})
    sign_in(page, server)
    page.wait_for_selector("h1:text('Overview')")
    with server.api() as api:
        graph = api.post("/api/v1/graphs", json=BUILD_GRAPH).json()
    page.goto(f"{server.url}/#/graphs/{graph['id']}")
    page.wait_for_selector("#dag canvas")
    page.wait_for_selector("#dag-nodes li[data-label='package']", state="attached")
    page.wait_for_selector("#dag-nodes li[data-state=succeeded]", state="attached")
    shot(page, "graph-running")
    # The nodes turn succeeded as the workers finish them, pushed by the event stream.
    page.wait_for_function(
        "document.querySelectorAll('#dag-nodes li[data-state=succeeded]').length === 8",
        timeout=120_000)
    page.wait_for_selector(".page-head .badge[data-state=finished]")
    shot(page, "graph-finished")
    # The job list of the graph, then one job's detail and its log.
    page.click(".tabs button:text('List')")
    page.click("table.jobs tr:has(td:text('package')) a")
    page.wait_for_selector("h1:text-matches('Job #')")
    page.wait_for_selector(".page-head .badge[data-state=succeeded]")
    assert page.inner_text("#stdout").strip() == "done package"
    assert no_why_card(page)  # nothing to explain: it succeeded
    shot(page, "job-detail")
    page.goto(f"{server.url}/#/")
    page.wait_for_selector(".state-count[data-state=succeeded] .n:text('8')")
    shot(page, "overview")
    page.goto(f"{server.url}/#/workers")
    page.wait_for_selector("#pools [data-pool=default]")
    shot(page, "workers")
    page.goto(f"{server.url}/#/schedules")
    page.wait_for_selector("tr[data-name=nightly-build]")
    shot(page, "schedules")


def test_cancel_a_running_job_from_its_page(server: Server, page: Any) -> None:
    with server.api() as api:
        api.post("/api/v1/task-types", json={"name": "slow", "handler": "shell:sleep 300"})
        job = api.post("/api/v1/jobs", json={"type": "slow"}).json()
    sign_in(page, server)
    page.goto(f"{server.url}/#/jobs/{job['id']}")
    page.wait_for_selector(".page-head .badge[data-state=running]")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-job")
    page.wait_for_selector(".page-head .badge[data-state=canceled]")
    shot(page, "job-canceled")
    with server.api() as api:
        assert api.get(f"/api/v1/jobs/{job['id']}").json()["state"] == "canceled"
    assert page.locator("#retry-job").is_visible()
    # A read token sees the job but gets no button that would change it.
    reader = taskyard(server.db_url, "token", "create", "--name", "viewer", "--scope",
                      "read").strip()
    page.click("#signout")
    page.wait_for_selector("#signin[open]")
    page.fill("#token-input", reader)
    page.click("#signin-button")
    page.wait_for_selector(".page-head .badge[data-state=canceled]")
    assert page.inner_text("#who") == "viewer · read"
    assert page.locator("#retry-job").count() == 0


def test_large_graphs_draw_or_open_paged(server: Server, page: Any) -> None:
    with server.api() as api:
        api.post("/api/v1/task-types", json={"name": "idle", "handler": "shell:true",
                                             "pools": ["nobody"]})
        # 1,000 tasks in layers: each requires one or two of the fifty before it.
        tasks: dict[str, Any] = {}
        for i in range(1000):
            parents = {i - 1 - (i * 7) % 50, i - 1 - (i * 13) % 30} if i else set()
            tasks[f"t{i}"] = {"type": "idle",
                              "requires": [f"t{p}" for p in sorted(parents) if p >= 0]}
        thousand = api.post("/api/v1/graphs", params={"jobs": "false"},
                            json={"tasks": tasks}).json()
        big = {f"n{i}": {"type": "idle", **({"requires": [f"n{i // 2}"]} if i else {})}
               for i in range(100_000)}
        started = time.monotonic()
        huge = api.post("/api/v1/graphs", params={"jobs": "false"}, json={"tasks": big}).json()
        record("api_submit_100k_graph_seconds", round(time.monotonic() - started, 2))
    sign_in(page, server)
    page.goto(f"{server.url}/#/graphs/{thousand['id']}")
    wrap = page.wait_for_selector("#dag[data-draw-ms]", timeout=120_000)
    record("draw_1000_task_graph_ms", int(wrap.get_attribute("data-draw-ms")))
    record("layout_1000_task_graph_ms", int(wrap.get_attribute("data-layout-ms")))
    assert wrap.get_attribute("data-nodes") == "1000"
    assert page.locator("#dag-nodes li").count() == 1000
    shot(page, "graph-1000")
    # 100,000 tasks: no drawing, the counts and a paged list; the page stays responsive.
    started = time.monotonic()
    page.goto(f"{server.url}/#/graphs/{huge['id']}")
    page.wait_for_selector(".notice:text-matches('100,000 tasks')")
    page.wait_for_selector("table.jobs tbody tr")
    record("open_100k_task_graph_seconds", round(time.monotonic() - started, 2))
    assert page.locator("table.jobs tbody tr").count() == 100
    assert page.locator(".chip[data-state=waiting] b").inner_text() == "99,999"
    shot(page, "graph-100000")
    page.click("#more")
    wait_for("a second page", lambda: page.locator("table.jobs tbody tr").count() == 200)
    assert page.evaluate("1 + 1") == 2  # the tab answers
