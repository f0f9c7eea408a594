"""``GET /api/v1/graphs/{id}/timeline``: a real graph run's spans and critical path."""

from __future__ import annotations

from http_helpers import HANDLERS, Api, wait_for


def test_a_diamond_s_timeline_follows_its_slow_branch(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "sleepy", "handler": f"{HANDLERS}:sleepy"})
    graph = api.post("/api/v1/graphs", json={"tasks": {
        "start": {"type": "sleepy", "args": {"seconds": 0.05}},
        "slow": {"type": "sleepy", "requires": ["start"], "args": {"seconds": 1.5}},
        "fast": {"type": "sleepy", "requires": ["start"], "args": {"seconds": 0.05}},
        "join": {"type": "sleepy", "requires": ["slow", "fast"], "args": {"seconds": 0.05}},
        "never": {"type": "sleepy", "requires": ["join"], "pools": ["nobody"]},
    }}).json()
    ids = {j["label"]: j["id"] for j in graph["jobs"]}
    before = api.get(f"/api/v1/graphs/{graph['id']}/timeline").json()
    assert before["critical"] == [] and before["finish"] is None
    assert all(i["started_at"] is None for i in before["items"])
    api.add_worker(capacity=2)
    api.add_scheduler()
    api.wait_job(ids["join"])
    timeline = wait_for("join on the timeline", lambda: (
        (t := api.get(f"/api/v1/graphs/{graph['id']}/timeline").json())
        and t["items"][3]["ended_at"] and t))
    items = {i["label"]: i for i in timeline["items"]}
    assert timeline["critical"] == [ids["start"], ids["slow"], ids["join"]]
    assert [i["label"] for i in timeline["items"] if i["critical"]] == ["start", "slow", "join"]
    assert items["slow"]["duration"] > 1.0 > items["fast"]["duration"]
    assert items["join"]["requires"] == [ids["slow"], ids["fast"]]
    assert items["join"]["ready_at"] == items["slow"]["ended_at"]
    assert items["never"]["started_at"] is None and items["never"]["duration"] is None
    assert timeline["critical_seconds"] > 1.0 and timeline["span"] > 1.0
    assert not timeline["truncated"]
    part = api.get(f"/api/v1/graphs/{graph['id']}/timeline", params={"limit": 2}).json()
    assert part["truncated"] and len(part["items"]) == 2
    assert api.get("/api/v1/graphs/999/timeline").status_code == 404
