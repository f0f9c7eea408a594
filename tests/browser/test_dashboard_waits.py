"""The dashboard's waits and pauses in a real browser against a real server with workers:
approve and deny an awaiting approval from its page (the note and who decided land in its
result), the signal a wait expects and sending it from its page (under the CSP), a read
token gets no buttons; pause a pool from the
workers page (a job stays pending and says why), resume it (the job runs); the schedules
page shows the catch-up and overlap policies."""

from __future__ import annotations

from typing import Any

import pytest
from browser_helpers import Server, shot, sign_in, taskyard
from test_dashboard_security import WATCH
from tests.polling import wait_for

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

RELEASE = {
    "routing": "release",
    "tasks": {
        "build": {"type": "step"},
        "approve": {"approval": {"timeout": "1h"}, "requires": ["build"]},
        "veto": {"approval": {}, "requires": ["build"]},
        "ready": {"wait": {"signal": "artifact-ready", "key": "v2"}, "requires": ["build"]},
        "deploy": {"type": "step", "requires": ["approve"]},
    },
}


def _jobs(server: Server, graph_id: int) -> dict[str, dict[str, Any]]:
    with server.api() as api:
        graph = api.get(f"/api/v1/graphs/{graph_id}").json()
    return {j["label"]: j for j in graph["jobs"]}


def _state(server: Server, job_id: int) -> str:
    with server.api() as api:
        return str(api.get(f"/api/v1/jobs/{job_id}").json()["state"])


def test_approve_deny_and_the_signal_a_wait_expects(server: Server, page: Any) -> None:
    with server.api() as api:
        api.post("/api/v1/task-types", json={"name": "step", "handler": "shell:echo done"})
        graph = api.post("/api/v1/graphs", json=RELEASE).json()
    jobs = _jobs(server, graph["id"])
    sign_in(page, server)
    page.goto(f"{server.url}/#/jobs/{jobs['approve']['id']}")
    page.wait_for_selector(".page-head .badge[data-state=awaiting]", timeout=120_000)
    assert "approve" in page.inner_text("#why").lower()
    assert page.inner_text("h2:text-matches('What does it await')")
    page.fill("#decision-note", "release notes read")
    shot(page, "approval-awaiting")
    page.click("#approve-job")
    page.wait_for_selector(".page-head .badge[data-state=succeeded]")
    with server.api() as api:
        approved = api.get(f"/api/v1/jobs/{jobs['approve']['id']}").json()
    assert approved["result"] == {"decision": "approved", "note": "release notes read",
                                  "by": "browser"}
    assert page.locator("#approve-job").count() == 0  # decided: no buttons left
    # The deploy the approval held back runs on a worker.
    deploy = jobs["deploy"]["id"]
    page.goto(f"{server.url}/#/jobs/{deploy}")
    page.wait_for_selector(".page-head .badge[data-state=succeeded]", timeout=120_000)
    # Deny the other one, without a note.
    page.goto(f"{server.url}/#/jobs/{jobs['veto']['id']}")
    page.wait_for_selector(".page-head .badge[data-state=awaiting]")
    page.click("#deny-job")
    page.wait_for_selector(".page-head .badge[data-state=failed]")
    with server.api() as api:
        denied = api.get(f"/api/v1/jobs/{jobs['veto']['id']}").json()
    assert denied["result"] == {"decision": "denied", "note": None, "by": "browser"}
    # A wait shows the signal it expects, and no approve button.
    page.goto(f"{server.url}/#/jobs/{jobs['ready']['id']}")
    page.wait_for_selector(".page-head .badge[data-state=awaiting]")
    page.wait_for_selector("dt:text('Expects signal')")
    assert "artifact-ready (key v2)" in page.inner_text(".fields")
    assert page.locator("#approve-job").count() == 0
    shot(page, "wait-awaiting")
    with server.api() as api:
        sent = api.post("/api/v1/signals", json={"name": "artifact-ready", "key": "v2"}).json()
    assert sent == {"completed": [jobs["ready"]["id"]]}
    page.wait_for_selector(".page-head .badge[data-state=succeeded]")  # pushed by the stream
    # A read token sees an awaiting approval but gets no button that would decide it.
    with server.api() as api:
        again = api.post("/api/v1/graphs", json=RELEASE).json()
    pending = _jobs(server, again["id"])["approve"]["id"]
    _sign_in_as_reader(page, server)
    page.goto(f"{server.url}/#/jobs/{pending}")
    page.wait_for_selector(".page-head .badge[data-state=awaiting]", timeout=120_000)
    assert page.locator("#approve-job").count() == 0
    assert page.locator("#deny-job").count() == 0


def _sign_in_as_reader(page: Any, server: Server) -> None:
    reader = taskyard(server.db_url, "token", "create", "--name", "viewer", "--scope",
                      "read").strip()
    page.click("#signout")
    page.wait_for_selector("#signin[open]")
    page.fill("#token-input", reader)
    page.click("#signin-button")
    page.wait_for_selector("#signin:not([open])", state="attached")


