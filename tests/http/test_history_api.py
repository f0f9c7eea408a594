"""``GET /api/v1/history`` and ``/metrics`` from stored history: the same on every
server of a database, the scheduling cycles of every scheduler included."""

from __future__ import annotations

from http_helpers import HANDLERS, Api, wait_for
from prometheus_client.parser import text_string_to_metric_families
from tests.polling import free_port

from taskyard.api.http.app import create_app
from taskyard.api.http.server import HttpServer
from taskyard.api.yard import Yard
from taskyard.scheduler.daemon import SchedulerDaemon
from taskyard.store import open_store

HISTORY_SAMPLES = ("taskyard_submit_to_start_seconds", "taskyard_job_cycle_seconds",
                   "taskyard_attempts", "taskyard_jobs_arrived", "taskyard_jobs_finished",
                   "taskyard_cycle_duration_seconds")


def _history_samples(api: Api) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = api.get("/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            if family.name in HISTORY_SAMPLES for s in family.samples}


def test_history_and_metrics_agree_across_servers(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    api.post("/api/v1/task-types", json={"name": "boom", "handler": f"{HANDLERS}:boom",
                                         "pools": ["risky", "default"]})
    api.add_worker("w1", capacity=4)
    keeper = SchedulerDaemon(open_store(api.db_url), interval=0.2, history_every=0.3)
    api._run(keeper.run)  # a scheduler whose history keeper runs often
    ids = [api.post("/api/v1/jobs", json={"type": "echo"}).json()["id"] for _ in range(4)]
    failed = api.post("/api/v1/jobs", json={"type": "boom"}).json()["id"]
    for job_id in ids:
        api.wait_job(job_id)
    api.wait_job(failed, ("failed",))
    # Followers read events in commit order: a transaction still running anywhere on the
    # server (another test's, under load) holds them back a while — delayed, never lost.
    hour = wait_for("every end rolled up", lambda: (
        (h := api.get("/api/v1/history").json())["totals"]["finished"] == 5 and h))
    assert len(hour["points"]) == 60 and hour["bucket_seconds"] == 60
    assert hour["totals"]["succeeded"] == 4 and hour["totals"]["failed"] == 1
    assert hour["totals"]["finished"] == 5 and hour["totals"]["arrived"] == 5
    assert set(hour["pools"]) >= {"default", "risky"} and set(hour["types"]) >= {"echo", "boom"}
    latest = [p for p in hour["points"] if p["started"]]
    assert latest and all(p["wait_p95"] is not None for p in latest)
    risky = api.get("/api/v1/history", params={"window": "week", "pool": "risky"}).json()
    assert risky["totals"]["failed"] == 1 and risky["totals"]["succeeded"] == 0
    assert len(risky["points"]) == 84
    echo = api.get("/api/v1/history", params={"window": "day", "type": "echo"}).json()
    assert echo["totals"]["succeeded"] == 4 and len(echo["points"]) == 96
    assert api.get("/api/v1/history", params={"window": "year"}).status_code == 400
    # A second server on the same database, running no scheduler: the same numbers,
    # the first one's cycles included.
    yard = Yard(api.db_url)
    port = free_port()
    server = HttpServer(create_app(yard), "127.0.0.1", port)
    server.start()
    wait_for("the second server", lambda: server.started, timeout=30)
    other = Api(f"http://127.0.0.1:{port}", yard, server, api.tokens, api.db_url)
    try:
        mine = wait_for("the cycles timed", lambda: (
            (s := _history_samples(api))[("taskyard_cycle_duration_seconds_count", ())] > 0
            and s))
        theirs = _history_samples(other)
        for key, value in mine.items():
            if not key[0].startswith("taskyard_cycle_duration"):
                assert theirs[key] == value, key
        assert theirs[("taskyard_cycle_duration_seconds_count", ())] > 0
        assert mine[("taskyard_attempts_total", (("outcome", "failed"), ("pool", "risky"),
                                                 ("type", "boom")))] == 1
        assert mine[("taskyard_submit_to_start_seconds_count", ())] == 5
        assert mine[("taskyard_job_cycle_seconds_count", ())] == 5
    finally:
        other.stop()
        other.yard.close()
