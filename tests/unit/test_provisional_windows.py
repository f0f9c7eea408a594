"""A worker that has run no job knows no pace, so it has declared no prefetch window;
placement lends it its pools' (core/prefetch.py:provisional_windows). Without the loan a
burst that met part of the fleet cold went to the windows of the others: 73 of 200
workers got 1 job of 20,000 where the rest got 157 each (bench.fleet, run 51)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.placement import ActiveJob, Candidate, WorkerSlot, place, without_paused
from taskyard.core.prefetch import DEFAULT_PREFETCH, provisional_windows, worth_declaring

POOLS = ("a", "b", "c")
# (pools, capacity, declared window, unpaced limit or None: paced)
worker_st = st.tuples(st.lists(st.sampled_from(POOLS), min_size=1, max_size=3, unique=True),
                      st.integers(0, 3), st.integers(0, 600),
                      st.one_of(st.none(), st.integers(1, 600)))


def _slots(specs: list[tuple[list[str], int, int, int | None]]) -> list[WorkerSlot]:
    return [WorkerSlot(n, f"w{n}", tuple(pools), capacity, 0 if unpaced else window, unpaced)
            for n, (pools, capacity, window, unpaced) in enumerate(specs, 1)]


@given(st.lists(worker_st, min_size=1, max_size=12))
def test_a_lent_window_is_what_half_its_pools_declared_at_least(specs):
    workers = _slots(specs)
    lent = provisional_windows(workers)
    assert [w.id for w in lent] == [w.id for w in workers]
    for before, after in zip(workers, lent, strict=True):
        if before.unpaced is None:
            assert after is before  # a declared window is the worker's own
            continue
        assert (after.id, after.pools, after.capacity, after.unpaced) == (
            before.id, before.pools, before.capacity, before.unpaced)
        assert 0 <= after.prefetch <= before.unpaced
        for pool in after.pools:
            declared = [w.prefetch for w in workers
                        if w.unpaced is None and w.capacity > 0 and pool in w.pools]
            if not declared:
                assert after.prefetch == 0  # nobody knows how long this pool's jobs take
            else:  # a median: no wider than what half the pool's workers declared
                assert 2 * sum(window >= after.prefetch for window in declared) >= len(declared)


@given(st.integers(1, 30), st.integers(1, 30), st.integers(1, 20), st.integers(0, 512))
def test_a_burst_is_split_evenly_between_warm_and_cold_workers(warm, cold, share, extra):
    """``warm`` capacity-1 workers running a job each, windows declared wide enough for a
    fair share; ``cold`` idle ones that have declared nothing: a burst of ``share`` jobs a
    worker leaves every worker within one job of every other."""
    window = share + extra
    workers = ([WorkerSlot(n, f"w{n}", ("a",), 1, window) for n in range(1, warm + 1)]
               + [WorkerSlot(n, f"w{n}", ("a",), 1, 0, DEFAULT_PREFETCH)
                  for n in range(warm + 1, warm + cold + 1)])
    active = [ActiveJob(-n, "t", n, 1) for n in range(1, warm + 1)]
    burst = share * (warm + cold)
    placed, _ = place(provisional_windows(workers), active,
                      [Candidate(n, "t", 0, ("a",)) for n in range(burst)])
    assert len(placed) == burst
    held = Counter(p.worker_id for p in placed) + Counter(job.worker_id for job in active)
    totals = [held[w.id] for w in workers]
    assert max(totals) - min(totals) <= 1, totals
    # What it was before the loan: every cold worker one job, the warm ones the rest.
    placed, _ = place(workers, active, [Candidate(n, "t", 0, ("a",)) for n in range(burst)])
    got = Counter(p.worker_id for p in placed)
    assert all(got[w.id] == 1 for w in workers if w.unpaced is not None)


def test_a_pool_of_long_jobs_lends_no_window():
    # The paced workers closed their windows (long jobs): a cold one takes one job only.
    workers = [WorkerSlot(1, "w1", ("a",), 1, 0), WorkerSlot(2, "w2", ("a",), 1, 0),
               WorkerSlot(3, "w3", ("a",), 1, 0, DEFAULT_PREFETCH)]
    placed, _ = place(provisional_windows(workers), [],
                      [Candidate(n, "t", 0, ("a",)) for n in range(10)])
    assert Counter(p.worker_id for p in placed) == {1: 1, 2: 1, 3: 1}


def test_the_least_of_its_pools_and_never_past_its_own_limit():
    workers = [WorkerSlot(1, "a1", ("a",), 1, 300), WorkerSlot(2, "a2", ("a",), 2, 100),
               WorkerSlot(3, "a3", ("a",), 1, 200), WorkerSlot(4, "b1", ("b",), 1, 40),
               WorkerSlot(5, "drained", ("b",), 0, 0),  # capacity 0: its window says nothing
               WorkerSlot(6, "ab", ("a", "b"), 1, 0, 512),
               WorkerSlot(7, "a-narrow", ("a",), 1, 0, 16),
               WorkerSlot(8, "ac", ("a", "c"), 1, 0, 512),  # nobody declared in c
               WorkerSlot(9, "never", ("a",), 1, 0)]  # --prefetch 0: nothing to lend
    lent = {w.name: w.prefetch for w in provisional_windows(workers)}
    assert lent == {"a1": 300, "a2": 100, "a3": 200, "b1": 40, "drained": 0,
                    "ab": 40, "a-narrow": 16, "ac": 0, "never": 0}
    # Even counts take the lower median: a's windows 100, 200, 300, 400 lend 200 (above,
    # "never" counts in a: its 0, 100, 200, 300 lend 100, and b's 40 is less).
    four = [*workers[:3], WorkerSlot(10, "a4", ("a",), 1, 400), workers[6]]
    assert provisional_windows(four)[-1].prefetch == 16
    assert provisional_windows([*four[:4], WorkerSlot(11, "x", ("a",), 1, 0, 512)])[-1].prefetch \
        == 200
    # A paused pool is left out first (planning.py): only a's windows count for "ab".
    paused = without_paused(workers, frozenset({"b"}))
    assert {w.name: w.prefetch for w in provisional_windows(paused)}["ab"] == 100


def test_a_worker_declares_its_first_window_whatever_it_is():
    # Even a closed one (0): its declaration ends the loan (the daemon calls this only
    # once its pace is known).
    assert worth_declaring(0, None) and worth_declaring(7, None, loaded=False)
    assert not worth_declaring(0, 0)
