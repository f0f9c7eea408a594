"""The Planner kept across cycles (the simulator's use): after any sequence of
placements, releases, workers joining, leaving and changing their prefetch window, it
decides exactly what a Planner built afresh from the same snapshot decides, and its
node affinity is the plain rule (scan the pool's workers) that the index replaces."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core.locks import LockClaim
from taskyard.core.placement import ActiveJob, Candidate, Placement, Planner, Skip, WorkerSlot

POOLS = ("a", "b", "c")


def reference_choice(planner: Planner, pool: str, cost: int) -> int | None:
    """Node affinity as a scan of the pool's workers (the rule as seed 000 states it:
    largest idle; else largest remaining >= cost; else, in a prefetch window, the fewest
    queued per slot — least (queued + 1) / capacity — among those with room left if the
    job fits there, else the largest room >= cost; ties to the lowest id; capacity 0
    takes nothing)."""
    members = sorted((w for w in planner.workers.values() if pool in w.pools and w.capacity > 0),
                     key=lambda w: w.id)
    idle = [w for w in members if planner.idle(w.id)]
    if idle:
        return max(idle, key=lambda w: (planner.remaining(w.id), -w.id)).id
    busy = [w for w in members if not planner.idle(w.id)]
    fit = [w for w in busy if planner.remaining(w.id) >= cost]
    if fit:
        return max(fit, key=lambda w: (planner.remaining(w.id), -w.id)).id
    windows = [w for w in busy if w.prefetch > 0]
    roomy = [w for w in windows if planner.room(w.id) > 0]
    if roomy:
        soonest = min(roomy, key=lambda w: (
            Fraction(1 - planner.remaining(w.id), w.capacity), w.id))
        if planner.room(soonest.id) >= cost:
            return soonest.id
    queue = [w for w in windows if planner.room(w.id) >= cost]
    if queue:
        return max(queue, key=lambda w: (planner.room(w.id), -w.id)).id
    return None


worker_st = st.tuples(st.lists(st.sampled_from(POOLS), min_size=1, max_size=3, unique=True),
                      st.integers(0, 4), st.integers(0, 3))
claim_st = st.lists(st.builds(LockClaim, st.sampled_from(["p", "q"]),
                              st.booleans()), max_size=2, unique_by=lambda c: c.key)
step_st = st.one_of(
    st.tuples(st.just("offer"), st.lists(st.sampled_from(POOLS), min_size=1, max_size=2,
                                         unique=True), st.integers(0, 4), claim_st,
              st.integers(0, 3)),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("join"), worker_st),
    st.tuples(st.just("leave"), st.integers(0, 50)),
    st.tuples(st.just("window"), st.integers(0, 50), st.integers(0, 4)),
    st.tuples(st.just("cycle"),),
)


@settings(max_examples=300)
@given(st.lists(worker_st, min_size=1, max_size=5), st.lists(step_st, max_size=60))
def test_a_kept_planner_decides_as_a_fresh_one(initial, steps):
    workers: dict[int, WorkerSlot] = {}
    for n, (pools, capacity, prefetch) in enumerate(initial, 1):
        workers[n] = WorkerSlot(n, f"w{n}", tuple(pools), capacity, prefetch)
    limits = {"t1": 3}
    kept = Planner.from_snapshot(workers.values(), [], limits)
    active: dict[int, ActiveJob] = {}
    next_id, next_worker = 0, len(workers)
    for step in steps:
        kind = step[0]
        if kind == "offer":
            _, pools, cost, claims, priority = step
            next_id += 1
            job = Candidate(next_id, "t1" if next_id % 2 else "t2", priority, tuple(pools),
                            cost, tuple(claims))
            for pool in pools:
                assert kept.choose_worker(pool, cost) == (
                    None if (w := reference_choice(kept, pool, cost)) is None
                    else workers[w]), (pool, cost)
            assert kept.has_room(pools) == any(
                kept.open(w.id) for w in workers.values() if set(w.pools) & set(pools))
            decision = kept.offer(job)
            if isinstance(decision, Placement):
                active[job.id] = ActiveJob(job.id, job.type, decision.worker_id, cost,
                                           tuple(claims))
        elif kind == "release" and active:
            job = active.pop(sorted(active)[step[1] % len(active)])
            kept.release(job.id, job.type, job.worker_id, job.cost, job.locks)
        elif kind == "join":
            pools, capacity, prefetch = step[1]
            next_worker += 1
            workers[next_worker] = WorkerSlot(next_worker, f"w{next_worker}", tuple(pools),
                                              capacity, prefetch)
            kept.add_worker(workers[next_worker])
        elif kind == "leave" and workers:
            gone = sorted(workers)[step[1] % len(workers)]
            for job in [j for j in active.values() if j.worker_id == gone]:
                kept.release(job.id, job.type, job.worker_id, job.cost, job.locks)
                del active[job.id]
            kept.remove_worker(gone)
            del workers[gone]
        elif kind == "window" and workers:
            chosen = workers[sorted(workers)[step[1] % len(workers)]]
            workers[chosen.id] = WorkerSlot(chosen.id, chosen.name, chosen.pools,
                                            chosen.capacity, step[2])
            kept.add_worker(workers[chosen.id])
        elif kind == "cycle":
            kept.forget_ahead()
            fresh = Planner.from_snapshot(workers.values(), active.values(), limits)
            assert kept.exhausted() == fresh.exhausted()
            assert kept.free() == fresh.free() == sum(
                max(fresh.room(w), 1 if fresh.idle(w) else 0) for w in workers)
            for w in workers:
                assert (kept.remaining(w), kept.room(w), kept.idle(w), kept.open(w)) == (
                    fresh.remaining(w), fresh.room(w), fresh.idle(w), fresh.open(w))
            probe = Candidate(10_000, "t1", 0, POOLS, 1, (LockClaim("p"),))
            decision = kept.offer(probe)
            assert _same(decision, fresh.offer(probe))
            if isinstance(decision, Placement):  # undo the probe
                kept.release(probe.id, probe.type, decision.worker_id, probe.cost,
                             probe.locks)
            kept.forget_ahead()


def _same(a: Placement | Skip, b: Placement | Skip) -> bool:
    if isinstance(a, Placement) or isinstance(b, Placement):
        return a == b
    return (a.reason, a.detail, a.blocker) == (b.reason, b.detail, b.blocker)


def test_a_job_of_a_worker_gone_from_the_snapshot_is_released_all_the_same():
    """The cycle's snapshot may hold active jobs of a worker whose lease ran out (not
    expelled yet): releasing one frees its lock and its type's queue count."""
    claim = LockClaim("p")
    planner = Planner.from_snapshot([WorkerSlot(1, "w1", ("a",), 1)],
                                    [ActiveJob(7, "t", 99, 1, (claim,))], {"t": 1})
    blocked = Candidate(8, "t", 0, ("a",), 1, (claim,))
    assert isinstance(planner.offer(blocked), Skip)
    planner.release(7, "t", 99, 1, (claim,))
    planner.forget_ahead()
    assert planner.offer(blocked) == Placement(8, 1)


def test_the_index_rebuilds_itself_and_still_decides_as_the_plain_rule() -> None:
    # Many placements and releases on a small pool leave stale heap entries behind:
    # past a bound the index drops them (a rebuild) and keeps deciding as the scan.
    workers = [WorkerSlot(1, "w1", ("a",), 3, prefetch=2), WorkerSlot(2, "w2", ("a",), 2),
               WorkerSlot(3, "w3", ("a",), 0)]
    planner = Planner.from_snapshot(workers, [])
    held: list[tuple[int, int, int]] = []
    for n in range(1, 400):
        job = Candidate(n, "t", 0, ("a",), 1 + n % 2, ())
        expected = reference_choice(planner, "a", job.cost)
        decision = planner.offer(job)
        got = decision.worker_id if isinstance(decision, Placement) else None
        assert got == expected, n
        if isinstance(decision, Placement):
            held.append((n, decision.worker_id, job.cost))
        if len(held) > 2 or got is None:  # jobs end: room comes back
            job_id, worker_id, cost = held.pop(0)
            planner.release(job_id, "t", worker_id, cost, ())
