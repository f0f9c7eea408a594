"""A worker killed with SIGKILL leaves no handler running: its guardian ends the process
groups of its Python children and shell commands (background jobs included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_self_fencing import _alive

from conftest import Cluster


def test_handlers_die_with_a_killed_worker(cluster: Cluster, tmp_path: Path) -> None:
    y = cluster.yard
    sh_pid, py_pid = tmp_path / "sh.pid", tmp_path / "py.pid"
    y.add_task_type("sh", f"shell:sleep 120 & echo $! > {sh_pid}; wait")
    y.add_task_type("py", "python:handlers_for_tests:pid_then_sleep")
    y.submit("sh")
    y.submit("py", {"path": str(py_pid), "seconds": 120})
    cluster.add_scheduler(interval=0.2)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    worker = subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", cluster.url, "worker", "--name", "doomed",
         "--capacity", "2"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not all(p.exists() and p.read_text().strip() for p in (sh_pid, py_pid)):
            assert time.monotonic() < deadline, "the jobs never started"
            time.sleep(0.05)
        pids = [int(p.read_text()) for p in (sh_pid, py_pid)]
        assert all(_alive(pid) for pid in pids)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in pids):
            assert time.monotonic() < deadline, "a handler outlived its worker"
            time.sleep(0.02)
    finally:
        if worker.poll() is None:
            worker.kill()
