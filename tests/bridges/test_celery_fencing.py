"""A Celery pool runs on the worker's loop, so it fences itself as a worker does: when its
database goes away it revokes its tasks before its lease ends (their processes are gone
by then), exits 1, and the job is requeued; and the result a revoke did not prevent (a
task that ignores SIGTERM) changes nothing: the job ends with a later attempt's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.bridges.servers import CeleryWorker
from tests.outage import alive, outage
from tests.polling import wait_for

from taskyard.api.yard import Yard
from taskyard.bridges.celery_pool import CeleryPool
from taskyard.core.states import TERMINAL

LEASE = 3.0


@pytest.fixture
def yard(db_url: str) -> Iterator[Yard]:
    y = Yard(db_url)
    y.add_task_type("hold", handler="celery:tests.wait_for", pools=["celery"])
    yield y
    y.close()


def _start_pool(url: str, celery: CeleryWorker, name: str, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", url, "celery-pool", "--broker",
         celery.broker, "--result-backend", celery.backend, "--name", name,
         "--lease", str(LEASE)], env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))


def _lease_expires(yard: Yard, name: str) -> float:
    """The lease the pool last obtained (database clock), read past the outage."""
    expires = next(w for w in yard.store.workers.list() if w.name == name).lease_expires_at
    assert expires is not None
    return expires


def _requeued(yard: Yard, job_id: int) -> bool:
    yard.schedule()  # no scheduler daemon: the cycle expels the silent pool
    return yard.get_job(job_id).state == "pending"


def _running(yard: Yard, job_id: int, attempt: int) -> bool:
    yard.schedule()  # places the job (no scheduler daemon here)
    job = yard.get_job(job_id)
    return (job.attempt, job.state) == (attempt, "running")


def _fence(yard: Yard, url: str, celery: CeleryWorker, tmp_path: Path, *, job_id: int,
           pidfile: Path, task_dies: bool) -> None:
    """Run ``job_id`` on a celery-pool, cut its database once the task runs, wait for
    the pool to fence itself; then restore the database and wait for the job's
    requeue. ``task_dies``: the task's process must be gone before the lease ends."""
    log = tmp_path / "celery-pool.log"
    with outage(url) as (pool_url, cut, restore):
        pool = _start_pool(pool_url, celery, "cut-off", log)
        try:
            wait_for("the job to run in Celery", lambda: pidfile.exists()
                     and pidfile.read_text() and yard.get_job(job_id).state == "running",
                     timeout=120)
            task_pid = int(pidfile.read_text())
            time.sleep(LEASE / 2)  # a few heartbeats went through
            cut()
            expires = _lease_expires(yard, "cut-off")
            wait_for("the pool to fence itself", lambda: "event=self-fenced" in log.read_text()
                     or yard.store.now() > expires + 5, timeout=60)
            fenced_at = yard.store.now()
            if task_dies:
                while alive(task_pid):
                    assert yard.store.now() < expires + 5, "the task outlived the lease"
                    time.sleep(0.02)
                killed_at = yard.store.now()
                assert killed_at < expires, f"task killed {killed_at - expires:.2f}s after expiry"
            assert fenced_at < expires, f"fenced {fenced_at - expires:.2f}s after expiry"
            restore()
            assert pool.wait(60) == 1, log.read_text()[-2000:]
        finally:
            if pool.poll() is None:
                pool.kill()
            pool.wait(30)
    text = log.read_text()
    assert "event=self-fenced" in text and "event=revoke" in text, text[-2000:]
    wait_for("the job to be requeued", lambda: _requeued(yard, job_id), timeout=60)


def test_a_pool_whose_database_goes_away_fences_itself_before_its_lease_ends(
        yard: Yard, db_url: str, celery_worker: CeleryWorker, tmp_path: Path) -> None:
    pidfile = tmp_path / "task.pid"
    job_id = yard.submit("hold", {"path": str(tmp_path / "never"), "pidfile": str(pidfile)})
    _fence(yard, db_url, celery_worker, tmp_path, job_id=job_id, pidfile=pidfile, task_dies=True)
    job = yard.get_job(job_id)
    assert (job.state, [a.state for a in job.attempts]) == ("pending", ["lost"])


def test_the_late_result_of_a_fenced_attempt_changes_nothing(
        yard: Yard, db_url: str, celery_worker: CeleryWorker, tmp_path: Path) -> None:
    release, pidfile = tmp_path / "release", tmp_path / "task.pid"
    job_id = yard.submit("hold", {"path": str(release), "pidfile": str(pidfile),
                                  "stubborn": True})
    _fence(yard, db_url, celery_worker, tmp_path, job_id=job_id, pidfile=pidfile, task_dies=False)
    # Attempt 1 still runs in Celery (it ignored the revoke). A second pool runs the job
    # as attempt 2; then both tasks end, attempt 1 first.
    second = CeleryPool(yard.store, celery_worker.app, name="second", lease_seconds=30)
    stop = threading.Event()
    thread = threading.Thread(target=second.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for("attempt 2 to run", lambda: _running(yard, job_id, 2), timeout=120)
        release.touch()
        wait_for("attempt 1 to end in Celery", (tmp_path / "release.ended-1").exists)
        wait_for("the job to end", lambda: yard.get_job(job_id).state in TERMINAL,
                 timeout=120)
    finally:
        stop.set()
        thread.join(60)
    job = yard.get_job(job_id)
    assert (job.state, job.attempt) == ("succeeded", 2)
    assert job.result["attempt"] == 2  # type: ignore[index]
    assert [(a.attempt, a.state) for a in job.attempts] == [(1, "lost"), (2, "succeeded")]
    completed = [e for e in yard.events(topic="job-completed")
                 if isinstance(e.payload, dict) and e.payload.get("job_id") == job_id]
    assert [e.payload["attempt"] for e in completed] == [2]  # type: ignore[index]
