"""A worker's report keeps each attempt's own values, however many it carries (one
statement for the lot: ``Driver.end_attempts``). Ends of every kind, a retry due,
values that only some rows have, and the reports the store must refuse (a stale
attempt, another worker's job) change nothing."""

from __future__ import annotations

import pytest
from tests.store.driver import claim

from taskyard.model.records import JobSubmission, Outcome, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.worker.reports import report_batch


def _outcome(i: int, job_id: int, attempt: int) -> Outcome:
    kind = i % 5
    if kind == 0:
        return Outcome(job_id, attempt, "succeeded", 0, {"i": i, "s": f"é\"{i}"})
    if kind == 1:  # a retry is due
        return Outcome(job_id, attempt, "failed", 1, None, f"boom {i}",
                       stderr_tail=f"trace {i}")
    if kind == 2:  # a retry is due too
        return Outcome(job_id, attempt, "error", None, None, f"lost {i}",
                       stdout_tail=f"out {i}\n")
    if kind == 3:
        return Outcome(job_id, attempt, "canceled", -15)
    return Outcome(job_id, attempt + 1, "succeeded", 0, {"stale": i})  # refused


@pytest.mark.parametrize("n", [5, 40])
def test_a_report_of_many_attempts_keeps_each_ones_values(store: Store, n: int) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", retries=1, retry_delay=3600.0))
    ids = store.jobs.submit([JobSubmission("t", {"i": i}) for i in range(n)])
    worker_id = store.workers.register("w", ["default"], n, lease_seconds=300).id
    other_id = store.workers.register("other", ["elsewhere"], 1, lease_seconds=300).id
    schedule(store)
    claimed = {j.job_id: j for j in claim(store, worker_id, n)}
    assert sorted(claimed) == ids

    # Another worker's report of these jobs changes nothing.
    assert report_batch(store, other_id, ended=[
        Outcome(j, claimed[j].attempt, "succeeded", 0) for j in ids]).accepted == [False] * n
    assert {store.jobs.get(j).state for j in ids} == {"running"}  # type: ignore[union-attr]

    outcomes = [_outcome(i, j, claimed[j].attempt) for i, j in enumerate(ids)]
    accepted = report_batch(store, worker_id, ended=outcomes).accepted
    assert accepted == [i % 5 != 4 for i in range(n)]
    for i, (job_id, sent) in enumerate(zip(ids, outcomes, strict=True)):
        job = store.jobs.get(job_id)
        assert job is not None
        last = job.attempts[-1]
        expected = ("succeeded", "pending", "pending", "canceled", "running")[i % 5]
        assert job.state == expected, (i, job)
        if i % 5 == 4:
            assert last.state == "running" and last.finished_at is None
            continue
        assert (last.state, last.exit_code, last.result, last.error, last.stdout_tail,
                last.stderr_tail) == (sent.state, sent.exit_code, sent.result, sent.error,
                                      sent.stdout_tail, sent.stderr_tail), (i, last)
        assert last.finished_at is not None and last.worker == "w"
        if i % 5 in (1, 2):
            assert job.run_after is not None and job.run_after > last.finished_at + 60
    topics = [e.topic for e in store.events.list(limit=10 * n)]
    assert topics.count("job-running") == n
    assert topics.count("job-completed") == len(range(0, n, 5))
