"""The simulator lends a worker that has run no job its pool's prefetch window, as the
cycle does (sim/windows.py, core/prefetch.py:provisional_windows): a burst that meets
part of the fleet cold is still split evenly."""

from __future__ import annotations

from collections import Counter

from sim_runs import events, run


def test_a_burst_that_meets_cold_workers_is_shared_by_all():
    # 5 jobs warm 5 of 20 workers (their windows open at 499: 0.1 ms jobs); then 2,000.
    result = run({"workers": {"w": {"count": 20, "capacity": 1}},
                  "task_types": {"t": {"duration": 0.0001}},
                  "arrivals": [{"type": "t", "at": 0, "burst": 5},
                               {"type": "t", "at": 1, "burst": 2000}]})
    assert result.report["jobs"]["ended"] == {"succeeded": 2005}
    burst = Counter(worker for t, job, worker, _ in events(result, "dispatch") if t >= 1)
    assert len(burst) == 20
    # A fair share is 100: without the loan, 15 cold workers got 1 job each and the
    # 5 warm ones 397.
    assert min(burst.values()) >= 50 and max(burst.values()) <= 200, sorted(burst.values())
