"""A worker's report never carries an end without its start (worker/unreported.py). A
short job may start and end while the loop takes a report: after the starts, before the
ends. Its end alone found the job dispatched and was refused; its start, reported next,
left it running for good on an idle worker (seen once in a 200-worker benchmark)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from taskyard.model.records import JobSubmission, Outcome, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.worker.daemon import WorkerDaemon
from taskyard.worker.unreported import Start, Unreported


@pytest.fixture
def daemon(store: Store) -> Iterator[WorkerDaemon]:
    worker = WorkerDaemon(store, name="w", capacity=1)
    yield worker
    worker.executor.shutdown()


def _answers(*lists: list[Start]) -> list[list[Start]]:
    return [list(x) for x in lists]


def test_an_end_taken_after_its_start_was_missed_goes_with_its_start(
        store: Store, daemon: WorkerDaemon) -> None:
    store.task_types.put(TaskTypeSpec("t", "python:tests.handlers_for_tests:echo"))
    daemon.register()
    (job,) = store.jobs.submit([JobSubmission("t")])
    assert schedule(store) is not None
    assert store.jobs.get(job).state == "dispatched"  # type: ignore[union-attr]
    # The race: the loop's first take of the starts comes before the job starts; the
    # job then starts and ends before the loop takes the ends.
    answers = _answers([], [(job, 1, time.monotonic())])
    daemon.executor.take_started = lambda: answers.pop(0) if answers else []  # type: ignore[method-assign]
    daemon._unreported = Unreported(daemon.executor.take_started)
    daemon._unreported.ended(Outcome(job, 1, "succeeded", exit_code=0))
    daemon._looked = time.monotonic()  # no look: the report alone
    daemon.exchange()
    record = store.jobs.get(job)
    assert record is not None and record.state == "succeeded"
    assert daemon.stats["refused"] == 0


def test_a_start_taken_late_without_its_end_waits_for_the_next_report() -> None:
    answers = _answers([(1, 1, 0.0)], [(2, 1, 1.0), (3, 1, 2.0)])
    unreported = Unreported(lambda: answers.pop(0) if answers else [])
    unreported.ended(Outcome(3, 1, "succeeded"))
    ended = unreported.take()
    # Job 3's start goes with its end; job 2, started after the ends were taken, may
    # run in the room of an end this report does not carry: it waits.
    assert [o.job_id for o in ended] == [3]
    assert [s[0] for s in unreported.starts] == [1, 3]
    unreported.reported()
    assert [s[0] for s in unreported.starts] == [2]


def test_a_report_not_made_keeps_everything() -> None:
    answers = _answers([(1, 1, 0.0)], [(2, 1, 1.0)])
    unreported = Unreported(lambda: answers.pop(0) if answers else [])
    unreported.ended(Outcome(1, 1, "succeeded"))
    ended = unreported.take()
    unreported.kept(ended)
    assert unreported.ends() == 1
    assert [s[0] for s in unreported.starts] == [1, 2]
    assert [o.job_id for o in unreported.take()] == [1]


def test_a_last_report_takes_every_start() -> None:
    answers = _answers([], [(2, 1, 1.0)])
    unreported = Unreported(lambda: answers.pop(0) if answers else [])
    assert unreported.take(every_start=True) == []
    assert [s[0] for s in unreported.starts] == [2]
