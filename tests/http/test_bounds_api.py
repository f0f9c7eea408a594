"""Bounds on durations and times (issue 36, F1): ``run_after: 1e308`` answered 500 but
was stored, and from then on every job list failed. Now each way in refuses a time past
year 9999 or a duration past 100 years, naming the field, and stores nothing; and a row
that holds such a value (written by an older version) renders everywhere."""

from __future__ import annotations

import json

import pytest
from http_helpers import Api, taskyard
from sqlalchemy import text

NOWHERE = {"type": "t", "pools": ["nowhere"]}


def _count(api: Api) -> int:
    return len(api.get("/api/v1/jobs", params={"limit": 1000}).json()["items"])


@pytest.mark.parametrize(("fields", "named"), [
    ({"run_after": 1e308}, "run_after"), ({"run_after": -1e308}, "run_after"),
    ({"run_after": "99999999999d"}, "run_after"),
    ({"run_after": "9999-12-31T23:59:59-05:00"}, "run_after"),
    ({"timeout": 1e308}, "timeout"), ({"timeout": "5300w"}, "timeout"),
    ({"unique_key": "k", "unique_for": 1e308}, "unique_for"),
])
def test_a_submit_out_of_range_is_422_and_stores_nothing(api: Api, fields: dict[str, object],
                                                          named: str) -> None:
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    before = _count(api)
    answer = api.post("/api/v1/jobs", json={**NOWHERE, **fields})
    assert answer.status_code == 422, answer.text
    message = answer.json()["error"]["message"]
    assert named in message and "out of range" in message
    batch = api.post("/api/v1/jobs/batch", json={"jobs": [NOWHERE, {**NOWHERE, **fields}]})
    assert batch.status_code == 422, batch.text
    assert batch.json()["error"]["message"].startswith(f"job 1: {named}")
    assert _count(api) == before
    cli = taskyard(api.db_url, "submit", "t", "--run-after", "99999999999d")
    assert cli.returncode == 2 and "out of range" in cli.stderr
    assert len(cli.stderr.strip().splitlines()) == 1
    assert _count(api) == before


def test_schedules_task_types_and_graphs_out_of_range_are_422(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    refused = [
        ("/api/v1/schedules", {"name": "s", "type": "t", "every": 1e308}, "every"),
        ("/api/v1/schedules", {"name": "s", "type": "t", "every": "99999999999d"}, "every"),
        ("/api/v1/task-types", {"name": "u", "handler": "shell:true", "timeout": 1e308},
         "timeout"),
        ("/api/v1/task-types", {"name": "u", "handler": "shell:true",
                                "retry_delay": "5300w"}, "retry_delay"),
        ("/api/v1/task-types", {"name": "u", "handler": "shell:true",
                                "interval": "1d,1h,40000d"}, "interval"),
        ("/api/v1/apply", {"task_types": {"u": {"handler": "shell:true",
                                                "retry_max_delay": 1e308}}}, "retry_max_delay"),
        ("/api/v1/graphs", {"tasks": {"a": {"type": "t", "timeout": 1e308}}}, "timeout"),
        ("/api/v1/prune", {"older_than": 1e308}, "older_than"),
    ]
    for path, body, named in refused:
        answer = api.post(path, json=body)
        assert answer.status_code == 422, (path, answer.text)
        assert named in answer.json()["error"]["message"], (path, answer.text)
    assert api.get("/api/v1/schedules").json()["items"] == []
    assert [t["name"] for t in api.get("/api/v1/task-types").json()["items"]] == ["t"]
    assert api.get("/api/v1/graphs").json()["items"] == []
    cli = taskyard(api.db_url, "schedule", "add", "s", "t", "--every", "99999999999d")
    assert cli.returncode in (1, 2) and "out of range" in cli.stderr


def test_a_row_holding_values_out_of_range_still_renders(api: Api) -> None:
    """What an older version stored: every reader renders it (times clamped to the
    bounds, durations as numbers) instead of failing."""
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    job = api.post("/api/v1/jobs", json=NOWHERE).json()
    other = api.post("/api/v1/jobs", json=NOWHERE).json()
    assert api.post("/api/v1/schedules", json={"name": "s", "type": "t", "every": "1h",
                                               "paused": True}).status_code == 201
    with api.yard.store.engine.begin() as conn:
        conn.execute(text("UPDATE jobs SET run_after = :v, timeout = :v WHERE id = :id"),
                     {"v": 1e308, "id": job["id"]})
        conn.execute(text("UPDATE jobs SET run_after = :v WHERE id = :id"),
                     {"v": -1e308, "id": other["id"]})
        conn.execute(text("UPDATE schedules SET every = :v, next_run = :v"), {"v": 1e308})
    for path in ("/api/v1/jobs", "/api/v1/jobs?state=pending", f"/api/v1/jobs/{job['id']}",
                 f"/api/v1/jobs/{other['id']}", "/api/v1/schedules", "/api/v1/schedules/s",
                 "/api/v1/overview", "/metrics"):
        answer = api.get(path)
        assert answer.status_code == 200, (path, answer.text)
    shown = api.get(f"/api/v1/jobs/{job['id']}").json()
    assert shown["run_after"] == "9999-12-31T23:59:59Z" and shown["timeout"] == 1e308
    assert api.get(f"/api/v1/jobs/{other['id']}").json()["run_after"] == "0001-01-01T00:00:00Z"
    assert api.get("/api/v1/schedules/s").json()["next_run"] == "9999-12-31T23:59:59Z"
    for args in (["jobs", "list"], ["jobs", "list", "--json"], ["job", "show", str(job["id"])],
                 ["job", "show", str(job["id"]), "--json"], ["schedule", "list"],
                 ["schedule", "list", "--json"], ["jobs", "list-pending", "t"]):
        cli = taskyard(api.db_url, *args)
        assert cli.returncode == 0, (args, cli.stderr)
    listed = json.loads(taskyard(api.db_url, "jobs", "list", "--json").stdout)
    assert {j["id"] for j in listed} == {job["id"], other["id"]}
    canceled = api.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert canceled.status_code == 200 and canceled.json()["state"] == "canceled"


def test_a_job_lock_is_a_name(api: Api) -> None:
    """F6: a NUL or a control character in a job's extra lock was stored (refused in a
    pool name, and in a task type's lock)."""
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    for lock in ("a\x00b", "esc\x1b[31m", ""):
        answer = api.post("/api/v1/jobs", json={**NOWHERE, "locks": [lock]})
        assert answer.status_code == 422, (lock, answer.text)
        assert "lock" in answer.json()["error"]["message"]
    cli = taskyard(api.db_url, "submit", "t", "--pool", "nowhere", "--lock", "a\x1bb")
    assert cli.returncode == 1 and "control characters" in cli.stderr
    assert _count(api) == 0
    assert api.post("/api/v1/jobs", json={**NOWHERE, "locks": ["repo:1"]}).status_code == 201
