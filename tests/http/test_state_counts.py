"""Jobs by state for ``/metrics`` and the overview (api/http/state_counts.py), on both
stores: the unfinished states counted at every read; the ended ones kept for twenty
times as long as a costly count took (a large history), counted afresh otherwise."""

from __future__ import annotations

from taskyard.api.http.state_counts import StateCounts
from taskyard.core.states import JobState
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store


def _cancel_one(store: Store) -> None:
    (job_id,) = store.jobs.submit([JobSubmission("t")])
    store.jobs.cancel(job_id)


def test_ended_states_are_kept_only_after_a_costly_count(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true", pools=("nowhere",)))
    store.jobs.submit([JobSubmission("t") for _ in range(2)])
    ticks = iter([0.0, 0.01, 1.0, 1.01,   # cheap counts: afresh at every read
                  2.0, 2.5,               # a costly one (0.5 s): kept for 10 s
                  5.0, 11.9, 12.5, 12.6])
    counts = StateCounts(store, clock=lambda: next(ticks))
    assert (counts.read()["pending"], counts.read()["canceled"]) == (2, 0)
    _cancel_one(store)
    first = counts.read()  # counted at 2.0 (took 0.5 s)
    assert (first["pending"], first["canceled"]) == (2, 1)
    _cancel_one(store)
    kept = counts.read()  # 5.0: the ended states as counted; unfinished ones afresh
    assert (kept["pending"], kept["canceled"]) == (2, 1)
    assert counts.read()["canceled"] == 1  # 11.9 < 2.0 + 10
    assert counts.read()["canceled"] == 2  # 12.5: counted again
    assert list(kept) == [s.value for s in JobState]
