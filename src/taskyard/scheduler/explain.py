"""Why a job is where it is: replays the cycle's placement up to that job."""

from __future__ import annotations

from taskyard.core.durations import iso
from taskyard.core.explain import Reason, awaiting, explain_candidate, pool_paused
from taskyard.core.placement import Candidate, Placement
from taskyard.core.states import ACTIVE, TERMINAL, JobState
from taskyard.store import CycleTx, Store
from taskyard.store.driver.planning import planner_of
from taskyard.store.reads.explain import OpenParent, job_place, open_parents
from taskyard.store.transitions.cycle import SCAN_LIMIT

EXPLAIN_PAGE = 1000


def _what(parent: OpenParent) -> str:
    if parent.type is not None:
        return f"of type {parent.type}"
    return "an approval" if parent.kind == "approval" else f"a {parent.kind}"


def explain_job(store: Store, job_id: int) -> list[Reason]:
    """Reasons a job is not running (empty once it runs or ended)."""
    with store.read() as tx:
        job = job_place(tx, job_id)
        state = JobState(job.state)
        if state in TERMINAL or state in ACTIVE:
            return []
        if state is JobState.SUSPENDED:
            return [Reason("suspended", "its worker was lost; the next cycle requeues it")]
        if state is JobState.WAITING:
            return [Reason("dependency", f"waits for job {p.id}"
                           f"{f' ({p.label})' if p.label else ''} {_what(p)}, "
                           f"which is {p.state}", p.id, p.condition)
                    for p in open_parents(tx, job_id)]
        if state is JobState.AWAITING:
            return [awaiting(job_id, job.kind, job.signal, job.signal_key,
                             deadline=job.deadline, now=job.now)]
        if job.run_after is not None and job.run_after > job.now:
            return [Reason("run_after", f"not due before {iso(job.run_after)} "
                           f"(in {job.run_after - job.now:.0f}s)")]
        if job.delayed:  # due, not yet out of the delayed jobs' index
            return [Reason("run_after", f"due since {iso(job.run_after)}: placeable once a "
                           "cycle's maintenance finds it due (the scheduler's, when due)")]
        # Replay the cycle's placement, with its stopping rules, up to this job. Its own
        # pools' lists are read even when they have no room (the cycle would not read
        # them): to count the jobs ahead of it, and to reach it for its other reasons.
        cycle = CycleTx(tx)
        workers = cycle.workers()
        paused = [p for p in job.pools if p in cycle.paused_pools()]
        if paused and len(paused) == len(job.pools):
            return [pool_paused(paused, every=True)]
        held = [pool_paused(paused, every=False)] if paused else []
        limits = cycle.limits()
        rates = cycle.rate_book(limits)
        planner = planner_of(workers, cycle.active_jobs(), limits.queue, rates)
        # Left out as the cycle leaves them out: jobs of keys out of budget, but this one's.
        own = {(job.type, job.rate_key or "")}
        spent = (lambda: rates.spent - own) if rates is not None else frozenset
        names = {w.id: w.name for w in workers}
        mine = set(job.pools)

        def room(pools: tuple[str, ...]) -> bool:
            return planner.has_room(pools) or not mine.isdisjoint(pools)

        ahead = 0
        placed: list[tuple[Candidate, int]] = []
        candidates = cycle.ordered_candidates(room, EXPLAIN_PAGE, SCAN_LIMIT, spent)
        for candidate in candidates:
            if candidate.id == job_id:
                return [*held, *explain_candidate(
                    planner, candidate, ahead=ahead, worker_names=names,
                    queue_limit=limits.queue.get(candidate.type), placed=placed,
                    rest=candidates)]
            decision = planner.offer(candidate)
            if isinstance(decision, Placement):
                placed.append((candidate, decision.worker_id))
            if not mine.isdisjoint(candidate.pools):
                ahead += 1
        # Not reached: past the scan limit of its pools' lists.
        assert job.candidate is not None
        return [*held, *explain_candidate(planner, job.candidate, ahead=ahead,
                                          worker_names=names,
                                          queue_limit=limits.queue.get(job.type),
                                          reached=False)]
