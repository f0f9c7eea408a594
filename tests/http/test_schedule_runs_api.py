"""Run a schedule now (``POST /api/v1/schedules/{name}/run``, ``taskyard schedule
run``): one job of its type and args, among its jobs; its next run kept."""

from __future__ import annotations

from http_helpers import HANDLERS, Api, taskyard


def test_run_a_schedule_now_and_find_its_jobs(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    made = api.post("/api/v1/schedules", json={"name": "nightly", "type": "echo",
                                               "cron": "0 3 * * *", "args": {"n": 1},
                                               "priority": 4})
    assert made.status_code == 201, made.text
    before = made.json()["next_run"]
    with api.client("write") as writer:
        ran = writer.post("/api/v1/schedules/nightly/run")
    assert ran.status_code == 201, ran.text
    job = ran.json()
    assert job["type"] == "echo" and job["args"] == {"n": 1} and job["priority"] == 4
    assert api.get("/api/v1/schedules/nightly").json()["next_run"] == before
    cli = taskyard(api.db_url, "schedule", "run", "nightly")
    assert cli.returncode == 0, cli.stderr
    second = int(cli.stdout)
    api.post("/api/v1/jobs", json={"type": "echo"})  # not the schedule's
    found = api.get("/api/v1/jobs/search", params={"schedule": "nightly"}).json()
    assert [j["id"] for j in found["items"]] == [second, job["id"]] and found["complete"]
    api.add_worker()
    api.add_scheduler()
    api.wait_job(second)
    assert api.get("/api/v1/schedules/nightly").json()["last_outcome"] == "succeeded"
    with api.client("read") as reader:
        assert reader.post("/api/v1/schedules/nightly/run").status_code == 403
    missing = api.post("/api/v1/schedules/nope/run")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]
