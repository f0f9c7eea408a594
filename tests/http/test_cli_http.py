"""The real commands: ``taskyard up --http`` and ``serve``, ``job logs``, ``events
--since/--tail/--follow``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
from http_helpers import free_port, taskyard, wait_for

from taskyard.api.http.tokens import mint_token
from taskyard.store import open_store

ENV = {**{k: v for k, v in os.environ.items() if k != "TASKYARD_DB"},
       "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def _popen(db_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "taskyard", "--db", db_url, *args],
                            env=ENV, text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def _token(db_url: str, scope: str = "admin") -> str:
    store = open_store(db_url)
    try:
        return mint_token(store, f"cli-{scope}", scope)[0]
    finally:
        store.close()


def test_up_http_runs_jobs_submitted_through_the_api(db_url: str) -> None:
    port = free_port()
    up = _popen(db_url, "up", "--workers", "1", "--http", str(port))
    try:
        wait_for("the API", lambda: _healthy(port) or up.poll() is not None, timeout=90)
        assert up.poll() is None, _stop(up)
        headers = {"Authorization": f"Bearer {_token(db_url)}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                          timeout=60) as api:
            assert api.post("/api/v1/task-types", json={
                "name": "say", "handler": "shell:echo said {word}; echo oops >&2"}
            ).status_code == 201
            job = api.post("/api/v1/jobs", json={"type": "say", "args": {"word": "hi"}}).json()
            wait_for("the job", lambda: api.get(f"/api/v1/jobs/{job['id']}").json()["state"]
                     == "succeeded", timeout=90)
            metrics = api.get("/metrics").text
            # The scheduler of `up` runs in this process: its cycles are timed.
            assert "taskyard_cycle_duration_seconds_count" in metrics
            assert api.get("/").text.startswith("<!doctype html>")
        logs = taskyard(db_url, "job", "logs", str(job["id"]))
        assert logs.returncode == 0, logs.stderr
        assert logs.stdout == "said hi\n" and logs.stderr == "oops\n"
        as_json = json.loads(taskyard(db_url, "job", "logs", str(job["id"]), "--json").stdout)
        assert as_json == {"job_id": job["id"], "attempt": 1, "state": "succeeded",
                           "stdout": "said hi\n", "stderr": "oops\n"}
        follow = taskyard(db_url, "job", "logs", str(job["id"]), "--follow")
        assert follow.stdout == "said hi\n"  # the job ended: prints and exits
        missing = taskyard(db_url, "job", "logs", str(job["id"]), "--attempt", "3")
        assert missing.returncode == 1 and "has no attempt 3" in missing.stderr
    finally:
        _, err = _stop(up)
    assert up.returncode == 0, err
    assert "event=http-started url=http://127.0.0.1:" in err
    assert "Traceback" not in err


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def test_serve_binds_loopback_and_stops_on_sigterm_with_a_stream_open(db_url: str) -> None:
    port = free_port()
    serve = _popen(db_url, "serve", "--port", str(port))
    try:
        wait_for("the API", lambda: _healthy(port) or serve.poll() is not None, timeout=90)
        assert serve.poll() is None, _stop(serve)
        headers = {"Authorization": f"Bearer {_token(db_url, 'read')}"}
        with httpx.Client(timeout=60) as client, client.stream(
                "GET", f"http://127.0.0.1:{port}/api/v1/events/stream",
                headers=headers) as stream:
            lines = stream.iter_lines()
            assert next(lines) == "retry: 2000"
            serve.send_signal(signal.SIGTERM)
            rest = list(lines)  # ends when the server closes the stream
        assert all(line in ("", ": keep-alive") for line in rest)
    finally:
        _, err = _stop(serve)
    assert serve.returncode == 0, err
    assert "Traceback" not in err


def test_events_since_tail_and_follow(db_url: str) -> None:
    assert taskyard(db_url, "task-type", "add", "t", "--handler", "shell:true").returncode == 0
    for _ in range(3):
        assert taskyard(db_url, "submit", "t", "--pool", "nowhere").returncode == 0
    everything = json.loads(taskyard(db_url, "events", "--json").stdout)
    assert [e["topic"] for e in everything] == ["job-pending"] * 3
    tail = json.loads(taskyard(db_url, "events", "--json", "--tail", "2").stdout)
    assert [e["id"] for e in tail] == [e["id"] for e in everything[1:]]
    recent = json.loads(taskyard(db_url, "events", "--json", "--since", "1h").stdout)
    assert recent == everything
    future = json.loads(taskyard(db_url, "events", "--json", "--since",
                                 "2999-01-01T00:00:00Z").stdout)
    assert future == []
    bad = taskyard(db_url, "events", "--since", "lately")
    assert bad.returncode == 2 and "--since" in bad.stderr
    follow = _popen(db_url, "events", "--follow", "--json", "--tail", "1")
    try:
        assert follow.stdout is not None
        first = json.loads(follow.stdout.readline())
        assert first["id"] == everything[-1]["id"]  # the tail, not the whole history
        assert taskyard(db_url, "job", "cancel", str(first["payload"]["job_id"])).returncode == 0
        fresh = json.loads(follow.stdout.readline())
        assert fresh["topic"] == "job-exception"
        assert fresh["payload"] == {"job_id": first["payload"]["job_id"], "reason": "canceled"}
    finally:
        _stop(follow)
