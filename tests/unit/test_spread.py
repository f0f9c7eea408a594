"""core.spread: what a cycle queued beyond the workers' fair levels goes back to pending,
so that a burst reaches the workers whose prefetch windows are narrow."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core.locks import LockClaim
from taskyard.core.placement import ActiveJob, Candidate, Placement, Planner, WorkerSlot
from taskyard.core.spread import spread

NARROW = (56, 74)
"""The windows of the two starved workers of bench.fleet's run 57 (50 workers)."""


def _fleet(count: int = 50) -> list[WorkerSlot]:
    return [WorkerSlot(n, f"w{n}", ("default",), 1, NARROW[n] if n < len(NARROW) else 499)
            for n in range(count)]


def _offer(planner: Planner, pending: list[Candidate]) -> list[tuple[Candidate, int]]:
    """Offer in order until the workers are full: what was placed where."""
    placed: list[tuple[Candidate, int]] = []
    for job in pending:
        decision = planner.offer(job)
        if isinstance(decision, Placement):
            placed.append((job, decision.worker_id))
        if planner.exhausted():
            break
    return placed


def _cycle(planner: Planner, pending: list[Candidate], *,
           spreading: bool = True) -> list[Placement]:
    """One cycle as scheduler/cycle.py runs it: offer, then spread; the placements kept."""
    placed = _offer(planner, pending)
    back = set()
    if spreading and not planner.exhausted():
        back = {p.job_id for p in spread(planner, placed)}
    return [Placement(job.id, worker) for job, worker in placed if job.id not in back]


def test_a_burst_that_fits_the_windows_is_queued_up_to_the_fair_share() -> None:
    planner = Planner.from_snapshot(_fleet(), [])
    burst = [Candidate(n, "noop", 0, ("default",)) for n in range(20_000)]
    kept = _cycle(planner, burst)
    per_worker = {w: sum(1 for p in kept if p.worker_id == w) for w in range(50)}
    assert per_worker[0] == 57 and per_worker[1] == 75  # their windows are full
    assert {per_worker[w] for w in range(2, 50)} == {400}  # 20,000 / 50
    assert [p.job_id for p in kept] == sorted(p.job_id for p in kept)
    # The youngest jobs stay pending: those placed last.
    assert max(p.job_id for p in kept) == 20_000 - (2 * 400 - 57 - 75) - 1


def _drain(spreading: bool) -> dict[int, int]:
    """20,000 jobs on the fleet, each worker running one job per tick, a cycle per tick
    over what is pending: how many each worker ran."""
    workers = _fleet()
    pending = [Candidate(n, "noop", 0, ("default",)) for n in range(20_000)]
    queues: dict[int, list[int]] = {w.id: [] for w in workers}
    ran = dict.fromkeys(queues, 0)
    while pending or any(queues.values()):
        active = [ActiveJob(0, "noop", w, len(queue), jobs=len(queue))
                  for w, queue in queues.items() if queue]
        kept = _cycle(Planner.from_snapshot(workers, active), pending, spreading=spreading)
        taken = {p.job_id for p in kept}
        pending = [job for job in pending if job.id not in taken]
        for p in kept:
            queues[p.worker_id].append(p.job_id)
        for worker, queue in queues.items():
            if queue:
                queue.pop(0)
                ran[worker] += 1
    return ran


def test_every_worker_runs_within_twice_its_fair_share_whatever_its_window() -> None:
    ran = _drain(spreading=True)
    assert sum(ran.values()) == 20_000
    assert all(200 <= n <= 800 for n in ran.values()), sorted(ran.values())
    # Without it, the narrow windows got what bench.fleet saw.
    before = _drain(spreading=False)
    assert (before[0], before[1]) == (57, 75)


def test_equal_windows_take_nothing_back() -> None:
    workers = [WorkerSlot(n, f"w{n}", ("default",), 2, 100) for n in range(4)]
    planner = Planner.from_snapshot(workers, [])
    kept = _cycle(planner, [Candidate(n, "t", 0, ("default",)) for n in range(301)])
    assert len(kept) == 301


def test_locked_and_rate_limited_jobs_and_running_slots_stay_placed() -> None:
    wide, narrow = WorkerSlot(1, "wide", ("p",), 1, 50), WorkerSlot(2, "narrow", ("p",), 1, 0)
    planner = Planner.from_snapshot([wide, narrow], [])
    locked = [Candidate(n, "t", 0, ("p",), locks=(LockClaim(f"k{n}"),)) for n in range(20)]
    kept = _cycle(planner, locked)
    assert len(kept) == 20  # holding locks: never taken back
    planner = Planner.from_snapshot([wide, narrow], [])
    # A costly job an idle worker takes whatever its capacity is not taken back either.
    kept = _cycle(planner, [Candidate(1, "t", 0, ("p",), cost=5),
                            Candidate(2, "t", 0, ("p",), cost=5)])
    assert {p.worker_id for p in kept} == {1, 2}


@st.composite
def _cycles(draw: st.DrawFn) -> tuple[list[WorkerSlot], list[ActiveJob], list[Candidate]]:
    pools = ("a", "b")
    workers = [WorkerSlot(n, f"w{n}", tuple(draw(st.sets(st.sampled_from(pools), min_size=1))),
                          draw(st.integers(0, 3)), draw(st.integers(0, 30)))
               for n in range(draw(st.integers(1, 6)))]
    active = [ActiveJob(10_000 + n, "t", draw(st.sampled_from(workers)).id,
                        draw(st.integers(1, 2))) for n in range(draw(st.integers(0, 10)))]
    jobs = [Candidate(n, "t", 0, tuple(draw(st.sets(st.sampled_from(pools), min_size=1))),
                      cost=draw(st.integers(1, 2)),
                      locks=(LockClaim(f"k{n % 3}"),) if draw(st.booleans()) and n % 5 == 0
                      else ())
            for n in range(draw(st.integers(0, 120)))]
    return workers, active, jobs


@settings(max_examples=120, deadline=None)
@given(_cycles())
def test_what_is_taken_back_leaves_every_worker_at_its_fair_level(
        case: tuple[list[WorkerSlot], list[ActiveJob], list[Candidate]]) -> None:
    workers, active, jobs = case
    planner = Planner.from_snapshot(workers, active)
    placed = _offer(planner, jobs)
    if planner.exhausted():
        return
    before = {w.id: w.capacity - planner.remaining(w.id) for w in workers}
    taken = spread(planner, placed)
    by_id = {job.id: job for job, _ in placed}
    assert {p.job_id for p in taken} <= set(by_id)
    kept = [(job, w) for job, w in placed if job.id not in {p.job_id for p in taken}]
    # The planner is as if only the jobs kept had been placed.
    again = Planner.from_snapshot(workers, active + [ActiveJob(job.id, job.type, w, job.cost)
                                                     for job, w in kept])
    for worker in workers:
        used = worker.capacity - planner.remaining(worker.id)
        assert used == worker.capacity - again.remaining(worker.id)
        assert used >= min(before[worker.id], worker.capacity)  # running slots stay full
    for p in taken:
        job = by_id[p.job_id]
        assert not job.locks
        worker = planner.workers[p.worker_id]
        assert worker.capacity - planner.remaining(worker.id) >= worker.capacity
