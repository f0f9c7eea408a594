"""Pausing a pool on both stores: nothing new is placed there (running jobs go on), a
job of several pools goes to one that is not paused, explain says so, resume places."""

from __future__ import annotations

import pytest

from taskyard.model.errors import NotFound
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.scheduler.explain import explain_job
from taskyard.store import Store


def test_a_paused_pool_gets_nothing_new(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", pools=("east",)))
    east = store.workers.register("e", ["east"], 4, lease_seconds=300)
    store.workers.register("w", ["west"], 4, lease_seconds=300)
    running = store.jobs.submit([JobSubmission("t")])[0]
    schedule(store)
    assert store.jobs.get(running).state == "dispatched"  # type: ignore[union-attr]
    store.task_types.pause_pool("east")
    assert store.task_types.paused_pools() == ["east"]
    held, either = store.jobs.submit([JobSubmission("t"),
                                      JobSubmission("t", pools=("east", "west"))])
    report = schedule(store)
    assert report is not None and [p.job_id for p in report.placed] == [either]
    assert store.jobs.get(held).state == "pending"  # type: ignore[union-attr]
    assert store.jobs.get(running).state == "dispatched"  # type: ignore[union-attr]
    (why,) = explain_job(store, held)
    assert why.code == "pool_paused"
    assert why.message.startswith("its pools are paused (east): nothing new is placed")
    events = [e.payload for e in store.events.list(topic="pool-paused")]
    assert events == [{"pool": "east", "paused": True}]
    store.task_types.pause_pool("east", paused=False)
    report = schedule(store)
    assert report is not None and [p.job_id for p in report.placed] == [held]
    assert [p.worker_id for p in report.placed] == [east.id]
    assert store.task_types.paused_pools() == []


def test_part_of_a_jobs_pools_paused_is_said_too(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", pools=("east", "west")))
    store.workers.register("e", ["east"], 1, lease_seconds=300)
    store.task_types.pause_pool("east")
    (job,) = store.jobs.submit([JobSubmission("t")])
    why = explain_job(store, job)
    assert [r.code for r in why] == ["pool_paused", "no_worker"]
    assert why[0].message.startswith("of its pools, paused (east)")


def test_an_unknown_pool_is_refused(store: Store) -> None:
    with pytest.raises(NotFound, match="no pool 'nowhere'"):
        store.task_types.pause_pool("nowhere")
