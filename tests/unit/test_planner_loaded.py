"""A cycle's planner copied from the one kept for the same live workers
(``Planner.loaded``, ``store/driver/planning.py``) decides what a planner built afresh
from the whole snapshot decides, and the kept one is never changed by the cycles that
copy it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core.locks import LockClaim
from taskyard.core.placement import (
    ActiveJob,
    Candidate,
    Placement,
    Planner,
    Skip,
    SkipReason,
    WorkerSlot,
    placement_key,
)
from taskyard.store.driver.cycle_params import Snapshot
from taskyard.store.driver.planning import planner_of, planner_values

POOLS = ("a", "b", "c")

workers_st = st.lists(
    st.tuples(st.lists(st.sampled_from(POOLS), min_size=1, max_size=3, unique=True),
              st.integers(0, 4), st.integers(0, 3)),
    min_size=1, max_size=6,
).map(lambda rows: [WorkerSlot(n, f"w{n}", tuple(pools), capacity, prefetch)
                    for n, (pools, capacity, prefetch) in enumerate(rows, 1)])
claims_st = st.lists(
    st.builds(lambda key, mode: LockClaim(key, mode == "x", mode if mode == "g" else ""),
              st.sampled_from(["p", "q"]), st.sampled_from(["x", "shared", "g"])),
    max_size=2, unique_by=lambda c: c.key,
).map(tuple)
jobs_st = st.lists(
    st.tuples(st.integers(0, 3), st.lists(st.sampled_from(POOLS), min_size=1, max_size=2,
                                          unique=True), st.integers(0, 3), claims_st,
              st.sampled_from(["t1", "t2"])),
    max_size=20,
).map(lambda rows: sorted((Candidate(n, t, prio, tuple(pools), cost, claims)
                           for n, (prio, pools, cost, claims, t) in enumerate(rows, 1)),
                          key=placement_key))
# Active jobs: (worker index, cost, locks, type, jobs it stands for); index 99 is a worker
# gone from the snapshot (its lease ran out, not expelled yet).
active_st = st.lists(
    st.tuples(st.sampled_from([0, 1, 2, 3, 99]), st.integers(0, 3), claims_st,
              st.sampled_from(["t1", "t2"]), st.integers(1, 3)),
    max_size=8,
)
limits_st = st.dictionaries(st.sampled_from(["t1", "t2"]), st.integers(0, 4), max_size=2)


def _active(workers: list[WorkerSlot], rows: list[tuple]) -> list[ActiveJob]:
    """Active jobs with compatible locks (as the database guarantees)."""
    active: list[ActiveJob] = []
    held: list[LockClaim] = []
    for n, (index, cost, claims, type_, jobs) in enumerate(rows):
        if any(a.conflicts(b) for a in claims for b in held):
            continue
        held.extend(claims)
        worker = 999 if index == 99 else workers[index % len(workers)].id
        active.append(ActiveJob(1000 + n, type_, worker, cost, claims, 1 if claims else jobs))
    return active


def _decisions(planner: Planner, jobs: list[Candidate]) -> list[tuple]:
    out: list[tuple] = []
    for job in jobs:
        if planner.exhausted():
            out.append(("exhausted",))
            break
        decision = planner.offer(job)
        out.append(tuple(decision) if isinstance(decision, Placement)
                   else (decision.reason, decision.detail, decision.blocker))
    return out


def _state(planner: Planner) -> tuple:
    # free(), kept as the loads change, is the sum a cycle sizes its page by.
    assert planner.free() == sum(max(planner.room(w), 1 if planner.idle(w) else 0)
                                 for w in planner.workers)
    return (planner.free(), *((planner.remaining(w), planner.room(w), planner.idle(w),
                               planner.open(w)) for w in sorted(planner.workers)))


@settings(max_examples=300)
@given(workers_st, active_st, jobs_st, limits_st)
def test_a_loaded_copy_decides_as_a_planner_built_from_the_whole_snapshot(
        workers, rows, jobs, limits):
    active = _active(workers, rows)
    base = Planner.from_snapshot(workers, [])
    before = _state(base)
    fresh = Planner.from_snapshot(workers, active, limits)
    copy = base.loaded(active, limits)
    assert _state(copy) == _state(fresh)
    assert _decisions(copy, jobs) == _decisions(fresh, jobs)
    # The cycle changed its copy only: the next cycle's copy starts from the same base.
    assert _state(base) == before
    assert _decisions(base.loaded(active, limits), jobs) == _decisions(
        Planner.from_snapshot(workers, active, limits), jobs)


@settings(max_examples=100)
@given(workers_st, active_st, active_st, jobs_st)
def test_a_copy_of_a_loaded_planner_adds_its_jobs_to_those_it_holds(workers, first, more, jobs):
    ones, others = _active(workers, first), _active(workers, more)
    others = [ActiveJob(j.id + 100, j.type, j.worker_id, j.cost, (), j.jobs) for j in others]
    copy = Planner.from_snapshot(workers, ones).loaded(others)
    fresh = Planner.from_snapshot(workers, ones + others)
    assert _state(copy) == _state(fresh)
    assert _decisions(copy, jobs) == _decisions(fresh, jobs)


def _snapshot(rows: list[list]) -> Snapshot:
    return Snapshot([list(r) for r in rows], [[0, "t1", 1, 1, "[]", 1]], [], [])


def test_the_workers_are_kept_while_the_snapshot_reads_the_same():
    rows = [[1, "w1", '["a"]', 2, 3, None], [2, "w2", '["a", "b"]', 1, 0, None]]
    first = planner_values(_snapshot(rows))[0]
    assert planner_values(_snapshot(rows))[0] is first  # equal rows: the same values
    changed = [rows[0], [2, "w2", '["a", "b"]', 1, 4, None]]  # w2 declared a window
    second = planner_values(_snapshot(changed))[0]
    assert second is not first and second[1].prefetch == 4
    paused = Snapshot([list(r) for r in changed], [], [], ["a"])
    assert [w.pools for w in planner_values(paused)[0]] == [(), ("b",)]


def test_a_planner_of_the_kept_workers_is_a_fresh_copy_each_time():
    rows = [[1, "w1", '["a"]', 1, 0, None], [2, "w2", '["a"]', 1, 0, None]]
    workers, active, limits = planner_values(_snapshot(rows))
    job = Candidate(5, "t1", 0, ("a",), 1)
    # Worker 1 runs a job: the idle worker 2 takes one, and is then full; every cycle's
    # copy starts from both as the snapshot has them, whatever the last one placed.
    for _ in range(3):
        planner = planner_of(workers, active, limits.queue, None)
        assert planner.offer(job) == Placement(5, 2)
        full = planner.offer(Candidate(6, "t1", 0, ("a",), 1))
        assert isinstance(full, Skip) and full.reason is SkipReason.NO_CAPACITY
    # Workers not from planner_values (the simulator, explain): built afresh.
    other = [WorkerSlot(7, "w7", ("a",), 1)]
    assert planner_of(other, [], {}, None).offer(job) == Placement(5, 7)
    busy = planner_of(other, [ActiveJob(1, "t1", 7, 1)], {}, None).offer(job)
    assert isinstance(busy, Skip) and busy.reason is SkipReason.NO_CAPACITY
