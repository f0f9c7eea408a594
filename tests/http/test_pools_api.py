"""``POST /api/v1/pools/{name}/pause`` and ``/resume`` (admin scope); ``GET
/api/v1/pools`` says which are paused."""

from __future__ import annotations

from http_helpers import HANDLERS, Api


def test_pause_and_resume_over_http(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    with api.client("write") as writer:
        assert writer.post("/api/v1/pools/default/pause").status_code == 403
    paused = api.post("/api/v1/pools/default/pause")
    assert paused.status_code == 200, paused.text
    assert paused.json()["paused"] is True and paused.json()["name"] == "default"
    assert api.get("/api/v1/pools").json()["items"][0]["paused"] is True
    api.add_worker()
    api.add_scheduler()
    job = api.post("/api/v1/jobs", json={"type": "echo", "args": {"x": 1}}).json()
    shown = api.get(f"/api/v1/jobs/{job['id']}").json()
    assert shown["state"] == "pending" and shown["explain"][0]["code"] == "pool_paused"
    assert api.post("/api/v1/pools/nowhere/pause").status_code == 404
    resumed = api.post("/api/v1/pools/default/resume")
    assert resumed.json()["paused"] is False
    api.wait_job(job["id"])