def test_send_the_signal_a_wait_expects(server: Server, strict_page: Any) -> None:
    # Under the dashboard's CSP (no inline script or style): what the browser refuses
    # is reported, and must be nothing.
    page = strict_page
    page.add_init_script(WATCH)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text)
            if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    with server.api() as api:
        graph = api.post("/api/v1/graphs", json={"tasks": {
            "ready": {"wait": {"signal": "artifact-ready", "key": "v2"}},
            "later": {"wait": {"signal": "artifact-ready", "key": "v3"}},
            "gate": {"approval": {}}}}).json()
    jobs = {j["label"]: j["id"] for j in graph["jobs"]}
    sign_in(page, server)
    # An approval has its buttons, not this one.
    page.goto(f"{server.url}/#/jobs/{jobs['gate']}")
    page.wait_for_selector("#approve-job")
    assert page.locator("#send-signal").count() == 0
    page.goto(f"{server.url}/#/jobs/{jobs['ready']}")
    page.wait_for_selector(".page-head .badge[data-state=awaiting]")
    page.wait_for_selector("#send-signal")
    assert page.locator("#approve-job").count() == 0
    # A payload that is not JSON is named, and nothing is sent.
    page.fill("#signal-payload", "{tag: v2")
    page.click("#send-signal")
    wait_for("the payload's error", lambda: "Payload: not JSON" in (
        page.text_content("#toast") or ""))
    # Dismissed, the confirm sends nothing either.
    page.fill("#signal-payload", '{"tag": "v2.0"}')
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.click("#send-signal")
    wait_for("the confirm", lambda: asked)
    assert asked == ["Send the signal artifact-ready (key v2)? Every wait that expects it "
                     "completes."]
    assert _state(server, jobs["ready"]) == "awaiting"
    shot(page, "wait-send-signal")
    page.once("dialog", lambda d: d.accept())
    page.click("#send-signal")
    page.wait_for_selector(".page-head .badge[data-state=succeeded]")
    wait_for("the toast", lambda: (page.text_content("#toast") or "") == (
        f"Signal artifact-ready (key v2) sent: completed #{jobs['ready']}"))
    assert page.locator("#send-signal").count() == 0  # done: no button left
    with server.api() as api:
        done = api.get(f"/api/v1/jobs/{jobs['ready']}").json()
        events = api.get("/api/v1/events", params={"topic": "job-completed"}).json()["items"]
    assert done["result"] == {"tag": "v2.0"}
    assert any(e["payload"].get("job_id") == jobs["ready"] and e["payload"].get("by") ==
               "browser" for e in events)
    assert _state(server, jobs["later"]) == "awaiting"  # another key: still waiting
    # A read token sees the signal a wait expects, but no button that sends it.
    _sign_in_as_reader(page, server)
    page.goto(f"{server.url}/#/jobs/{jobs['later']}")
    page.wait_for_selector("dt:text('Expects signal')")
    assert "artifact-ready (key v3)" in page.inner_text(".fields")
    assert page.locator("#send-signal").count() == 0
    assert page.evaluate("window.__violations") == []
    assert not errors, errors


def test_pause_and_resume_a_pool_from_the_workers_page(server: Server, page: Any) -> None:
    with server.api() as api:
        api.post("/api/v1/task-types", json={"name": "step", "handler": "shell:echo done"})
        api.post("/api/v1/schedules", json={"name": "nightly", "type": "step",
                                            "cron": "0 3 * * *", "catchup": "all",
                                            "catchup_window": "1d", "overlap": "skip"})
    sign_in(page, server)
    page.goto(f"{server.url}/#/workers")
    card = "#pools [data-pool=default]"
    page.wait_for_selector(f"{card}[data-paused='0']")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"{card} button:text('Pause')")
    page.wait_for_selector(f"{card}[data-paused='1'] .badge[data-state=paused]")
    shot(page, "pool-paused")
    with server.api() as api:
        assert api.get("/api/v1/pools").json()["items"][0]["paused"] is True
        job = api.post("/api/v1/jobs", json={"type": "step"}).json()
    page.goto(f"{server.url}/#/jobs/{job['id']}")
    page.wait_for_selector(".page-head .badge[data-state=pending]")
    page.wait_for_function(
        "document.getElementById('why').textContent.includes('its pools are paused (default)')")
    assert _state(server, job["id"]) == "pending"
    page.goto(f"{server.url}/#/workers")
    page.click(f"{card} button:text('Resume')")
    page.wait_for_selector(f"{card}[data-paused='0']")
    page.goto(f"{server.url}/#/jobs/{job['id']}")
    page.wait_for_selector(".page-head .badge[data-state=succeeded]", timeout=120_000)
    page.goto(f"{server.url}/#/schedules")
    row = page.wait_for_selector("tr[data-name=nightly] .policy")
    assert row.inner_text() == "catch-up all within 1d; overlap skip"
