"""Retention: old finished work goes, work still needed stays (both stores)."""

from __future__ import annotations

import time

from driver import drive

from taskyard.store import Store
from taskyard.store.records import JobSubmission, TaskTypeSpec


def test_prune_removes_old_finished_work_and_keeps_what_is_needed(store: Store) -> None:
    store.put_task_type(TaskTypeSpec("t", "shell:true"))
    done = store.submit_jobs([JobSubmission("t") for _ in range(5)])
    finished_graph = store.submit_graph({"tasks": {"a": {"type": "t"},
                                                   "b": {"type": "t", "requires": ["a"]}}})
    drive(store)
    # A live graph whose first job finished: its jobs must stay.
    live = store.submit_graph({"tasks": {"x": {"type": "t"}, "y": {"type": "t",
                                                                   "requires": ["x"]}}})
    worker = store.register_worker("w", ["default"], 1, lease_seconds=60)
    from taskyard.scheduler.cycle import schedule
    schedule(store)
    pending = store.submit_jobs([JobSubmission("t", pools=("nowhere",))])[0]
    time.sleep(0.05)
    assert store.prune(0.01, dry_run=True).jobs >= 7
    report = store.prune(0.01)
    assert report.jobs == 7 and report.graphs == 1 and report.events > 0
    assert all(store.get_job(j) is None for j in done)
    assert {j.label for j in store.get_graph(live).jobs} == {"x", "y"}
    assert store.get_job(pending) is not None
    assert [g.id for g in store.list_graphs()] == [live]
    assert finished_graph not in [g.id for g in store.list_graphs()]
    assert store.prune(3600).jobs == 0  # nothing that recent is old enough
    _ = worker
