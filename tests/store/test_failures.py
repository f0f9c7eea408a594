"""Failure handling in the store, on SQLite and PostgreSQL: lapsed leases fence a worker off
before the scheduler expels it, the worker-loss budget, scheduler-enforced timeouts with
retries, and anti-starvation aging."""

from __future__ import annotations

import pytest
from driver import SHORT_LEASE, wait_out_lease
from tests.store.driver import claim, complete, jobs_fetched

from taskyard.core.recurrence import effective_priority
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, Outcome, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import MovableClock, Store


def _cycle(store: Store, **options: float) -> list[int]:
    report = schedule(store, **options)  # type: ignore[arg-type]
    assert report is not None
    return [p.job_id for p in report.placed]


def test_a_lapsed_lease_fences_the_worker_before_it_is_expelled(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    a, b = store.jobs.submit([JobSubmission("t"), JobSubmission("t")])
    worker = store.workers.register("w", ["default"], 2, lease_seconds=SHORT_LEASE)
    assert sorted(_cycle(store)) == [a, b]
    assert [j.job_id for j in claim(store, worker.id, 1)] == [a]
    wait_out_lease(store, worker.id)
    # Not yet expelled (no cycle ran), but the lease ran out on the database clock:
    # nothing the worker says is accepted, and nothing changes.
    assert complete(store, worker.id, [Outcome(a, 1, "succeeded", 0)]) == [False]
    assert claim(store, worker.id, 1) == []
    assert not store.workers.renew_lease(worker.id, 30, [(a, 1)]).renewed
    job = store.jobs.get(a)
    assert job is not None and (job.state, job.attempt, job.result) == ("running", 1, None)
    assert store.jobs.get(b).state == "dispatched"  # type: ignore[union-attr]
    store.workers.register("w2", ["default"], 2, lease_seconds=30)
    assert sorted(_cycle(store)) == [a, b]
    assert [a_.state for a_ in store.jobs.get(a).attempts] == ["lost", "dispatched"]  # type: ignore[union-attr]


def _lose_worker(store: Store, job_id: int, n: int) -> None:
    """The job's worker dies while running it: its lease runs out (database clock) and
    a cycle expels it. The lease is long until the job is claimed (a loaded machine may
    take more than a second to get there), then renewed for a moment and left to lapse."""
    worker = store.workers.register(f"doomed-{n}", ["default"], 1, lease_seconds=60)
    _cycle(store)
    (claimed,) = claim(store, worker.id, 1)
    assert claimed.job_id == job_id
    assert store.workers.renew_lease(worker.id, 0.1, [(job_id, claimed.attempt)]).renewed
    wait_out_lease(store, worker.id)
    report = schedule(store)
    assert report is not None and report.expelled == [worker.id]


@pytest.mark.parametrize("budget", [0, 2])
def test_worker_loss_budget_is_separate_from_retries(store: Store, budget: int) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", retries=5, max_worker_losses=budget))
    (job_id,) = store.jobs.submit([JobSubmission("t")])
    for n in range(budget):
        _lose_worker(store, job_id, n)
        _cycle(store)  # requeued: losses within the budget
        job = store.jobs.get(job_id)
        assert job is not None and job.state == "pending", n
    _lose_worker(store, job_id, budget)
    _cycle(store)
    job = store.jobs.get(job_id)
    assert job is not None and job.state == "error"
    assert "max_worker_losses" in (job.error or "")
    assert [a.state for a in job.attempts] == ["lost"] * (budget + 1)
    reasons = [e.payload["reason"] for e in store.events.list(job_id=job_id)
               if e.topic == "job-exception"]
    assert reasons == ["worker lease expired"] * (budget + 1) + [
        "lost its worker more times than max_worker_losses allows"]
    with pytest.raises(InvalidInput, match="max_worker_losses must be a whole number from 0 to"):
        store.task_types.put(TaskTypeSpec("bad", "shell:true", max_worker_losses=-1))


def test_the_scheduler_enforces_a_deadline_and_retries_apply(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("slow", "shell:sleep 60", timeout=0.2, retries=1))
    (job_id,) = store.jobs.submit([JobSubmission("slow")])
    worker = store.workers.register("hung", ["default"], 1, lease_seconds=300)
    _cycle(store)
    claim(store, worker.id, 1)
    store.clock.advance(0.3)  # type: ignore[union-attr]
    # Attempt 1 times out; the same cycle places the retry (the slot is free again).
    assert _cycle(store, timeout_grace=0.0) == [job_id]
    job = store.jobs.get(job_id)
    assert job is not None and (job.state, job.attempt) == ("dispatched", 2)
    assert (job.attempts[0].state, job.attempts[0].exit_code) == ("failed", 130)
    # The hung worker's heartbeat is told to stop the attempt; its late report is refused.
    assert store.workers.renew_lease(worker.id, 300, [(job_id, 1)]).stop == ((job_id, 1),)
    assert complete(store, worker.id, [Outcome(job_id, 1, "succeeded", 0)]) == [False]
    claim(store, worker.id, 1)
    store.clock.advance(0.3)  # type: ignore[union-attr]
    _cycle(store, timeout_grace=0.0)  # attempt 2: no retries left
    job = store.jobs.get(job_id)
    assert job is not None and (job.state, job.exit_code, job.attempt) == ("failed", 130, 2)
    topics = [e.topic for e in store.events.list(job_id=job_id)]
    assert topics.count("job-failed") == 2


def test_aging_raises_waiting_jobs_by_full_periods(store: Store, clock: MovableClock) -> None:
    period = 60.0
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    old = store.jobs.submit([JobSubmission("t", priority=p) for p in (0, 5)])
    assert store.aging.age_pending(period) == 0  # not a full period yet: nothing changes
    clock.advance(2.1 * period)
    fresh = store.jobs.submit([JobSubmission("t", priority=1)])
    created = {j: store.jobs.get(j).created_at for j in old + fresh}  # type: ignore[union-attr]
    now = store.now()
    assert store.aging.age_pending(period) == 2
    for job_id, base in zip(old + fresh, (0, 5, 1), strict=True):
        job = store.jobs.get(job_id)
        assert job is not None
        expected = effective_priority(base, now - created[job_id], period / 60)
        # The database clock moved on a little between `now` and the update.
        assert expected <= job.priority <= expected + 1, (job_id, job.priority)
    assert store.jobs.get(fresh[0]).priority == 1  # type: ignore[union-attr]
    # Aging starts from the submitted priority each time: never compounds.
    clock.advance(1.1 * period)
    store.aging.age_pending(period)
    waited = store.now() - created[old[0]]
    assert store.jobs.get(old[0]).priority <= int(waited / period)  # type: ignore[union-attr]
    # The aged job now beats a fresh job of higher submitted priority.
    store.workers.register("w", ["default"], 1, lease_seconds=30)
    assert _cycle(store) == [old[1]]


def test_aging_reads_only_the_oldest_pending_jobs(store: Store, clock: MovableClock) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    ids = store.jobs.submit([JobSubmission("t") for _ in range(5)])
    clock.advance(90)  # one full period of a minute, and not a second one
    assert store.aging.age_pending(60.0, limit=2) == 2
    assert [store.jobs.get(j).priority for j in ids] == [1, 1, 0, 0, 0]  # type: ignore[union-attr]


def test_aging_fetches_each_of_the_oldest_once(store: Store, clock: MovableClock) -> None:
    """Aging in a table whose statistics have not seen its pending jobs (PostgreSQL's
    autovacuum analyzes it within its minute) fetches each of the oldest by its key.
    Counted, not timed: on PostgreSQL, the rows its transaction fetched from ``jobs``
    through an index. Before, PostgreSQL read the oldest again for each pending job
    (4,000 pending, the oldest 1,000: 2.3 s)."""
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.jobs.submit([JobSubmission("t")] * 400)
    clock.advance(90)
    with store.write() as tx:
        before = jobs_fetched(tx)
        aged = tx.aging.age_pending(60.0, limit=100)
        read = jobs_fetched(tx) - before
    assert aged == 100
    assert read <= 300, "the oldest were read again"


def test_losing_a_worker_does_not_use_up_the_handlers_retries(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", retries=1))
    (job_id,) = store.jobs.submit([JobSubmission("t")])
    _lose_worker(store, job_id, 0)  # attempt 1: the worker is lost (not a failure)
    _cycle(store)
    worker = store.workers.register("w", ["default"], 1, lease_seconds=30)
    _cycle(store)
    for attempt, state in ((2, "pending"), (3, "failed")):
        (claimed,) = claim(store, worker.id, 1)
        assert claimed.attempt == attempt
        assert complete(store, worker.id, [Outcome(job_id, attempt, "failed", 1)]) == [True]
        job = store.jobs.get(job_id)
        assert job is not None and job.state == state, (attempt, job.state)
        _cycle(store)
    assert [a.state for a in store.jobs.get(job_id).attempts] == ["lost", "failed", "failed"]  # type: ignore[union-attr]


def test_a_graceful_stop_is_not_a_worker_loss(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", max_worker_losses=0))
    (job_id,) = store.jobs.submit([JobSubmission("t")])
    for n in range(3):  # stopped (SIGTERM) three times: not the job's fault
        worker = store.workers.register(f"stopping-{n}", ["default"], 1, lease_seconds=30)
        _cycle(store)
        assert claim(store, worker.id, 1)[0].job_id == job_id
        assert store.workers.stop(worker.id) == 1
        _cycle(store)
        job = store.jobs.get(job_id)
        assert job is not None and job.state == "pending", n


def test_expelling_a_dead_worker_counts_a_loss(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", max_worker_losses=0))
    (job_id,) = store.jobs.submit([JobSubmission("t")])
    worker = store.workers.register("crashed", ["default"], 1, lease_seconds=300)
    _cycle(store)
    assert claim(store, worker.id, 1)[0].job_id == job_id
    assert store.workers.expel(worker.id, "worker process exited") == 1
    assert store.workers.expel(worker.id) == 0  # once
    _cycle(store)
    job = store.jobs.get(job_id)
    assert job is not None and job.state == "error"  # a budget of 0: the first loss ends it
    assert job.attempts[0].error == "worker process exited"
