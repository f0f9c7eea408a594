"""A worker that has declared no prefetch window yet (it has run no job) is lent its
pool's by the cycle (core/prefetch.py:provisional_windows), on both stores: registration
records the most it accepts queued, its first declaration ends the loan."""

from __future__ import annotations

from collections import Counter

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.store.transitions.drain import drain_worker


def _placed(store: Store, ids: list[int]) -> Counter[str | None]:
    return Counter(job.worker for job in map(store.jobs.get, ids) if job is not None)


def test_a_cold_worker_gets_its_share_of_a_burst_until_it_declares(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.workers.register("cold", ["default"], 1, lease_seconds=30, prefetch=512)
    warm = store.workers.register("warm", ["default"], 1, lease_seconds=30, prefetch=512).id
    never = store.workers.register("never", ["other"], 1, lease_seconds=30).id
    with store.write() as tx:
        tx.attempts.record(warm, prefetch=10)  # it ran jobs: a window of 10
    burst = store.jobs.submit([JobSubmission("t") for _ in range(12)])
    schedule(store)
    # Lent the warm worker's 10: six each (without the loan: 1 and 11).
    assert _placed(store, burst) == {"cold": 6, "warm": 6}
    cold = next(w.id for w in store.workers.list() if w.name == "cold")
    with store.write() as tx:
        tx.attempts.record(cold, prefetch=0)  # its jobs were long: the loan ends
    more = store.jobs.submit([JobSubmission("t") for _ in range(12)])
    schedule(store)
    # Nothing for cold. Warm's window would take 5 (full at 11), but a cycle queues a
    # burst only up to the fair level (core.spread): 9 of the 17 jobs on the two.
    assert _placed(store, more) == {"warm": 3, None: 9}
    # A worker that never queues (no prefetch) is lent nothing: one job at a time.
    others = store.jobs.submit([JobSubmission("t", pools=("other",)) for _ in range(3)])
    schedule(store)
    assert _placed(store, others) == {"never": 1, None: 2}
    assert drain_worker(store, "never") == never


def test_a_drained_cold_worker_is_lent_nothing(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.workers.register("cold", ["default"], 1, lease_seconds=30, prefetch=512)
    warm = store.workers.register("warm", ["default"], 1, lease_seconds=30).id
    with store.write() as tx:
        tx.attempts.record(warm, prefetch=50)
    drain_worker(store, "cold")
    jobs = store.jobs.submit([JobSubmission("t") for _ in range(5)])
    schedule(store)
    assert _placed(store, jobs) == {"warm": 5}
