"""``/api/v1/jobs/{id}/approve``, ``/deny`` and ``/api/v1/signals`` (write scope): an
approval graph run through the API, who decided (the token's name), refusals."""

from __future__ import annotations

from http_helpers import HANDLERS, Api, wait_for

GRAPH = {"tasks": {
    "build": {"type": "echo", "args": {"target": "linux"}},
    "approve": {"approval": {"timeout": "1h"}, "requires": ["build"]},
    "ready": {"wait": {"signal": "deploy-ready", "key": "v2"}},
    "deploy": {"type": "echo", "requires": ["approve", "ready"],
               "args": {"release": {"$result": "ready"}}},
    "rollback": {"type": "echo", "requires": [{"label": "approve", "on": "failure"}]},
}}


def _graph(api: Api) -> tuple[int, dict[str, dict]]:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    with api.client("write") as writer:
        made = writer.post("/api/v1/graphs", json=GRAPH)
    assert made.status_code == 201, made.text
    graph = made.json()
    return graph["id"], {j["label"]: j for j in graph["jobs"]}


def test_approve_and_signal_run_the_graph(api: Api) -> None:
    graph_id, jobs = _graph(api)
    assert jobs["ready"]["state"] == "awaiting" and jobs["ready"]["type"] is None
    assert jobs["ready"]["kind"] == "wait"
    assert jobs["ready"]["signal"] == {"name": "deploy-ready", "key": "v2"}
    api.add_worker()
    api.add_scheduler()
    approve = api.wait_job(jobs["approve"]["id"], ("awaiting",))
    shown = api.get(f"/api/v1/jobs/{approve['id']}").json()
    assert shown["why"][0].startswith("awaits an approval (taskyard job approve")
    assert shown["explain"][0]["code"] == "awaiting_approval"
    with api.client("read") as reader:  # deciding needs the write scope
        assert reader.post(f"/api/v1/jobs/{approve['id']}/approve").status_code == 403
        assert reader.post("/api/v1/signals", json={"name": "x"}).status_code == 403
    with api.client("write") as writer:
        answer = writer.post(f"/api/v1/jobs/{approve['id']}/approve", json={"note": "go"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"] == {"decision": "approved", "note": "go",
                                           "by": "test-write"}
        # Not an awaiting approval any more: 409, nothing changes.
        again = writer.post(f"/api/v1/jobs/{approve['id']}/deny")
        assert again.status_code == 409
        assert "is not an awaiting approval" in again.json()["error"]["message"]
        sent = writer.post("/api/v1/signals", json={"name": "deploy-ready", "key": "v2",
                                                    "payload": {"tag": "v2.0"}})
        assert sent.status_code == 200, sent.text
        assert sent.json() == {"completed": [jobs["ready"]["id"]]}
    deploy = api.wait_job(jobs["deploy"]["id"])
    assert deploy["args"]["release"] == {"$result": "ready"}
    assert api.get(f"/api/v1/jobs/{deploy['id']}").json()["resolved_args"]["release"] == {
        "tag": "v2.0"}
    wait_for("the graph to finish", lambda: api.get(
        f"/api/v1/graphs/{graph_id}").json()["state"] == "finished")
    events = api.get("/api/v1/events", params={"topic": "job-completed"}).json()["items"]
    assert any(e["payload"].get("by") == "test-write" and e["payload"]["kind"] == "approval"
               for e in events)


def test_deny_follows_the_failure_edge(api: Api) -> None:
    _, jobs = _graph(api)
    api.add_worker()
    api.add_scheduler()
    api.wait_job(jobs["approve"]["id"], ("awaiting",))
    with api.client("write") as writer:
        denied = writer.post(f"/api/v1/jobs/{jobs['approve']['id']}/deny")
    assert denied.status_code == 200, denied.text
    assert denied.json()["state"] == "failed"
    assert denied.json()["result"]["decision"] == "denied"
    api.wait_job(jobs["rollback"]["id"])
    assert api.wait_job(jobs["deploy"]["id"], ("dependency_failed",))


def test_refusals_name_the_field(api: Api) -> None:
    _, jobs = _graph(api)
    with api.client("write") as writer:
        assert writer.post("/api/v1/jobs/999999/approve").status_code == 404
        # Still waiting on build: not awaiting yet.
        early = writer.post(f"/api/v1/jobs/{jobs['approve']['id']}/approve")
        assert early.status_code == 409
        assert early.json()["error"]["message"].endswith("it is an approval, waiting")
        bad = writer.post("/api/v1/signals", json={"name": "a\u0001b"})
        assert bad.status_code == 422
        assert "signal name" in bad.json()["error"]["message"]
        assert writer.post("/api/v1/signals", json={"key": "k"}).status_code == 400
        assert writer.post("/api/v1/signals", json={"name": "s", "when": 1}).status_code == 400
        assert writer.post(f"/api/v1/jobs/{jobs['approve']['id']}/approve",
                           json={"note": 5}).status_code == 400
        none = writer.post("/api/v1/signals", json={"name": "nobody-waits"})
        assert none.json() == {"completed": []}
