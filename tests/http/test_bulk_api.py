"""``POST /api/v1/jobs/bulk/{action}`` against a real server: the dry run's count and
``up_to``, the action on what was counted, the write scope, clear refusals."""

from __future__ import annotations

from http_helpers import Api


def test_count_then_cancel_what_was_counted(api: Api) -> None:
    assert api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"}
                    ).status_code == 201
    with api.client("write") as writer:
        ids = [writer.post("/api/v1/jobs", json={"type": "t", "pools": ["nowhere"],
                                                 "args": {"n": n}}).json()["id"]
               for n in range(5)]
        count = writer.post("/api/v1/jobs/bulk/cancel", params={"type": "t", "q": "\"n\":",
                                                                "dry_run": "true"})
        assert count.status_code == 200, count.text
        assert count.json() == {"action": "cancel", "dry_run": True, "matched": 5,
                                "changed": 0, "skipped": 0, "up_to": ids[-1], "more": False}
        late = writer.post("/api/v1/jobs", json={"type": "t", "pools": ["nowhere"]}).json()
        done = writer.post("/api/v1/jobs/bulk/cancel",
                           params={"type": "t", "up_to": count.json()["up_to"]}).json()
        assert (done["matched"], done["changed"]) == (5, 5)
        assert writer.get(f"/api/v1/jobs/{late['id']}").json()["state"] == "pending"
        again = writer.post("/api/v1/jobs/bulk/retry", params={"state": "canceled"}).json()
        assert (again["matched"], again["changed"]) == (5, 5)
        bad = writer.post("/api/v1/jobs/bulk/delete")
        assert bad.status_code == 400 and "action" in bad.text
        unknown = writer.post("/api/v1/jobs/bulk/cancel", params={"state": "nope"})
        assert unknown.status_code == 400 and "state" in unknown.text
    with api.client("read") as reader:
        assert reader.post("/api/v1/jobs/bulk/cancel").status_code == 403
