"""The Celery pool against a real redis-server and a real ``celery worker``: jobs run as
Celery tasks, outcomes come back from the event bus, the fence holds, cancels revoke."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.bridges.servers import CeleryWorker
from tests.polling import wait_for

from taskyard.api.yard import Yard
from taskyard.bridges.celery_pool import CeleryPool
from taskyard.core.states import TERMINAL
from taskyard.model.records import ClaimedJob, Outcome
from taskyard.store import MovableClock
from taskyard.worker.process_executor import ProcessExecutor

LEASE = 30.0


class Pools:
    """Celery pools on the test's store, whose loop the test runs itself, one round at a
    time (only the executor's threads run: sender, event receiver, settler), so that
    each step happens when the test says."""

    def __init__(self, yard: Yard, worker: CeleryWorker) -> None:
        self.yard, self.worker = yard, worker
        self.pools: list[CeleryPool] = []

    def add(self, name: str) -> CeleryPool:
        pool = CeleryPool(self.yard.store, self.worker.app, name=name, pools=("celery",),
                          capacity=4, lease_seconds=LEASE)
        self.pools.append(pool)
        pool.daemon.register()
        assert pool.events.ready.wait(60)
        return pool

    def pump_until(self, pool: CeleryPool, what: str, done: object) -> None:
        def step() -> bool:
            pool.daemon.exchange()
            return bool(done())  # type: ignore[operator]
        wait_for(what, step, timeout=120)

    def close(self) -> None:
        for pool in self.pools:
            pool.executor.shutdown()


@pytest.fixture
def pools(db_url: str, clock: MovableClock, celery_worker: CeleryWorker) -> Iterator[Pools]:
    yard = Yard(db_url, clock=clock)
    yard.add_task_type("add", handler="celery:tests.add", pools=["celery"])
    yard.add_task_type("boom", handler="celery:tests.fail", pools=["celery"])
    yard.add_task_type("hold", handler="celery:tests.wait_for", pools=["celery"])
    yard.add_task_type("local", handler="python:tests.handlers_for_tests:echo", pools=["celery"])
    p = Pools(yard, celery_worker)
    yield p
    p.close()
    yard.close()


def _state(yard: Yard, job_id: int) -> str:
    return yard.get_job(job_id).state


def test_jobs_run_as_celery_tasks_with_their_outcomes(pools: Pools) -> None:
    yard = pools.yard
    pool = pools.add("celery-a")
    added = yard.submit("add", {"x": 2, "y": 3})
    failing = yard.submit("boom", {"message": "no such origin"})
    local = yard.submit("local", {"n": 1})
    pools.pump_until(pool, "the three jobs to end",
                     lambda: all(_state(yard, j) in TERMINAL for j in (added, failing, local)))
    job = yard.get_job(added)
    assert (job.state, job.result, job.attempt) == ("succeeded", 5, 1)
    assert job.started_at is not None
    job = yard.get_job(failing)
    assert job.state == "failed"
    assert "no such origin" in (job.attempts[0].error or "")
    job = yard.get_job(local)  # not a Celery task: refused, in one clear line
    assert job.state == "error"
    assert "is not a Celery task" in (job.attempts[0].error or "")
    assert pool.executor.stats.sent == 2 and pool.daemon.stats["refused"] == 0


def test_the_late_result_of_an_old_attempt_changes_nothing(pools: Pools,
                                                          tmp_path: Path) -> None:
    yard = pools.yard
    release = tmp_path / "release"
    first = pools.add("celery-a")
    job_id = yard.submit("hold", {"path": str(release)})
    pools.pump_until(first, "attempt 1 to run in Celery",
                     lambda: _state(yard, job_id) == "running")
    # The pool's lease runs out (database clock): the scheduler expels it and the job
    # goes to another pool as attempt 2, while attempt 1 still runs in Celery.
    assert yard.store.clock is not None
    yard.store.clock.advance(LEASE + 1)
    yard.schedule()
    assert yard.get_job(job_id).attempts[0].state == "lost"
    second = pools.add("celery-b")
    yard.schedule()  # places the job on the second pool (no scheduler daemon here)
    pools.pump_until(second, "attempt 2 to run in Celery",
                     lambda: yard.get_job(job_id).attempt == 2
                     and _state(yard, job_id) == "running")
    release.touch()  # both tasks end; attempt 1's result reaches the first pool
    wait_for("attempt 1's end from the event bus",
             lambda: [o.attempt for o in first.daemon._unreported._ends] == [1])
    first.daemon.exchange()
    assert (first.daemon.stats["refused"], first.daemon.stats["completed"]) == (1, 0)
    assert _state(yard, job_id) == "running"  # attempt 1's success changed nothing
    pools.pump_until(second, "attempt 2 to end", lambda: _state(yard, job_id) in TERMINAL)
    job = yard.get_job(job_id)
    assert (job.state, job.attempt) == ("succeeded", 2)
    assert job.result["task_id"].startswith(f"taskyard-{job_id}-2-")  # type: ignore[index]
    assert job.result["attempt"] == 2  # type: ignore[index]
    assert [(a.attempt, a.state) for a in job.attempts] == [(1, "lost"), (2, "succeeded")]
    completed = [e for e in yard.events(topic="job-completed")
                 if isinstance(e.payload, dict) and e.payload.get("job_id") == job_id]
    assert [e.payload["attempt"] for e in completed] == [2]  # type: ignore[index]


def test_a_canceled_job_is_revoked_in_celery(pools: Pools, tmp_path: Path) -> None:
    yard = pools.yard
    pool = pools.add("celery-a")
    job_id = yard.submit("hold", {"path": str(tmp_path / "never")})
    pools.pump_until(pool, "the job to run", lambda: _state(yard, job_id) == "running")
    task = pool.executor._flights[(job_id, 1)].task_id
    yard.cancel(job_id)
    pools.pump_until(pool, "the revoke", lambda: pool.executor.stats.revoked == 1)
    result = pools.worker.app.AsyncResult(task)
    wait_for("Celery to end the task", lambda: result.state == "REVOKED")
    assert _state(yard, job_id) == "canceled"


def test_a_worker_refuses_a_celery_job_in_one_line() -> None:
    outcomes: list[Outcome] = []
    done = threading.Event()

    def on_done(outcome: Outcome, _seconds: float | None) -> None:
        outcomes.append(outcome)
        done.set()

    executor = ProcessExecutor(1, on_done=on_done, prewarm=False, guard=False)
    try:
        executor.submit([ClaimedJob(7, 1, "add", "celery:tests.add", {"x": 1}, None)])
        assert done.wait(30)
    finally:
        executor.shutdown()
    assert outcomes[0].state == "error"
    assert "taskyard celery-pool" in (outcomes[0].error or "")


def test_the_command_runs_a_graph_through_celery_and_stops_cleanly(
        db_url: str, celery_worker: CeleryWorker, tmp_path: Path) -> None:
    """``taskyard celery-pool`` as users run it: a graph whose last task adds its
    parents' results (``$result``), then SIGTERM."""
    yard = Yard(db_url)
    yard.add_task_type("add", handler="celery:tests.add", pools=["celery"])
    graph_id = yard.submit_graph({"routing": "nightly", "tasks": {
        "a": {"type": "add", "args": {"x": 1, "y": 2}},
        "b": {"type": "add", "args": {"x": 10, "y": 20}},
        "sum": {"type": "add", "requires": ["a", "b"],
                "args": {"x": {"$result": "a"}, "y": {"$result": "b"}}}}})
    log = tmp_path / "celery-pool.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "taskyard", "--db", db_url, "celery-pool", "--broker",
             celery_worker.broker, "--result-backend", celery_worker.backend,
             "--name", "bridge", "--capacity", "2"], stdout=out, stderr=subprocess.STDOUT)
    try:
        graph = yard.wait_graph(graph_id, timeout=120)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert graph.state == "finished", log.read_text()[-2000:]
    results = {j.label: j.result for j in graph.jobs}
    assert results == {"a": 3, "b": 30, "sum": 33}
    assert code == 0, log.read_text()[-2000:]
    (worker,) = [w for w in yard.workers(include_gone=True) if w.name == "bridge"]
    assert worker.state == "stopped"
    yard.close()
