"""Jobs delayed to a time (a ``run_after`` ahead, a retry's delay) wait outside the
placement index until the cycle's maintenance finds them due (migration 0020), on SQLite
and PostgreSQL: each is placed once due and not before, and a backlog of jobs for later
is not read by the cycle (it cost every cycle a walk past all of it: 100,000 such jobs,
40 ms a cycle on PostgreSQL and 16 on SQLite, against 3 and 1 without them)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.store.driver import claim, complete, jobs_fetched

from taskyard.model.records import JobSubmission, Outcome, Prerequisite, TaskTypeSpec
from taskyard.scheduler.cycle import CycleReport, run_cycle, schedule
from taskyard.store import MovableClock, Store
from taskyard.store.driver.params import UpdateDependents
from taskyard.store.portable import cycle as portable_cycle

LATER = 500


def _cycle(store: Store) -> CycleReport:
    report = schedule(store)
    assert report is not None
    return report


def _delayed(store: Store, job_id: int) -> Any:
    with store.read() as tx:
        row = tx.raw.first("SELECT delayed_until FROM jobs WHERE id = ?", (job_id,))
    assert row is not None
    return row[0]


def test_a_job_for_later_is_placed_once_due_and_not_before(
        store: Store, clock: MovableClock) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    now = store.now()
    later, soon = store.jobs.submit([JobSubmission("t", run_after=now + 60),
                                     JobSubmission("t", run_after=now - 5)])
    store.workers.register("w", ["default"], 4, lease_seconds=600)
    assert _delayed(store, later) == pytest.approx(now + 60)
    report = _cycle(store)
    assert [p.job_id for p in report.placed] == [soon]  # a run_after past is not delayed
    assert _delayed(store, later) is not None and store.jobs.get(later).state == "pending"  # type: ignore[union-attr]
    clock.advance(30)
    assert _cycle(store).placed == []
    clock.advance(31)
    report = _cycle(store)
    assert report.staged == 1 and [p.job_id for p in report.placed] == [later]
    assert _delayed(store, later) is None


def test_a_retry_after_a_delay_is_delayed_until_then(store: Store, clock: MovableClock) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", retries=2, retry_delay=60))
    (job_id,) = store.jobs.submit([JobSubmission("t")])
    worker = store.workers.register("w", ["default"], 1, lease_seconds=600).id
    assert [p.job_id for p in _cycle(store).placed] == [job_id]
    (claimed,) = claim(store, worker, 1)
    assert complete(store, worker, [Outcome(job_id, claimed.attempt, "failed", 1)]) == [True]
    job = store.jobs.get(job_id)
    assert job is not None and job.state == "pending" and job.run_after is not None
    assert _delayed(store, job_id) == pytest.approx(job.run_after)
    assert _cycle(store).placed == []
    clock.advance(job.run_after - store.now() + 1)
    report = _cycle(store)
    assert report.staged == 1 and [p.job_id for p in report.placed] == [job_id]


def test_a_backlog_for_later_is_not_read_by_the_cycle(store: Store) -> None:
    """The jobs for later come first in placement order (a higher priority): the cycle
    reads none of them. Counted, not timed: on PostgreSQL the rows that the cycle's
    transaction fetched from ``jobs`` through an index; on both, the placement index's
    rows, read as the cycle reads them."""
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    now = store.now()
    store.jobs.submit([JobSubmission("t", priority=5, run_after=now + 3600)] * LATER)
    due = store.jobs.submit([JobSubmission("t")] * 3)
    store.workers.register("w", ["default"], 10, lease_seconds=600)
    with store.write() as tx, tx.cycle() as cycle:
        assert cycle is not None
        before = jobs_fetched(tx)
        report = run_cycle(cycle)
        read = jobs_fetched(tx) - before
    assert sorted(p.job_id for p in report.placed) == due
    assert read <= 30, "the cycle read the jobs for later"
    hint = "INDEXED BY ix_jobs_pending_pools" if store.backend == "sqlite" else ""
    with store.read() as tx:
        (ready,) = tx.raw.first(
            f"SELECT COUNT(*) FROM jobs {hint} WHERE state = 'pending' "
            "AND delayed_until IS NULL AND pools = ?", ('["default"]',)) or (None,)
        (waiting,) = tx.raw.first("SELECT COUNT(*) FROM jobs WHERE delayed_until IS NOT NULL"
                                  ) or (None,)
    assert (ready, waiting) == (0, LATER)


def test_staging_fetches_each_due_job_once(store: Store, clock: MovableClock) -> None:
    """Jobs for later, due at once, in a table whose statistics have not seen them yet
    (PostgreSQL's autovacuum analyzes it within its minute): staging fetches each by its
    key, and reads the due ones once. Counted, not timed: on PostgreSQL, the rows the
    staging's transaction fetched from ``jobs`` through an index. Before, PostgreSQL took
    the pending jobs by ``ix_jobs_state_id`` and read the due ones again for each (4,000
    due jobs: 8,000,000 rows, 4.4 s, a cycle holding the lock 8.6 s)."""
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    now = store.now()
    store.jobs.submit([JobSubmission("t", run_after=now + 10)] * LATER)
    clock.advance(30)
    with store.write() as tx, tx.cycle() as cycle:
        assert cycle is not None
        before = jobs_fetched(tx)
        staged = cycle.stage_due_jobs()
        read = jobs_fetched(tx) - before
    assert staged == LATER
    assert read <= 3 * LATER, "the due jobs were read again"
    assert all(_delayed(store, j.id) is None for j in store.jobs.list(limit=LATER))


def test_a_maintenance_stages_a_bounded_number(store: Store, clock: MovableClock,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs due at one instant come out of the delayed index a bounded number per
    maintenance, the earliest first; each cycle places what its workers can take."""
    monkeypatch.setattr(portable_cycle, "STAGE_LIMIT", 4)
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    now = store.now()
    ids = store.jobs.submit([JobSubmission("t", run_after=now + 10 + i) for i in range(10)])
    store.workers.register("w", ["default"], 20, lease_seconds=600)
    clock.advance(30)
    placed: list[int] = []
    for staged in (4, 4, 2):
        report = _cycle(store)
        assert report.staged == staged
        placed += [p.job_id for p in report.placed]
    assert placed == ids


def _woken(listener: Any) -> bool:
    try:
        return bool(listener.wait(30))
    finally:
        listener.close()


def test_a_submit_for_later_wakes_the_scheduler_and_a_cycle_reads_when_it_is_due(
        store: Store) -> None:
    """A submit that runs the cycle itself (as ``Yard.submit`` does) still wakes the
    scheduler for a job for later, and a scheduler's cycle that does not maintain reads
    when the job is due (``read_delayed``): it sleeps no longer than that."""
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.workers.register("w", ["default"], 1, lease_seconds=600)
    _cycle(store)  # maintains: the next one with a long period does not
    listener = store.listener("scheduler")
    with store.submit([JobSubmission("t", run_after=store.now() + 60)]) as submitted:
        if submitted.cycle is not None:
            assert run_cycle(submitted.cycle).placed == []
    assert _woken(listener)
    report = schedule(store, maintenance_every=3600, read_delayed=True)
    assert report is not None and not report.maintained and report.delayed_read
    assert report.delayed_wait == pytest.approx(60, abs=5)
    asked = schedule(store, maintenance_every=3600)
    assert asked is not None and not asked.delayed_read and asked.delayed_wait is None


def test_a_delayed_retry_wakes_the_scheduler_from_a_report_and_a_timeout(
        store: Store, clock: MovableClock) -> None:
    """A failure reported by the worker and a time-out failed by the cycle both delay
    the retry, and each wakes the scheduler to read when it is due."""
    store.task_types.put(TaskTypeSpec("t", "shell:true", timeout=1.0, retries=2,
                                      retry_delay=60))
    (job_id,) = store.jobs.submit([JobSubmission("t")])
    worker = store.workers.register("w", ["default"], 1, lease_seconds=600).id
    _cycle(store)
    (claimed,) = claim(store, worker, 1)
    listener = store.listener("scheduler")
    assert complete(store, worker, [Outcome(job_id, claimed.attempt, "failed", 1)]) == [True]
    assert _woken(listener)
    clock.advance(61)
    assert [p.job_id for p in _cycle(store).placed] == [job_id]
    claim(store, worker, 1)
    listener = store.listener("scheduler")
    clock.advance(1.5)
    report = schedule(store, timeout_grace=0.0, read_delayed=True)
    assert report is not None and report.timed_out == [job_id]
    assert _woken(listener)
    # Read before the time-out delayed the retry; the next cycle reads it.
    report = schedule(store, maintenance_every=3600, read_delayed=True)
    assert report is not None and report.delayed_wait is not None
    assert 29 <= report.delayed_wait <= 61  # jitter shortens a delay to half at most


def test_a_job_for_later_released_by_its_prerequisite_waits_on_or_is_placed_if_due(
        store: Store, clock: MovableClock) -> None:
    """A job for later that waits on a prerequisite (update on launch) is released to
    pending when the prerequisite ends: still for later, it stays delayed and the release
    wakes the scheduler; due by then, it joins the placement index at once, and the cycle
    of the report that released it places it (no maintenance needed)."""
    store.task_types.put(TaskTypeSpec("update", "shell:true"))
    store.task_types.put(TaskTypeSpec("run", "shell:true", prerequisites=(
        Prerequisite("update", {"p": "{p}"}, 0),)))
    worker = store.workers.register("w", ["default"], 4, lease_seconds=600).id
    now = store.now()
    soon, later = store.jobs.submit([JobSubmission("run", {"p": 1}, run_after=now + 30),
                                     JobSubmission("run", {"p": 2}, run_after=now + 3600)])
    assert {store.jobs.get(j).state for j in (soon, later)} == {"waiting"}  # type: ignore[union-attr]
    _cycle(store)
    updates = claim(store, worker, 4)
    assert len(updates) == 2
    clock.advance(60)  # soon is due, later is not
    listener = store.listener("scheduler")
    with store.write() as tx:
        tx.attempts.record(worker, ended=[Outcome(u.job_id, u.attempt, "succeeded", 0)
                                          for u in updates])
        with tx.cycle() as cycle:
            assert cycle is not None
            report = run_cycle(cycle, maintenance_every=3600)
    assert [p.job_id for p in report.placed] == [soon] and report.staged == 0
    assert _delayed(store, soon) is None and _delayed(store, later) is not None
    assert store.jobs.get(later).state == "pending"  # type: ignore[union-attr]
    assert _woken(listener)


def test_a_release_wakes_the_scheduler_only_for_a_job_for_later(
        store: Store, clock: MovableClock) -> None:
    """The rows a release returns tell which released job is still for later: only that
    one wakes the scheduler. SQLite 3.40 answered ``delayed_until IS NOT NULL`` in a
    RETURNING clause with true for every row (a table whose rowid alias is declared NOT
    NULL), so that every hand-off of a chain woke the scheduler, whose cycle then raced
    the reporting worker's for the lock."""
    store.task_types.put(TaskTypeSpec("update", "shell:true"))
    store.task_types.put(TaskTypeSpec("run", "shell:true", prerequisites=(
        Prerequisite("update", {"p": "{p}"}, 0),)))
    worker = store.workers.register("w", ["default"], 4, lease_seconds=600).id

    # Through a worker's report, as a chain hands off: no wake-up for the scheduler.
    (job_id,) = store.jobs.submit([JobSubmission("run", {"p": 1})])
    _cycle(store)
    (update,) = claim(store, worker, 4)
    listener = store.listener("scheduler")
    try:
        with store.write() as tx:
            tx.attempts.record(worker, ended=[Outcome(update.job_id, update.attempt,
                                                      "succeeded", 0)])
            with tx.cycle() as cycle:
                assert cycle is not None
                report = run_cycle(cycle, maintenance_every=3600)
        assert [p.job_id for p in report.placed] == [job_id]
        # A wake-up sent would be waiting already (committed before this wait).
        assert not listener.wait(1.0)
    finally:
        listener.close()

    now = store.now()
    plain, later = store.jobs.submit([JobSubmission("run", {"p": 2}),
                                      JobSubmission("run", {"p": 3}, run_after=now + 3600)])
    assert _delayed(store, plain) is None and _delayed(store, later) is not None
    with store.write() as tx:
        rows = tx.driver.update_dependents(tx.raw, UpdateDependents(
            [plain, later], 1, 0, "pending", None))
    assert {r[0]: r[3] for r in rows} == {plain: None, later: pytest.approx(now + 3600)}
