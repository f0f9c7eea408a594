"""Self-fencing with real processes: a worker that cannot renew its lease (PostgreSQL
unreachable; SQLite's write lock held by a stuck writer) kills its children before the
lease runs out, so no job runs unowned; then the scheduler requeues the job."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.outage import alive, outage

from conftest import Cluster

LEASE = 3.0


def _start_worker(url: str, name: str, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", url, "worker", "--name", name,
         "--capacity", "1", "--lease", str(LEASE)],
        env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))


def _started_child(pidfile: Path) -> int:
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    return int(pidfile.read_text())


def test_a_worker_that_cannot_renew_its_lease_kills_its_children(
    cluster: Cluster, tmp_path: Path
) -> None:
    yard = cluster.yard
    pidfile = tmp_path / "child.pid"
    yard.add_task_type("long", f"shell:sleep 120 & echo $! > {pidfile}; wait")
    job_id = yard.submit("long")
    with outage(cluster.url) as (worker_url, cut, _restore):
        worker = _start_worker(worker_url, "cut-off", tmp_path / "worker.log")
        try:
            cluster.add_scheduler(interval=0.2)
            child = _started_child(pidfile)
            assert alive(child)
            time.sleep(LEASE / 2)  # a few heartbeats went through
            cut()
            # The lease the worker last obtained, read past the outage.
            expires = next(w for w in yard.store.workers.list()
                           if w.name == "cut-off").lease_expires_at
            while alive(child):
                assert yard.store.now() < expires + 5, "the child outlived the lease"
                time.sleep(0.02)
            killed_at = yard.store.now()
            assert killed_at < expires, f"child killed {killed_at - expires:.2f}s after expiry"
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.wait(30)
    log = (tmp_path / "worker.log").read_text()
    assert "event=self-fenced" in log
    # The database is back: the scheduler expels the silent worker and requeues the job.
    deadline = time.monotonic() + 30
    while (job := yard.get_job(job_id)).state != "pending":
        assert time.monotonic() < deadline, job.state
        time.sleep(0.1)
    assert [a.state for a in job.attempts] == ["lost"]


def test_a_short_outage_that_fences_a_worker_fails_no_job(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The database comes back after the worker fenced itself but before its lease ran
    out: the attempts it gave up are not reported as errors (which would fail the job
    for a hiccup of the database); its lease runs out and the job is requeued, as for
    any lost worker (found by the chaos test)."""
    yard = cluster.yard
    pidfile = tmp_path / "child.pid"
    yard.add_task_type("long", f"shell:sleep 120 & echo $! > {pidfile}; wait")
    job_id = yard.submit("long")
    with outage(cluster.url) as (worker_url, cut, restore):
        worker = _start_worker(worker_url, "brief", tmp_path / "worker.log")
        try:
            cluster.add_scheduler(interval=0.2)
            child = _started_child(pidfile)
            time.sleep(LEASE / 2)
            cut()
            expires = next(w for w in yard.store.workers.list()
                           if w.name == "brief").lease_expires_at
            while alive(child):  # the worker fences itself and kills its child
                assert yard.store.now() < expires + 5, "the worker did not fence itself"
                time.sleep(0.02)
            restore()  # back while the lease still holds
            assert yard.store.now() < expires, "restored too late to tell"
            assert worker.wait(30) == 1
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.wait(30)
    deadline = time.monotonic() + 30
    while (job := yard.get_job(job_id)).state not in ("pending", "error"):
        assert time.monotonic() < deadline, job.state
        time.sleep(0.1)
    assert (job.state, [a.state for a in job.attempts]) == ("pending", ["lost"])
