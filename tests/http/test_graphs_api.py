"""``/api/v1/graphs``: submit, show with counts, edges, add tasks, cancel, refusals."""

from __future__ import annotations

from http_helpers import HANDLERS, Api, wait_for

GRAPH = {
    "routing": "nightly",
    "tasks": {
        "build": {"type": "echo", "args": {"target": "linux"}},
        "test": {"type": "echo", "requires": ["build"],
                 "args": {"build_job": {"$subs": "taskId:build"},
                          "artifact": {"$result": "build"}}},
    },
}


def test_graph_runs_and_shows_substituted_args(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    with api.client("write") as writer:
        made = writer.post("/api/v1/graphs", json=GRAPH)
        assert made.status_code == 201, made.text
        graph = made.json()
    assert graph["routing"] == "nightly" and graph["jobs_total"] == 2
    assert graph["states"] == {"pending": 1, "waiting": 1}
    jobs = {j["label"]: j for j in graph["jobs"]}
    edges = api.get(f"/api/v1/graphs/{graph['id']}/edges").json()
    assert edges == {"items": [{"job_id": jobs["test"]["id"],
                                "requires_id": jobs["build"]["id"],
                                "condition": "success"}], "truncated": False}
    test_job = api.get(f"/api/v1/jobs/{jobs['test']['id']}").json()
    assert test_job["args"]["build_job"] == jobs["build"]["id"]
    # Before build ran, its result marker stays as written.
    assert test_job["resolved_args"]["artifact"] == {"$result": "build"}
    assert "waits for job" in test_job["why"][0]
    api.add_worker()
    api.add_scheduler()  # the job pending since before the worker came needs a cycle
    finished = wait_for("the graph to finish", lambda: (
        (g := api.get(f"/api/v1/graphs/{graph['id']}").json())["state"] == "finished" and g))
    assert finished["states"] == {"succeeded": 2} and finished["jobs_done"] == 2
    test_job = api.get(f"/api/v1/jobs/{jobs['test']['id']}").json()
    build_result = api.get(f"/api/v1/jobs/{jobs['build']['id']}").json()["result"]
    assert test_job["resolved_args"]["artifact"] == build_result
    assert test_job["result"]["args"]["artifact"] == build_result
    light = api.get(f"/api/v1/graphs/{graph['id']}", params={"jobs": "false"}).json()
    assert light["jobs"] == [] and light["states"] == {"succeeded": 2}
    page = api.get("/api/v1/jobs", params={"graph_id": graph["id"], "order": "oldest"}).json()
    assert [j["label"] for j in page["items"]] == ["build", "test"]
    listed = api.get("/api/v1/graphs").json()["items"]
    assert [g["id"] for g in listed] == [graph["id"]]


def test_add_tasks_cancel_and_refusals(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    with api.client("write") as writer:
        graph = writer.post("/api/v1/graphs", json={
            "tasks": {"a": {"type": "echo"}}}).json()
        more = writer.post(f"/api/v1/graphs/{graph['id']}/tasks",
                           json={"tasks": {"b": {"type": "echo", "requires": ["a"]}}})
        assert more.status_code == 200 and more.json()["jobs_total"] == 2
        changed = writer.post(f"/api/v1/graphs/{graph['id']}/tasks",
                              json={"tasks": {"b": {"type": "echo", "args": {"x": 1}}}})
        assert changed.status_code in (409, 422) and "'b'" in changed.json()["error"]["message"]
        canceled = writer.post(f"/api/v1/graphs/{graph['id']}/cancel").json()
        assert canceled["state"] == "canceled" and canceled["states"] == {"canceled": 2}
        assert writer.post(f"/api/v1/graphs/{graph['id']}/cancel").status_code == 409
        assert writer.get("/api/v1/graphs/424242").status_code == 404
        assert writer.get("/api/v1/graphs/424242/edges").status_code == 404
        refusals = [
            ({"tasks": {"a": {"type": "echo", "requires": ["b"]},
                        "b": {"type": "echo", "requires": ["a"]}}}, "cycle"),
            ({"tasks": {"a": {"type": "echo", "requires": ["ghost"]}}}, "ghost"),
            ({"tasks": {"a": {"type": "missing-type"}}}, "missing-type"),
        ]
        before = len(writer.get("/api/v1/jobs").json()["items"])
        for body, culprit in refusals:
            answer = writer.post("/api/v1/graphs", json=body)
            assert answer.status_code == 422, answer.text
            assert culprit in answer.json()["error"]["message"]
        twice = writer.post("/api/v1/graphs", headers={"Content-Type": "application/json"},
                            content=b'{"tasks": {"a": {"type": "echo"}, "a": {"type": "echo"}}}')
        assert twice.status_code == 422
        assert twice.json()["error"]["message"] == "body: duplicate label 'a'"
        assert len(writer.get("/api/v1/jobs").json()["items"]) == before
        assert writer.post("/api/v1/graphs", json={"routing": "x"}).status_code == 400
        assert writer.post("/api/v1/graphs", content=b"[1",
                           headers={"Content-Type": "application/json"}).status_code == 400
