"""The store's transitions, on SQLite and PostgreSQL alike (one conformance suite)."""

from __future__ import annotations

import pytest
from driver import SHORT_LEASE, wait_out_lease
from sqlalchemy import func, select
from tests.store.driver import claim, complete

from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import JobSubmission, Outcome, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.scheduler.explain import explain_job
from taskyard.store import Store
from taskyard.store import schema as t


def _count(store: Store, table: t.Table) -> int:  # type: ignore[name-defined]
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


@pytest.fixture
def echo(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("echo", "shell:echo {x}", retries=0))
    return store


def test_lifecycle_pending_dispatched_running_succeeded(echo: Store) -> None:
    store = echo
    (job_id,) = store.jobs.submit([JobSubmission("echo", {"x": 1})])
    assert store.jobs.get(job_id).state == "pending"  # type: ignore[union-attr]
    worker = store.workers.register("w1", ["default"], 2, lease_seconds=30)
    report = schedule(store)
    assert report is not None and [p.job_id for p in report.placed] == [job_id]
    job = store.jobs.get(job_id)
    assert job is not None and (job.state, job.attempt, job.worker) == ("dispatched", 1, "w1")
    (claimed,) = claim(store, worker.id, 10)
    assert (claimed.job_id, claimed.attempt, claimed.handler) == (job_id, 1, "shell:echo {x}")
    assert store.jobs.get(job_id).state == "running"  # type: ignore[union-attr]
    ok = complete(store,
        worker.id, [Outcome(job_id, 1, "succeeded", 0, {"n": 1}, stdout_tail="1\n")]
    )
    assert ok == [True]
    job = store.jobs.get(job_id)
    assert job is not None
    assert (job.state, job.result, job.exit_code) == ("succeeded", {"n": 1}, 0)
    assert job.finished_at is not None and job.started_at is not None
    assert [(a.attempt, a.state, a.worker, a.stdout_tail) for a in job.attempts] == [
        (1, "succeeded", "w1", "1\n")
    ]


def test_failure_keeps_exit_code_and_stderr_tail(echo: Store) -> None:
    store = echo
    (job_id,) = store.jobs.submit([JobSubmission("echo", {"x": 1})])
    worker = store.workers.register("w1", ["default"], 1, lease_seconds=30)
    schedule(store)
    claim(store, worker.id, 1)
    complete(store,
        worker.id, [Outcome(job_id, 1, "failed", 3, error="exit 3", stderr_tail="boom\n")]
    )
    job = store.jobs.get(job_id)
    assert job is not None
    assert (job.state, job.exit_code) == ("failed", 3)
    assert job.attempts[0].stderr_tail == "boom\n"


def test_retry_goes_back_to_pending_after_its_delay(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("flaky", "shell:false", retries=1, retry_delay=60))
    (job_id,) = store.jobs.submit([JobSubmission("flaky")])
    worker = store.workers.register("w1", ["default"], 1, lease_seconds=30)
    schedule(store)
    claim(store, worker.id, 1)
    complete(store, worker.id, [Outcome(job_id, 1, "failed", 1)])
    job = store.jobs.get(job_id)
    assert job is not None and job.state == "pending"
    assert job.run_after is not None and job.run_after >= store.now() + 29  # jitter ≥ half
    report = schedule(store)
    assert report is not None and report.placed == []  # not due yet


def test_stale_attempt_completion_is_refused_and_changes_nothing(echo: Store) -> None:
    store = echo
    (job_id,) = store.jobs.submit([JobSubmission("echo", {"x": 1})])
    worker = store.workers.register("w1", ["default"], 1, lease_seconds=30)
    schedule(store)
    claim(store, worker.id, 1)
    assert complete(store, worker.id, [Outcome(job_id, 2, "succeeded", 0, "x")]) == [
        False
    ]
    other = store.workers.register("w2", ["default"], 1, lease_seconds=30)
    assert complete(store, other.id, [Outcome(job_id, 1, "succeeded", 0)]) == [False]
    job = store.jobs.get(job_id)
    assert job is not None and (job.state, job.result) == ("running", None)
    assert complete(store, worker.id, [Outcome(job_id, 1, "succeeded", 0, "ok")]) == [
        True
    ]
    # A second report of the same attempt is refused too: no double completion.
    assert complete(store, worker.id, [Outcome(job_id, 1, "failed", 1)]) == [False]
    assert store.jobs.get(job_id).state == "succeeded"  # type: ignore[union-attr]


def test_one_slot_runs_by_priority_then_creation_order(echo: Store) -> None:
    store = echo
    ids = store.jobs.submit(
        [JobSubmission("echo", {"x": i}, priority=p) for i, p in enumerate([0, 5, 0, 5, 9])]
    )
    worker = store.workers.register("w1", ["default"], 1, lease_seconds=30)
    order = []
    for _ in ids:
        schedule(store)
        (claimed,) = claim(store, worker.id, 1)
        order.append(claimed.job_id)
        complete(store, worker.id, [Outcome(claimed.job_id, claimed.attempt, "succeeded")])
    assert order == [ids[4], ids[1], ids[3], ids[0], ids[2]]


