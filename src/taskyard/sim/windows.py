"""The simulated workers' prefetch windows, by the daemons' rules (core.prefetch): a
worker declares one once it has run a job; until then placement lends it its pools'
(``provisional_windows``), as the cycle does from the database's snapshot."""

from __future__ import annotations

from taskyard.core.placement import Planner, WorkerSlot
from taskyard.core.prefetch import prefetch_window, provisional_windows, worth_declaring
from taskyard.sim.model import SimWorker


def declare_window(planner: Planner, workers: dict[int, SimWorker], worker: SimWorker) -> None:
    """After one of ``worker``'s jobs ended: the window its pace asks for, declared as the
    worker daemon would (a first one always), then the windows lent to the others."""
    limit = worker.group.prefetch
    if not limit or worker.id not in planner.workers:
        return
    window = prefetch_window(worker.capacity, worker.pace.mean, limit)
    slot = worker.slot
    if worth_declaring(window, None if slot.unpaced is not None else slot.prefetch):
        worker.slot = WorkerSlot(worker.id, worker.name, slot.pools, worker.capacity, window)
        planner.add_worker(worker.slot)
        lend_windows(planner, workers)


def lend_windows(planner: Planner, workers: dict[int, SimWorker]) -> None:
    """The workers with no pace yet get their pools' windows (at a join, and whenever a
    worker declares one)."""
    current = planner.workers
    for slot in provisional_windows(list(current.values())):
        if slot.unpaced is not None and slot.prefetch != current[slot.id].prefetch:
            planner.add_worker(slot)
            workers[slot.id].slot = slot
