"""Retention: old finished work goes, work still needed stays (both stores)."""

from __future__ import annotations

from driver import drive

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store
from taskyard.store.transitions.retention import prune


def test_prune_removes_old_finished_work_and_keeps_what_is_needed(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    done = store.jobs.submit([JobSubmission("t") for _ in range(5)])
    finished_graph = store.graphs.submit({"tasks": {"a": {"type": "t"},
                                                   "b": {"type": "t", "requires": ["a"]}}})
    drive(store)
    # A live graph whose first job finished: its jobs must stay.
    live = store.graphs.submit({"tasks": {"x": {"type": "t"}, "y": {"type": "t",
                                                                   "requires": ["x"]}}})
    worker = store.workers.register("w", ["default"], 1, lease_seconds=60)
    from taskyard.scheduler.cycle import schedule
    schedule(store)
    pending = store.jobs.submit([JobSubmission("t", pools=("nowhere",))])[0]
    store.clock.advance(0.05)  # type: ignore[union-attr]
    assert prune(store, 0.01, dry_run=True).jobs >= 7
    report = prune(store, 0.01)
    assert report.jobs == 7 and report.graphs == 1 and report.events > 0
    assert all(store.jobs.get(j) is None for j in done)
    assert {j.label for j in store.graphs.get(live).jobs} == {"x", "y"}
    assert store.jobs.get(pending) is not None
    assert [g.id for g in store.graphs.list()] == [live]
    assert finished_graph not in [g.id for g in store.graphs.list()]
    assert prune(store, 3600).jobs == 0  # nothing that recent is old enough
    _ = worker


def test_prune_keeps_the_signals_a_waiting_wait_may_need(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    graph_id = store.graphs.submit({"tasks": {
        "first": {"type": "t", "pools": ["nowhere"]},
        "w": {"wait": {"signal": "kept"}, "requires": ["first"]}}})
    store.waits.signal("kept", payload=1)
    store.waits.signal("gone", payload=2)
    store.clock.advance(10)  # type: ignore[union-attr]
    report = prune(store, 5)
    assert report.signals == 1 and report.to_json()["signals"] == 1
    with store.read() as tx:
        names = [n for (n,) in tx.raw.all("SELECT name FROM signals")]
    assert names == ["kept"]  # its wait still waits for its parent, then takes it
    assert {j.label: j.state for j in store.graphs.get(graph_id).jobs}["w"] == "waiting"
