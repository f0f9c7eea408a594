"""Delayed one-shot jobs, the priority runner, list-pending — on both stores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tests.store.driver import claim, complete

from taskyard.api.yard import Yard
from taskyard.model.errors import NotFound
from taskyard.model.records import JobSubmission, Outcome, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import MovableClock, Store


@pytest.fixture
def echo(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("echo", "shell:echo {x}"))
    store.task_types.put(TaskTypeSpec("other", "shell:true"))
    return store


def placed(store: Store) -> list[int]:
    report = schedule(store)
    assert report is not None
    return [p.job_id for p in report.placed]


def test_a_delayed_job_is_not_placed_before_its_time(echo: Store, clock: MovableClock) -> None:
    echo.workers.register("w", ["default"], 4, lease_seconds=300)
    due = echo.now() + 60
    (job_id,) = echo.jobs.submit([JobSubmission("echo", {"x": 1}, run_after=due)])
    for step in (0, 30, 29):  # the clock reaches a second before run_after, no further
        clock.advance(step)
        assert placed(echo) == []
        assert echo.jobs.get(job_id).state == "pending"  # type: ignore[union-attr]
    clock.advance(1.01)
    # Placed by the first cycle that reads the clock at or after run_after.
    assert placed(echo) == [job_id] and echo.now() >= due


def test_run_after_as_a_duration_or_an_iso_time(echo: Store, db_url: str,
                                               clock: MovableClock) -> None:
    echo.workers.register("w", ["default"], 4, lease_seconds=300)
    with Yard(db_url, inline_cycle=False, clock=clock) as yard:
        before = echo.now()
        soon = yard.submit("echo", {"x": 1}, run_after="0.5s")
        when = datetime.fromtimestamp(before + 0.5, UTC).isoformat()
        at_time = yard.submit("echo", {"x": 2}, run_after=when)
        due = []
        for job_id in (soon, at_time):
            job = yard.get_job(job_id)
            assert job.run_after is not None
            assert before + 0.5 - 1e-3 <= job.run_after <= echo.now() + 0.5
            due.append(job.run_after)
        assert placed(echo) == []
        clock.advance(max(due) + 0.01 - echo.now())  # both are due now
        assert sorted(placed(echo)) == sorted([soon, at_time])


def test_a_flood_of_low_priority_jobs_cannot_delay_a_high_priority_one(echo: Store) -> None:
    worker = echo.workers.register("w", ["default"], 1, lease_seconds=300)
    echo.jobs.submit([JobSubmission("echo", {"x": i}) for i in range(5000)])
    (first,) = placed(echo)  # the slot is busy with the oldest low-priority job
    (urgent,) = echo.jobs.submit([JobSubmission("echo", {"x": "urgent"}, priority=10)])
    claim(echo, worker.id, 1)
    complete(echo, worker.id, [Outcome(first, 1, "succeeded", 0)])
    report = schedule(echo)
    assert report is not None and [p.job_id for p in report.placed] == [urgent]
    # The cycle read one candidate, not the backlog of 4,999.
    assert report.scanned == 1


def test_same_priority_runs_oldest_first_and_priority_beats_age(echo: Store) -> None:
    echo.workers.register("w", ["default"], 3, lease_seconds=300)
    old_low, mid, new_high = echo.jobs.submit([
        JobSubmission("echo", {"x": 1}, priority=-1),
        JobSubmission("echo", {"x": 2}),
        JobSubmission("echo", {"x": 3}, priority=5),
    ])
    report = schedule(echo)
    assert report is not None
    assert [p.job_id for p in report.placed] == [new_high, mid, old_low]


def test_list_pending_is_that_types_pending_jobs_oldest_first(echo: Store) -> None:
    ids = echo.jobs.submit([JobSubmission("echo", {"x": i}, priority=i % 3) for i in range(7)])
    echo.jobs.submit([JobSubmission("other")])
    echo.jobs.cancel(ids[1])
    got = echo.jobs.pending("echo", limit=4)
    assert [j.id for j in got] == [ids[0], ids[2], ids[3], ids[4]]
    assert all(j.state == "pending" and j.type == "echo" for j in got)
    assert [j.id for j in echo.jobs.pending("other")] != []
    with pytest.raises(NotFound, match="no task type 'nope'"):  # as `jobs list-pending`
        echo.jobs.pending("nope")
