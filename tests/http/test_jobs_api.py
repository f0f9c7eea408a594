"""``/api/v1/jobs`` and friends against a real server, database and worker."""

from __future__ import annotations

from http_helpers import HANDLERS, Api


def _types(api: Api) -> None:
    for name, handler in (("echo", f"{HANDLERS}:echo"), ("boom", f"{HANDLERS}:boom"),
                          ("sleepy", f"{HANDLERS}:sleepy")):
        answer = api.post("/api/v1/task-types", json={"name": name, "handler": handler})
        assert answer.status_code == 201, answer.text


def test_submit_run_show_logs_and_retry(api: Api) -> None:
    _types(api)
    api.add_worker()
    with api.client("write") as writer:
        made = writer.post("/api/v1/jobs", json={"type": "echo", "args": {"x": 1}})
        assert made.status_code == 201
        job = made.json()
        assert job["type"] == "echo" and job["args"] == {"x": 1} and job["priority"] == 0
        failing = writer.post("/api/v1/jobs", json={"type": "boom", "priority": 5}).json()
    done = api.wait_job(job["id"])
    assert done["result"]["job_id"] == str(job["id"])
    assert done["why"] == [] and done["explain"] == []
    assert [a["state"] for a in done["attempts"]] == ["succeeded"]
    logs = api.get(f"/api/v1/jobs/{job['id']}/logs").json()
    assert logs["attempt"] == 1 and logs["state"] == "succeeded"
    assert f"hello from {job['id']}" in logs["stdout"]
    failed = api.wait_job(failing["id"], ("failed",))
    assert failed["priority"] == 5
    err = api.get(f"/api/v1/jobs/{failing['id']}/logs", params={"attempt": 1}).json()
    assert "about to fail" in err["stderr"] and "ValueError" in err["stderr"]
    assert api.get(f"/api/v1/jobs/{failing['id']}/logs", params={"attempt": 2}).status_code == 404
    with api.client("write") as writer:
        again = writer.post(f"/api/v1/jobs/{failing['id']}/retry")
        assert again.status_code == 200 and again.json()["state"] in ("pending", "dispatched",
                                                                      "running", "failed")
        api.wait_job(failing["id"], ("failed",))
        assert len(api.get(f"/api/v1/jobs/{failing['id']}").json()["attempts"]) == 2
        # Retrying a job that succeeded does not apply: 409, nothing changed.
        refused = writer.post(f"/api/v1/jobs/{job['id']}/retry")
        assert refused.status_code == 409
        assert refused.json()["error"]["status"] == 409


def test_why_cancel_and_errors(api: Api) -> None:
    _types(api)
    with api.client("write") as writer:
        job = writer.post("/api/v1/jobs", json={"type": "echo", "pools": ["nowhere"]}).json()
        shown = writer.get(f"/api/v1/jobs/{job['id']}").json()
        assert shown["state"] == "pending"
        assert shown["why"] == ["no live worker serves its pools (nowhere)"]
        assert shown["explain"][0]["code"] == "no_worker"
        canceled = writer.post(f"/api/v1/jobs/{job['id']}/cancel")
        assert canceled.status_code == 200 and canceled.json()["state"] == "canceled"
        twice = writer.post(f"/api/v1/jobs/{job['id']}/cancel")
        assert twice.status_code == 409
        assert twice.json() == {"error": {"status": 409,
                                          "message": f"job {job['id']} is already canceled"}}
        cases = [
            ({"type": "nope"}, 422, "unknown task type 'nope'"),
            ({"type": "echo", "run_after": "soon"}, 422, "run_after"),
            ({"type": "echo", "timeout": 0}, 422, "timeout"),
            ({"type": "echo", "args": [1]}, 400, "args"),
            ({"type": "echo", "priority": "high"}, 400, "priority"),
            ({"type": "echo", "priority": 2**40}, 400, "priority"),
            ({"type": "echo", "colour": "red"}, 400, "colour"),
            ({}, 400, "type: Field required"),
        ]
        before = len(writer.get("/api/v1/jobs").json()["items"])
        for body, status, words in cases:
            answer = writer.post("/api/v1/jobs", json=body)
            assert answer.status_code == status, (body, answer.text)
            assert words in answer.json()["error"]["message"], (body, answer.text)
        # Bad input changed nothing.
        assert len(writer.get("/api/v1/jobs").json()["items"]) == before
        broken = writer.post("/api/v1/jobs", content=b'{"type": ',
                             headers={"Content-Type": "application/json"})
        assert broken.status_code == 400 and "not valid JSON" in broken.text
        assert writer.get("/api/v1/jobs/999999").status_code == 404
        assert writer.get("/api/v1/jobs/999999").json()["error"]["message"] == "no job 999999"
        assert writer.get("/api/v1/jobs", params={"state": "sleeping"}).status_code == 400
        assert writer.get("/api/v1/jobs", params={"cursor": "abc"}).status_code == 400
        too_big = writer.post("/api/v1/jobs", content=b"[" + b"0," * 600_000 + b"0]",
                              headers={"Content-Type": "application/json"})
        assert too_big.status_code == 413
        # A job's own limit (the args limit and room for the rest), not the graphs' one.
        assert "route's limit of 327680 bytes" in too_big.json()["error"]["message"]


def test_list_filters_and_cursor_pages(api: Api) -> None:
    _types(api)
    with api.client("write") as writer:
        ids = [writer.post("/api/v1/jobs", json={"type": t, "pools": ["nowhere"]}).json()["id"]
               for t in ["echo", "boom"] * 12]
        seen: list[int] = []
        cursor = None
        pages = 0
        while True:
            params = {"limit": 5, "type": "echo", **({"cursor": cursor} if cursor else {})}
            page = writer.get("/api/v1/jobs", params=params).json()
            seen.extend(j["id"] for j in page["items"])
            pages += 1
            cursor = page["next"]
            if cursor is None:
                break
            # A job submitted between two pages never shifts the pages.
            writer.post("/api/v1/jobs", json={"type": "echo", "pools": ["nowhere"]})
        assert seen == sorted(ids[0::2], reverse=True) and pages == 3
        oldest = writer.get("/api/v1/jobs", params={"order": "oldest", "limit": 3}).json()
        assert [j["id"] for j in oldest["items"]] == ids[:3]
        pending = writer.get("/api/v1/jobs", params={"state": "pending", "type": "boom",
                                                     "limit": 1000}).json()
        assert {j["id"] for j in pending["items"]} == set(ids[1::2]) and pending["next"] is None


def test_prune_through_the_api(api: Api) -> None:
    _types(api)
    with api.client("write") as writer:
        job = writer.post("/api/v1/jobs", json={"type": "echo", "pools": ["nowhere"]}).json()
        writer.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert api.post("/api/v1/prune", json={"older_than": "1d"}).json() == {
        "jobs": 0, "graphs": 0, "events": 0}
    assert api.post("/api/v1/prune", json={"older_than": "soon"}).status_code == 422
    assert api.post("/api/v1/prune", json={"older_than": -5}).status_code == 422
    assert api.post("/api/v1/prune", json={"older_than": 0}).json()["jobs"] == 1
    assert api.get(f"/api/v1/jobs/{job['id']}").status_code == 404
