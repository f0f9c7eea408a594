"""Retention: delete old finished work in bounded batches so tables do not grow forever.

Each batch is a transaction of its own (a long delete would hold its locks for long),
so pruning is an operation on the store, not on one unit of work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskyard.store.store import Store



@dataclass
class PruneReport:
    jobs: int = 0
    graphs: int = 0
    events: int = 0

    def to_json(self) -> dict[str, int]:
        return {"jobs": self.jobs, "graphs": self.graphs, "events": self.events}


def prune(store: Store, older_than: float, *, batch: int = 10_000, dry_run: bool = False,
          max_batches: int = 1000) -> PruneReport:
    """Delete jobs that ended more than ``older_than`` seconds ago (with their attempts,
    stages and edges), graphs whose jobs are all gone, and older events.

    A finished job still required by an unfinished one is kept, and so is every job of
    a graph that is still running or blocked (it may get new tasks or be retried).
    """
    report = PruneReport()
    for _ in range(max_batches):
        with store.write() as tx:
            driver, raw = tx.driver, tx.raw
            ids = driver.old_jobs(raw, older_than, batch)
            events = driver.old_events(raw, older_than, batch)
            if dry_run:
                report.jobs, report.events = len(ids), len(events)
                return report
            if ids:
                driver.delete_jobs(raw, ids)
            if events:
                driver.delete_rows(raw, "events", events)
            report.jobs += len(ids)
            report.events += len(events)
        if len(ids) < batch and len(events) < batch:
            break
    with store.write() as tx:
        graphs = tx.driver.empty_graphs(tx.raw, older_than, batch)
        if graphs:
            tx.driver.delete_rows(tx.raw, "graphs", graphs)
        report.graphs = len(graphs)
    return report
