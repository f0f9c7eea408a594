"""A running job's output through the real server (``GET /api/v1/jobs/{id}/logs/stream``,
resumable by ``Last-Event-ID``) and the real command (``taskyard job logs --follow``)."""

from __future__ import annotations

import json
import subprocess
import sys

from http_helpers import HANDLERS, Api, SseMessage, SseReader, wait_for


def _talker(api: Api, then: float) -> int:
    assert api.post("/api/v1/task-types", json={
        "name": "talk", "handler": f"{HANDLERS}:talker"}).status_code == 201
    api.add_worker()
    with api.client("write") as writer:
        job: int = writer.post("/api/v1/jobs", json={"type": "talk", "args": {
            "lines": 3, "every": 0.3, "then": then}}).json()["id"]
    return job


def _next(sse: SseReader, event: str) -> SseMessage:
    while True:
        message = sse.next()
        assert message is not None, f"the stream ended before an {event!r} event"
        if message.event == event:
            return message


def test_the_stream_sends_lines_as_they_come_resumes_and_ends(api: Api) -> None:
    job = _talker(api, then=60)
    with api.client("read") as reader, reader.stream(
            "GET", f"/api/v1/jobs/{job}/logs/stream") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        sse = SseReader(response)
        first = _next(sse, "chunk")
        assert json.loads(first.data) == {"attempt": 1, "seq": 1, "stream": "stdout",
                                          "data": "line 0\n"}
        assert first.id == "1.1"
        # Written while the job runs, not at its end.
        assert api.get(f"/api/v1/jobs/{job}").json()["state"] == "running"
        text = ""
        while "to stderr" not in text:
            text += json.loads(_next(sse, "chunk").data)["data"]
        assert text == "line 1\nline 2\nto stderr\n"
        assert api.post(f"/api/v1/jobs/{job}/cancel").status_code == 200
        assert json.loads(_next(sse, "attempt-ended").data) == {"attempt": 1,
                                                                "state": "canceled"}
        assert json.loads(_next(sse, "end").data) == {"state": "canceled"}
        assert sse.next() is None
    # A client that reconnects gets what followed the last chunk it saw.
    with api.client("read") as reader, reader.stream(
            "GET", f"/api/v1/jobs/{job}/logs/stream",
            headers={"Last-Event-ID": "1.1"}) as response:
        sse = SseReader(response)
        again = _next(sse, "chunk")
        assert again.id == "1.2" and json.loads(again.data)["data"] == "line 1\n"
    # The canceled attempt keeps what it wrote.
    kept = api.get(f"/api/v1/jobs/{job}/logs").json()
    assert kept["state"] == "canceled" and kept["stdout"] == "line 0\nline 1\nline 2\n"
    assert api.get("/api/v1/jobs/999999/logs/stream").status_code == 404
    bad = api.get(f"/api/v1/jobs/{job}/logs/stream", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 400 and "Last-Event-ID" in bad.text


def test_job_logs_follow_prints_lines_while_the_job_runs(api: Api) -> None:
    job = _talker(api, then=60)
    follow = subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", api.db_url, "job", "logs", str(job),
         "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline() == "line 0\n"
        assert api.get(f"/api/v1/jobs/{job}").json()["state"] == "running"
        assert follow.stdout.readline() == "line 1\n"
        assert follow.stdout.readline() == "line 2\n"
        wait_for("its stderr", lambda: "to stderr" in api.get(
            f"/api/v1/jobs/{job}/logs").json()["stderr"])
        api.post(f"/api/v1/jobs/{job}/cancel")
        out, err = follow.communicate(timeout=120)
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.communicate()
    assert follow.returncode == 0, err
    assert out == "" and err == "to stderr\n"
