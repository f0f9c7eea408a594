"""``taskyard serve`` as a user starts it (issue 36, F13, F14): the start line gives the
real address, a taken port is one error line and no start line, ``--workers N`` serves
from N processes and stops with them, and ``init`` makes a private SQLite file."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from http_helpers import taskyard, wait_for

from taskyard.api.http.tokens import mint_token
from taskyard.store import open_store

ENV = {**{k: v for k, v in os.environ.items() if k != "TASKYARD_DB"},
       "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
STARTED = re.compile(r"event=http-started url=(\S+) address=(\S*) port=(\d+) workers=(\d+)")


def _serve(db_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "taskyard", "--db", db_url, "serve", *args],
                            env=ENV, text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _start_line(proc: subprocess.Popen[str]) -> re.Match[str]:
    assert proc.stderr is not None
    for line in proc.stderr:
        found = STARTED.search(line)
        if found:
            return found
    raise AssertionError(f"no start line (exit {proc.wait()})")


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(90)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


@pytest.mark.parametrize("host", ["127.0.0.1", ""])
def test_the_start_line_gives_the_real_address(db_url: str, host: str) -> None:
    proc = _serve(db_url, "--host", host, "--port", "0", "--workers", "1")
    try:
        found = _start_line(proc)
        url, address, port = found.group(1), found.group(2), int(found.group(3))
        assert port > 0 and url == f"http://127.0.0.1:{port}/"
        assert address == ("0.0.0.0" if host == "" else "127.0.0.1")
        assert httpx.get(f"{url}healthz", timeout=30).json() == {"status": "ok"}
    finally:
        assert _stop(proc) == 0


def test_a_taken_port_is_one_error_line_and_no_start(db_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = taskyard(db_url, "serve", "--port", str(port))
    assert done.returncode == 1
    assert "http-started" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_several_processes_serve_and_stop_together(db_url: str) -> None:
    store = open_store(db_url)
    token = mint_token(store, "w", "write")[0]
    store.close()
    taskyard(db_url, "task-type", "add", "t", "--handler", "shell:true")
    proc = _serve(db_url, "--port", "0", "--workers", "2")
    try:
        found = _start_line(proc)
        assert found.group(4) == "2"
        url = found.group(1)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                          timeout=60) as client:
            wait_for("both processes", lambda: client.get("/healthz").status_code == 200)
            ids = {client.post("/api/v1/jobs", json={"type": "t", "pools": ["x"]}).json()["id"]
                   for _ in range(20)}
            assert len(ids) == 20
        children = _children(proc.pid)
        assert len(children) >= 2
    finally:
        assert _stop(proc) == 0

    def gone() -> bool:  # its server processes (and multiprocessing's helper) ended too
        return not [pid for pid in children if _alive(pid)]

    wait_for("the server processes to end", gone, timeout=60)


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_init_creates_a_private_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    done = taskyard(f"sqlite:///{path}", "init")
    assert done.returncode == 0, done.stderr
    for made in [path, *tmp_path.glob("fresh.db-*")]:
        assert stat.S_IMODE(made.stat().st_mode) == 0o600, made
