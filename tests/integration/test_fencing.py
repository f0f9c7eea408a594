"""Fencing with real processes: a worker frozen with SIGSTOP is expelled, its job re-runs
elsewhere, and when it wakes its late completion is refused and it stops its child."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.engine import make_url

from conftest import Cluster
from taskyard.store.sqlite.locks import write_lock_path_for


def _worker(url: str, name: str, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", url, "worker", "--name", name,
         "--capacity", "1", "--lease", "2"],
        env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"),
    )


@contextlib.contextmanager
def _no_writer(url: str) -> Iterator[None]:
    """SQLite: hold the write lock, so that no other process is inside a write
    transaction meanwhile. A worker frozen inside one would hold the lock and stop every
    writer (the scheduler included) until it is thawed."""
    parsed = make_url(url)
    path = write_lock_path_for(parsed.database) if parsed.get_backend_name() == "sqlite" \
        else None
    if path is None:
        yield
        return
    with open(path, "ab") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(holder.fileno(), fcntl.LOCK_UN)


def test_a_frozen_worker_is_fenced_off(cluster: Cluster, tmp_path: Path) -> None:
    yard = cluster.yard
    marks = tmp_path / "runs.log"
    yard.add_task_type("slow", f"shell:echo $TASKYARD_ATTEMPT >> {marks}; sleep 3; "
                               "echo \"{\\\"attempt\\\": $TASKYARD_ATTEMPT}\" > $TASKYARD_RESULT")
    cluster.add_scheduler(interval=0.2)
    frozen = _worker(cluster.url, "frozen", tmp_path / "frozen.log")
    try:
        job_id = yard.submit("slow")
        deadline = time.monotonic() + 30
        # Freeze the worker once its handler runs (frozen before, it would start it only
        # when thawed) and the database says so: the worker reports the start in a
        # transaction of its own, and frozen inside that one it would hold the job's row
        # (PostgreSQL) or the write lock (SQLite) and stall the scheduler.
        while not (marks.exists() and marks.read_text().strip()
                   and yard.get_job(job_id).state == "running"):
            assert time.monotonic() < deadline, "the handler never started"
            time.sleep(0.05)
        assert yard.get_job(job_id).worker == "frozen"
        with _no_writer(cluster.url):
            frozen.send_signal(signal.SIGSTOP)  # it and its heartbeat stop; the child runs on
        rescuer = _worker(cluster.url, "rescuer", tmp_path / "rescuer.log")
        try:
            job = yard.wait(job_id, 60)
            assert (job.state, job.worker, job.attempt, job.result) == (
                "succeeded", "rescuer", 2, {"attempt": 2})
            assert [a.state for a in job.attempts] == ["lost", "succeeded"]
            frozen.send_signal(signal.SIGCONT)
            # It sees its lease lapsed (its watchdog) or learns from its next heartbeat that
            # it was expelled, kills its child and exits.
            assert frozen.wait(30) == 1
            time.sleep(0.5)
            again = yard.get_job(job_id)
            assert (again.state, again.result, again.attempt) == ("succeeded", {"attempt": 2}, 2)
            assert [a.state for a in again.attempts] == ["lost", "succeeded"]
            text = (tmp_path / "frozen.log").read_text()
            assert "event=expelled" in text or "event=self-fenced" in text
            assert "refused=1" in text
        finally:
            rescuer.terminate()
            rescuer.wait(30)
    finally:
        if frozen.poll() is None:
            frozen.send_signal(signal.SIGCONT)
            frozen.kill()
            frozen.wait(10)
