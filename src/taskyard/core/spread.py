"""Spreading a burst over the workers whatever their prefetch windows.

A cycle fills the windows level by level (:mod:`taskyard.core.affinity`), but a window
caps what its worker holds: when the whole backlog fits in the windows, a worker whose
window happens to be narrow (its pace measured on a loaded machine, or its jobs long)
gets its window's worth and the rest goes, queued, to the others. In the fleet benchmark
2 of 50 single-slot workers with windows of 56 and 74 ran 57 and 75 jobs of a 20,000-job
burst where the fair share was 400: every other job was already queued elsewhere when
they had room again.

So after a cycle that read every candidate it could place (no worker is full), what it
queued beyond a *fair level* is taken back and stays pending: per worker, its capacity's
share of all the work on the workers serving the pools of the jobs placed (what they run
and hold, and what was placed), and never less than its capacity. The jobs taken back
are the last placed there (placement order: the lowest priority, the youngest), and
only jobs that hold no lock and have no rate limit (taking them back would change what
the cycle decided for others). A narrow worker then finds pending jobs each time it has
room, while a wide one still holds its fair share queued: no worker runs dry while jobs
wait. With equal windows nothing is taken back; each later cycle spreads again what is
left.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskyard.core.placement import Candidate, Placement, Planner


def spread(planner: Planner, placed: Sequence[tuple[Candidate, int]]) -> list[Placement]:
    """Take back from ``planner`` what ``placed`` (this cycle's placements in order: the
    job and its worker) queued beyond the workers' fair levels; return those placements.
    Call it once the cycle has offered every candidate it read and ``planner`` is not
    exhausted. Costs nothing unless a job was placed in a prefetch window."""
    queued = {worker_id for _, worker_id in placed if planner.remaining(worker_id) < 0}
    if not queued:
        return []
    pools = {pool for job, _ in placed for pool in job.pools}
    slots = work = 0
    for worker in planner.workers.values():
        if worker.capacity > 0 and not pools.isdisjoint(worker.pools):
            slots += worker.capacity
            work += worker.capacity - planner.remaining(worker.id)
    rates = planner.rates
    taken: list[Placement] = []
    for job, worker_id in reversed(placed):
        if worker_id not in queued or job.locks or (rates is not None
                                                    and rates.limited(job.type)):
            continue
        capacity = planner.workers[worker_id].capacity
        fair = max(capacity, -(-work * capacity // slots))  # ceil
        if capacity - planner.remaining(worker_id) - job.cost >= fair:
            planner.release(job.id, job.type, worker_id, job.cost, job.locks)
            taken.append(Placement(job.id, worker_id))
    taken.reverse()
    return taken
