"""What an operator tripped on in the dashboard (issue 41), in a real browser under a
strict Content-Security-Policy: a "why" card only where something waits, and then every
reason with the true count of jobs ahead; a running job's time that counts on; job tables
without a stray "null"; attempts and jobs told apart on the overview; progress bars that
fill from the left."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from browser_helpers import (
    ROOT,
    Server,
    child_env,
    no_why_card,
    shot,
    sign_in,
    strict,
    wait_for,
)

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@pytest.fixture
def ops_worker(server: Server) -> Iterator[subprocess.Popen[str]]:
    """One more worker, alone in pool `ops`, with room for one job."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", server.db_url, "worker", "--name", "ops1",
         "--pool", "ops", "--capacity", "1"], cwd=ROOT, env=child_env(), text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    yield proc
    proc.terminate()
    _, err = proc.communicate(timeout=90)
    assert "Traceback" not in err, err


def job_state(api: Any, job_id: int) -> str:
    return str(api.get(f"/api/v1/jobs/{job_id}").json()["state"])


def test_the_job_page_explains_only_what_waits_and_counts_running_time(
        server: Server, ops_worker: subprocess.Popen[str], page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        for body in ({"name": "migrate", "handler": "shell:sleep 300", "pools": ["ops"],
                      "locks": ["db-main"]},
                     {"name": "report", "handler": "shell:sleep 300", "pools": ["ops"]},
                     {"name": "boom", "handler": "shell:exit 3"}):
            assert api.post("/api/v1/task-types", json=body).status_code == 201
        holder = api.post("/api/v1/jobs", json={"type": "migrate"}).json()["id"]
        wait_for("the migration to run", lambda: job_state(api, holder) == "running", 120)
        older = api.post("/api/v1/jobs", json={"type": "report"}).json()["id"]
        blocked = api.post("/api/v1/jobs", json={"type": "migrate"}).json()["id"]
        failed = api.post("/api/v1/jobs", json={"type": "boom"}).json()["id"]
        wait_for("the failure", lambda: job_state(api, failed) == "failed", 120)
    sign_in(page, server)
    # Held by the lock *and* by capacity, behind one older job: both reasons, the count.
    page.goto(f"{server.url}/#/jobs/{blocked}")
    page.wait_for_selector("#why li")
    reasons = page.locator("#why li").all_inner_texts()
    assert reasons == [
        f"lock db-main conflicts with job {holder}, which holds it",
        "no worker in its pools (ops) has room for it; 1 job(s) ahead in line"], reasons
    shot(page, "job-waiting")
    page.goto(f"{server.url}/#/jobs/{older}")
    page.wait_for_selector("#why li")
    assert page.locator("#why li").all_inner_texts() == [
        "no worker in its pools (ops) has room for it; 0 job(s) ahead in line"]
    # A failed job has nothing to explain: no "why" card at all.
    page.goto(f"{server.url}/#/jobs/{failed}")
    page.wait_for_selector(".page-head .badge[data-state=failed]")
    page.wait_for_selector("#logs")
    assert no_why_card(page)
    # A running job: no "why" card either, and its time counts on without any event.
    page.goto(f"{server.url}/#/jobs/{holder}")
    page.wait_for_selector(".page-head .badge[data-state=running]")
    assert no_why_card(page)
    took = page.wait_for_selector(".fields .ticking")
    first = took.inner_text()
    # (Polled from here: a predicate evaluated in the page would need 'unsafe-eval'.)
    wait_for("the time to count on", lambda: page.inner_text(".fields .ticking") != first)
    assert page.locator("table .ticking").count() == 1  # the running attempt's row
    # The job list ends with its count, nothing after it.
    page.goto(f"{server.url}/#/jobs")
    page.wait_for_selector("table.jobs tbody tr")
    assert page.locator("table.jobs .ticking").count() == 1
    foot = page.inner_text(".table-foot")
    assert foot.strip() == "4 shown", foot
    assert violations == [], violations


def test_the_overview_tells_attempts_from_jobs_and_bars_fill_from_the_left(
        server: Server, page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        api.post("/api/v1/task-types", json={"name": "boom", "handler": "shell:exit 3",
                                             "retries": 1, "retry_delay": 0})
        api.post("/api/v1/task-types", json={"name": "quick", "handler": "shell:true"})
        api.post("/api/v1/task-types", json={"name": "held", "handler": "shell:true",
                                             "pools": ["nobody"]})
        failed = api.post("/api/v1/jobs", json={"type": "boom"}).json()["id"]
        graph = api.post("/api/v1/graphs", json={"tasks": {
            **{f"q{n}": {"type": "quick"} for n in range(3)},
            "h": {"type": "held"}, "w": {"type": "quick", "requires": ["h"]}}}).json()
        wait_for("the failure", lambda: job_state(api, failed) == "failed", 120)

        def quick_done() -> bool:
            found = api.get(f"/api/v1/graphs/{graph['id']}", params={"jobs": "false"}).json()
            return bool(found["states"].get("succeeded") == 3)

        wait_for("the quick tasks", quick_done, 120)
    sign_in(page, server)
    page.wait_for_selector("[data-stat=attempts]")
    # One job failed (after two attempts): "1" among the jobs, "2 failed" among attempts.
    page.wait_for_selector(".state-count[data-state=failed] .n:text('1')")
    assert page.inner_text("[data-stat=attempts] .label").lower() == "attempts ended"
    wait_for("the attempts", lambda: "2 failed" in page.inner_text("[data-stat=attempts] .sub"))
    assert page.inner_text(".card h2:has(+ .states-list)").startswith("Jobs by state")
    # Progress bars: succeeded first (left), then pending, then waiting.
    bar = page.locator(f"tr[data-id='{graph['id']}'] .bar span")
    wait_for("the graph's bar", lambda: bar.count() == 3)
    assert [bar.nth(n).get_attribute("data-state") for n in range(3)] == [
        "succeeded", "pending", "waiting"]
    shot(page, "overview-failures")
    page.goto(f"{server.url}/#/graphs/{graph['id']}")
    head = page.locator(".page-head + .grid .bar span")
    wait_for("the graph page's bar", lambda: head.count() == 3)
    assert head.first.get_attribute("data-state") == "succeeded"
    assert violations == [], violations
