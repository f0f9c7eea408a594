"""A cycle that is not due for maintenance and finds nothing pending builds no planner
(scheduler/cycle.py): PostgreSQL knows it from the cycle's first read; SQLite reads its
candidates to find out."""

from __future__ import annotations

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import run_cycle
from taskyard.store import Store


def _nothing_pending(store: Store) -> bool:
    with store.cycle() as cycle:
        assert cycle is not None
        return cycle.nothing_pending()


def test_a_cycle_knows_when_nothing_is_pending(store: Store) -> None:
    postgresql = store.engine.dialect.name == "postgresql"
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.workers.register("w", ["default"], 1, lease_seconds=30)
    assert _nothing_pending(store) is postgresql
    (job,) = store.jobs.submit([JobSubmission("t")])
    assert _nothing_pending(store) is False
    # Not due for maintenance, as a worker's cycle at the end of a job: it still places.
    with store.cycle() as cycle:
        assert cycle is not None
        report = run_cycle(cycle, maintenance_every=3600.0)
    assert [p.job_id for p in report.placed] == [job]
    assert _nothing_pending(store) is postgresql
    with store.cycle() as cycle:
        assert cycle is not None
        idle = run_cycle(cycle, maintenance_every=3600.0)
    assert (idle.placed, idle.skipped, idle.changed) == ([], [], False)
