"""A batch of jobs that share a type, graph and routing (a ``submit_many``) is announced
by the driver with its insert (``InsertJobs.announce``: on PostgreSQL the statement that
takes the batch's ids writes the events, while the client builds the rows), on both
stores: one ``job-pending`` event per job, in the order of the ids, as the job's own
would read; nothing of it is left when a row is refused, wherever the refused row
falls (built ahead of the ``COPY`` or while it streams); events the unit buffered
before keep their place. The batch is built from the task type its store keeps,
written only while the type is as kept."""

from __future__ import annotations

from typing import Any

import pytest

from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store, open_store
from taskyard.store.cursor import BULK_MIN_ROWS
from taskyard.store.driver.params import InsertJobs
from taskyard.store.postgresql.jobs import AHEAD_ROWS
from taskyard.store.schema.job_rows import job_row
from taskyard.store.transitions.events import graph_changed, job_pending

HANDLER = "python:tests.handlers_for_tests:echo"


def pending_events(store: Store, limit: int) -> list[Any]:
    return [e for e in store.events.list(limit=limit) if e.topic == "job-pending"]


@pytest.mark.parametrize("n", [3, BULK_MIN_ROWS + 5, AHEAD_ROWS + 5])
def test_a_batch_of_one_type_is_announced_by_its_insert_one_event_a_job_in_order(
        store: Store, n: int) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    with store.write() as tx:
        ids = tx.jobs.add([JobSubmission("t", {"i": i}) for i in range(n)]).ids
        assert tx.events.buffer == []  # written with the jobs, not left to the unit's end
    assert len(ids) == n and ids == sorted(ids)
    events = pending_events(store, 2 * n)
    assert [e.payload for e in events] == [{"job_id": i, "type": "t"} for i in ids]
    assert {e.routing_key for e in events} == {"taskyard._._._"}
    assert [e.id for e in events] == sorted(e.id for e in events)
    last = store.jobs.get(ids[-1], attempts=False)
    assert last is not None and (last.state, last.args) == ("pending", {"i": n - 1})


def test_a_batch_with_a_routing_of_its_own_is_announced_with_it(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    ids = store.jobs.submit([JobSubmission("t", {}, routing="r.x") for _ in range(4)])
    assert [(e.routing_key, e.payload["job_id"]) for e in pending_events(store, 10)] == [
        ("taskyard._.r.x", i) for i in ids]


def test_events_buffered_before_the_batch_keep_their_place(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    with store.write() as tx:
        tx.events.append([graph_changed(7, "running", "r")])
        ids = tx.jobs.add([JobSubmission("t", {}) for _ in range(3)]).ids
    assert [(e.topic, e.payload.get("job_id")) for e in store.events.list()] == [
        ("graph-running", None), *(("job-pending", i) for i in ids)]


@pytest.mark.parametrize("refused", [2, BULK_MIN_ROWS + 200, AHEAD_ROWS + 200])
def test_a_batch_refused_anywhere_leaves_neither_jobs_nor_events(
        store: Store, refused: int) -> None:
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    subs = [JobSubmission("t", {"i": i}) for i in range(refused + 100)]
    subs[refused] = JobSubmission("t", {"i": float("nan")})
    with pytest.raises(InvalidInput, match=f"job {refused}: args"):
        store.jobs.submit(subs)
    assert store.jobs.list() == [] and store.events.list() == []
    ids = store.jobs.submit([JobSubmission("t", {}) for _ in range(3)])
    assert [e.payload["job_id"] for e in pending_events(store, 10)] == ids


def test_a_driver_refuses_to_announce_rows_it_may_leave_out(store: Store) -> None:
    """``announce`` writes an event per row: with ``skip_taken_keys`` some rows may not go
    in, and the driver says so instead of announcing jobs that do not exist."""
    store.task_types.put(TaskTypeSpec("t", HANDLER))
    with pytest.raises(ValueError, match="skip_taken_keys"), store.write() as tx:
        row = job_row(JobSubmission("t", {}, dedup_key="k"), TaskTypeSpec("t", HANDLER), 0)
        tx.driver.insert_jobs(tx.raw, InsertJobs(
            tuple(row), [tuple(row.values())] * 2, 2, skip_taken_keys=True,
            announce=job_pending(0, None, "", type="t")))
    assert store.jobs.list() == [] and store.events.list() == []


def test_a_batch_is_built_from_its_type_as_it_is_now(db_url: str) -> None:
    """A batch of one type is built from the type its store keeps (no read of it per
    batch) and written only while the type is as kept: changed by another process's
    store, the next batch is built from the type as it is now — also when its rows
    were refused by the type as kept, at the first row or further on."""
    submitter, admin = open_store(db_url), open_store(db_url)  # two processes' stores
    try:
        admin.task_types.put(TaskTypeSpec("t", HANDLER, cost=1, pools=("a",)))
        first = submitter.jobs.submit([JobSubmission("t", {}) for _ in range(3)])
        job = submitter.jobs.get(first[0], attempts=False)
        assert job is not None and (job.cost, job.pools) == (1, ("a",))
        admin.task_types.put(TaskTypeSpec("t", HANDLER, cost=3, pools=("b",), retries=2,
                                          locks=("res:{x}",)))
        second = submitter.jobs.submit([JobSubmission("t", {"x": i}) for i in range(3)])
        job = submitter.jobs.get(second[2], attempts=False)
        assert job is not None and (job.cost, job.pools, job.retries) == (3, ("b",), 2)
        assert "res:2" in job.locks[0]
        # The lock template needs its argument: refused, as without any cache.
        with pytest.raises(InvalidInput, match="args have no 'x'"):
            submitter.jobs.submit([JobSubmission("t", {"x": 0}), JobSubmission("t", {})])
        # Refused by the type as kept (first row; a later row), not by the type now.
        admin.task_types.put(TaskTypeSpec("t", HANDLER, cost=5))
        third = submitter.jobs.submit([JobSubmission("t", {}) for _ in range(3)])
        admin.task_types.put(TaskTypeSpec("t", HANDLER, cost=5, locks=("res:{x}",)))
        submitter.jobs.submit([JobSubmission("t", {"x": 1}) for _ in range(2)])
        admin.task_types.put(TaskTypeSpec("t", HANDLER, cost=6))
        fourth = submitter.jobs.submit([JobSubmission("t", {"x": 1}), JobSubmission("t", {})])
        costs = [(j.cost, j.locks) for j in (submitter.jobs.get(i, attempts=False)
                                             for i in (*third, *fourth)) if j is not None]
        assert costs == [(5, ())] * 3 + [(6, ())] * 2
        pending = [e.payload["job_id"] for e in submitter.events.list(limit=100)
                   if e.topic == "job-pending"]
        assert len(pending) == len(set(pending))  # no job announced twice
        assert set(pending) == {j.id for j in submitter.jobs.list(limit=100)}
    finally:
        submitter.close()
        admin.close()
