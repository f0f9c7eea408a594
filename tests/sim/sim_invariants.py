"""Invariants of a run, checked from its trace (what happened, in order) against the jobs
and workers it kept: the same properties the chaos test checks on real daemons."""

from __future__ import annotations

from collections import Counter, defaultdict

from taskyard.core.states import TERMINAL
from taskyard.sim import SimResult


def check(result: SimResult) -> None:
    """No worker over capacity, no conflicting locks held at once, every job ended once,
    every graph ended (finished or blocked). Raises AssertionError naming the breach."""
    sim = result.simulation
    assert result.trace is not None and sim.jobs is not None
    jobs, workers = sim.jobs, sim.workers
    running: dict[int, dict[int, int]] = defaultdict(dict)
    """Per worker, the cost of each job running there."""
    active: dict[int, int] = {}
    """Job -> worker, from its dispatch until its attempt ends or is lost."""
    ends: Counter[int] = Counter()
    for t, what, job_id, worker_id, _ in result.trace:
        if what == "dispatch":
            holders = [c for other in active for c in jobs[other].claims]
            for claim in jobs[job_id].claims:
                assert not any(claim.conflicts(h) for h in holders), (
                    f"t={t}: job {job_id} placed with {claim.encode()} held by another")
            active[job_id] = worker_id
        elif what == "start":
            on = running[worker_id]
            on[job_id] = jobs[job_id].cost
            capacity = workers[worker_id].capacity
            assert len(on) <= max(1, capacity), f"t={t}: worker {worker_id} runs {len(on)}"
            assert sum(on.values()) <= capacity or len(on) == 1, (
                f"t={t}: worker {worker_id} over capacity {capacity}: {on}")
        elif what.startswith("attempt:") or what in ("lost", "timeout"):
            worker = active.pop(job_id, None)
            if worker is not None:
                running[worker].pop(job_id, None)
        elif what == "crash":
            running[worker_id].clear()  # its handlers die with it
        elif what.startswith("end:"):
            ends[job_id] += 1
            assert job_id not in active, f"t={t}: job {job_id} ended while placed"
    created = {job_id for _, what, job_id, _, _ in result.trace if what == "create"}
    assert created == set(jobs)
    assert all(n == 1 for n in ends.values()), f"ended twice: {ends.most_common(3)}"
    unfinished = [j.id for j in jobs.values() if j.state not in TERMINAL]
    assert not unfinished, f"jobs that never ended: {unfinished[:10]}"
    assert set(ends) == created
    graphs = {j.graph for j in jobs.values() if j.graph is not None}
    for graph in graphs:
        assert graph.state in ("finished", "blocked"), (graph.id, graph.state)
        assert graph.finished is not None
