"""``GET /api/v1/jobs/search``: filters, both orders, cursors and refusals, through the
real server."""

from __future__ import annotations

from http_helpers import HANDLERS, Api


def test_search_by_text_id_type_state_worker_and_time(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    api.post("/api/v1/task-types", json={"name": "boom", "handler": f"{HANDLERS}:boom"})
    ids = [api.post("/api/v1/jobs", json={"type": "echo", "args": {"customer": f"ACME-{n}"}})
           .json()["id"] for n in range(3)]
    failing = api.post("/api/v1/jobs", json={"type": "boom", "pools": ["default", "gpu"]})
    failing_id = failing.json()["id"]
    api.add_worker("searcher")
    api.add_scheduler()
    for job_id in ids:
        api.wait_job(job_id)
    api.wait_job(failing_id, ("failed",))

    def found(**params: object) -> list[int]:
        page = api.get("/api/v1/jobs/search", params=params)
        assert page.status_code == 200, page.text
        return [j["id"] for j in page.json()["items"]]

    assert found(q="acme-1") == [ids[1]]
    assert found(q=f"#{ids[2]}") == [ids[2]] == found(q=str(ids[2]))
    assert found(type="echo") == ids[::-1]
    assert found(type=["echo", "boom"], state="failed") == [failing_id]
    assert found(pool="gpu") == [failing_id]
    assert found(worker="searcher", sort="created") == [*ids, failing_id]
    assert found(since="1h") == [failing_id, *ids[::-1]]
    assert found(until="1h") == []
    by_end = api.get("/api/v1/jobs/search", params={"sort": "-finished", "limit": 2}).json()
    assert len(by_end["items"]) == 2 and by_end["next"].startswith("f")
    rest = api.get("/api/v1/jobs/search", params={"sort": "-finished", "limit": 2,
                                                  "cursor": by_end["next"]}).json()
    seen = [j["id"] for j in by_end["items"] + rest["items"]]
    assert sorted(seen) == sorted([*ids, failing_id]) and rest["next"] is None
    assert api.get(f"/api/v1/jobs/{ids[0]}").json()["id"] == ids[0]  # not shadowed


def test_search_refusals(api: Api) -> None:
    bad = api.get("/api/v1/jobs/search", params={"sort": "-finished", "cursor": "12"})
    assert bad.status_code == 400 and "cursor" in bad.json()["error"]["message"]
    bad = api.get("/api/v1/jobs/search", params={"since": "yesterday"})
    assert bad.status_code == 422 and bad.json()["error"]["message"].startswith("since:")
    bad = api.get("/api/v1/jobs/search", params={"state": "asleep"})
    assert bad.status_code == 400
    assert api.get("/api/v1/jobs/search", params={"q": " "}).status_code == 422
    with api.client(None) as anonymous:
        assert anonymous.get("/api/v1/jobs/search").status_code == 401