def test_cycle_never_exceeds_capacity(echo: Store) -> None:
    store = echo
    store.jobs.submit([JobSubmission("echo", {"x": i}) for i in range(50)])
    workers = [store.workers.register(f"w{i}", ["default"], 3, lease_seconds=30) for i in range(4)]
    schedule(store)
    schedule(store)
    listed = store.workers.list()
    assert sum(w.used for w in listed) == 12
    assert all(w.used <= w.capacity for w in listed)
    assert len(claim(store, workers[0].id, 100)) == 3


def test_bad_input_is_rejected_and_writes_nothing(echo: Store) -> None:
    store = echo
    before = _count(store, t.jobs)
    with pytest.raises(InvalidInput, match="unknown task type 'nope'"):
        store.jobs.submit([JobSubmission("echo", {"x": 1}), JobSubmission("nope")])
    with pytest.raises(InvalidInput, match="args"):
        store.jobs.submit([JobSubmission("echo", {"x": float("nan")})])
    with pytest.raises(InvalidInput, match="'x'"):
        store.task_types.put(TaskTypeSpec("locked", "shell:true", locks=("p:{x}",)))
        store.jobs.submit([JobSubmission("locked", {})])
    assert _count(store, t.jobs) == before
    with pytest.raises(InvalidInput, match="handler"):
        store.task_types.put(TaskTypeSpec("bad", "ruby:x"))
    assert store.task_types.get("bad") is None


def test_expired_lease_suspends_and_requeues_with_next_attempt(echo: Store) -> None:
    store = echo
    (job_id,) = store.jobs.submit([JobSubmission("echo", {"x": 1})])
    dead = store.workers.register("dead", ["default"], 1, lease_seconds=SHORT_LEASE)
    schedule(store)
    assert claim(store, dead.id, 1)
    wait_out_lease(store, dead.id)
    store.workers.register("alive", ["default"], 1, lease_seconds=30)
    report = schedule(store)
    assert report is not None and report.expelled == [dead.id]
    job = store.jobs.get(job_id)
    assert job is not None and (job.state, job.attempt, job.worker) == ("dispatched", 2, "alive")
    assert [a.state for a in job.attempts] == ["lost", "dispatched"]
    # The expelled worker's late report is fenced off.
    assert complete(store, dead.id, [Outcome(job_id, 1, "succeeded")]) == [False]
    assert not store.workers.renew_lease(dead.id, 30, [(job_id, 1)]).renewed


def test_graceful_stop_suspends_jobs_for_requeue(echo: Store) -> None:
    store = echo
    (job_id,) = store.jobs.submit([JobSubmission("echo", {"x": 1})])
    worker = store.workers.register("w", ["default"], 1, lease_seconds=30)
    schedule(store)
    claim(store, worker.id, 1)
    assert store.workers.stop(worker.id) == 1
    assert store.jobs.get(job_id).state == "suspended"  # type: ignore[union-attr]
    schedule(store)
    assert store.jobs.get(job_id).state == "pending"  # type: ignore[union-attr]


def test_cancel_pending_and_running(echo: Store) -> None:
    store = echo
    a, b = store.jobs.submit([JobSubmission("echo", {"x": 1}), JobSubmission("echo", {"x": 2})])
    worker = store.workers.register("w", ["default"], 1, lease_seconds=30)
    schedule(store)
    claim(store, worker.id, 1)
    assert store.jobs.cancel(b).state == "canceled"
    assert store.jobs.cancel(a).state == "canceled"
    assert store.workers.renew_lease(worker.id, 30, [(a, 1)]).stop == ((a, 1),)
    assert complete(store, worker.id, [Outcome(a, 1, "succeeded")]) == [False]
    with pytest.raises(Conflict):
        store.jobs.cancel(a)
    with pytest.raises(NotFound):
        store.jobs.cancel(10_000)
    assert store.retries.retry(a).state == "pending"


def test_live_worker_names_are_unique(store: Store) -> None:
    w = store.workers.register("same", ["default"], 1, lease_seconds=30)
    with pytest.raises(Conflict, match="same"):
        store.workers.register("same", ["default"], 1, lease_seconds=30)
    store.workers.stop(w.id)
    store.workers.register("same", ["default"], 1, lease_seconds=30)


def test_jobs_in_pools_without_workers_stay_pending(echo: Store) -> None:
    store = echo
    (job_id,) = store.jobs.submit([JobSubmission("echo", {"x": 1}, pools=("gpu",))])
    store.workers.register("w", ["default"], 4, lease_seconds=30)
    report = schedule(store)
    # The cycle does not even read jobs whose pools no worker serves (or has room in).
    assert report is not None and report.placed == [] and report.scanned == 0
    assert [r.code for r in explain_job(store, job_id)] == ["no_worker"]
    job = store.jobs.get(job_id)
    assert job is not None and job.state == "pending"
