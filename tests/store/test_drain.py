"""Draining a worker (store/transitions/drain.py) on both stores: what it runs goes on,
nothing new is placed on it, another worker takes the new work."""

from __future__ import annotations

import pytest
from tests.store.driver import claim

from taskyard.model.errors import NotFound
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.store.transitions.drain import drain_worker


def test_a_drained_worker_keeps_its_jobs_and_gets_no_new_one(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    w1 = store.workers.register("w1", ["default"], 2, lease_seconds=30).id
    (first,) = store.jobs.submit([JobSubmission("t")])
    schedule(store)
    assert store.jobs.get(first).worker == "w1"  # type: ignore[union-attr]
    assert drain_worker(store, "w1") == w1
    (event,) = store.events.list(topic="worker-draining")
    assert event.payload == {"worker": "w1", "worker_id": w1}
    # Its next report still asks for a prefetch window: capacity 0 places nothing anyway
    # (core/placement.py: a worker without capacity is closed).
    with store.write() as tx:
        tx.attempts.record(w1, prefetch=5)
    (second,) = store.jobs.submit([JobSubmission("t")])
    schedule(store)
    job = store.jobs.get(second)
    assert job is not None and job.state == "pending"
    kept = store.jobs.get(first)
    assert kept is not None and kept.state == "dispatched" and kept.worker == "w1"
    (claimed,) = claim(store, w1, 2)  # it still runs what it had
    assert claimed.job_id == first
    store.workers.register("w2", ["default"], 1, lease_seconds=30)
    schedule(store)
    placed = store.jobs.get(second)
    assert placed is not None and placed.worker == "w2"
    with pytest.raises(NotFound, match="no live worker 'nobody'"):
        drain_worker(store, "nobody")
