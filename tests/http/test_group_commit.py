"""Group commit of concurrent submits (issue 36): jobs that arrive together go in one
transaction, and each request still gets its own answer — a bad job among them is
refused alone and changes nothing for the others."""

from __future__ import annotations

import threading
from typing import Any

from http_helpers import Api

from taskyard.api.http.submitter import Submitter
from taskyard.model.errors import Conflict, InvalidInput


def _types(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:echo {x}"})


def test_a_group_answers_each_job_on_its_own(api: Api) -> None:
    _types(api)
    submitter: Submitter = api.server.app.state.submitter
    held = submitter.write_group([{"type": "t", "args": {"x": 0}, "unique_key": "k"}])
    assert isinstance(held[0], dict)
    outcomes = submitter.write_group([
        {"type": "t", "args": {"x": 1}},
        {"type": "nope", "args": {"x": 2}},                       # unknown type
        {"type": "t", "args": {}},                                # no x for the handler
        {"type": "t", "args": {"x": 3}, "unique_key": "k", "on_duplicate": "reject"},
        {"type": "t", "args": {"x": 4}, "unique_key": "k"},       # the holder
        {"type": "t", "args": {"x": 5}, "priority": 7},
    ])
    assert isinstance(outcomes[0], dict) and outcomes[0]["args"] == {"x": 1}
    assert isinstance(outcomes[1], InvalidInput) and "unknown task type" in str(outcomes[1])
    assert isinstance(outcomes[2], InvalidInput) and "'x'" in str(outcomes[2])
    assert isinstance(outcomes[3], Conflict)
    assert isinstance(outcomes[4], dict) and outcomes[4]["id"] == held[0]["id"]  # type: ignore[index]
    assert isinstance(outcomes[5], dict) and outcomes[5]["priority"] == 7
    stored = api.get("/api/v1/jobs").json()["items"]
    assert sorted(j["args"]["x"] for j in stored) == [0, 1, 5]


def test_concurrent_submits_each_get_their_answer(api: Api) -> None:
    _types(api)
    answers: list[tuple[int, int, dict[str, Any]]] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        with api.client("write") as writer:
            for i in range(15):
                bad = (n + i) % 4 == 0
                body = {"type": "nope" if bad else "t", "args": {"x": n * 100 + i},
                        "pools": ["nowhere"]}
                answer = writer.post("/api/v1/jobs", json=body)
                with lock:
                    answers.append((n * 100 + i, answer.status_code, answer.json()))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    good = {x for x, status, _ in answers if status == 201}
    assert {status for _, status, _ in answers} == {201, 422}
    for x, status, body in answers:
        if status == 201:
            assert body["args"] == {"x": x} and body["state"] == "pending"
        else:
            assert body["error"]["message"] == "unknown task type 'nope'"
    stored = api.get("/api/v1/jobs", params={"limit": 1000}).json()["items"]
    assert {j["args"]["x"] for j in stored} == good
    assert len(stored) == len(good) == len({j["id"] for j in stored})
