"""Bulk cancel and retry of a searched set (store/transitions/bulk.py) on both stores:
the count a dry run shows is what is changed, an event per job, batches, the cap."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store
from taskyard.store import schema as t
from taskyard.store.reads.job_search import JobQuery
from taskyard.store.transitions import bulk
from taskyard.store.transitions.bulk import act_on_jobs


def _events(store: Store, topic: str) -> int:
    with store.read() as tx:
        return int(tx.conn.execute(select(func.count()).select_from(t.events)
                                   .where(t.events.c.topic == topic)).scalar_one())


def _states(store: Store, ids: list[int]) -> list[str]:
    return [j.state for j in (store.jobs.get(i) for i in ids) if j is not None]


def test_cancel_what_was_counted_then_retry_in_capped_calls(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a", "b"):
        store.task_types.put(TaskTypeSpec(name, "shell:true"))
    a_ids = store.jobs.submit([JobSubmission("a") for _ in range(6)])
    b_ids = store.jobs.submit([JobSubmission("b") for _ in range(2)])
    of_a = JobQuery(types=("a",))
    counted = act_on_jobs(store, "cancel", of_a, dry_run=True)
    assert (counted.matched, counted.changed, counted.up_to) == (6, 0, max(a_ids))
    assert set(_states(store, a_ids)) == {"pending"}
    (late,) = store.jobs.submit([JobSubmission("a")])
    monkeypatch.setattr(bulk, "BATCH", 4)  # two write transactions
    done = act_on_jobs(store, "cancel", of_a, up_to=counted.up_to)
    assert (done.matched, done.changed, done.skipped, done.more) == (6, 6, 0, False)
    assert set(_states(store, a_ids)) == {"canceled"}
    assert _states(store, [late, *b_ids]) == ["pending"] * 3  # after the count; not matched
    assert _events(store, "job-exception") == 6
    # Retry: only the states it applies to (pending ones are not "retried").
    assert act_on_jobs(store, "retry", JobQuery(states=("pending",)), dry_run=True).matched == 0
    first = act_on_jobs(store, "retry", of_a, most=4)
    assert (first.matched, first.changed, first.more) == (4, 4, True)
    rest = act_on_jobs(store, "retry", of_a, most=4)
    assert (rest.matched, rest.changed, rest.more) == (2, 2, False)
    assert set(_states(store, a_ids)) == {"pending"}
    assert act_on_jobs(store, "retry", of_a).matched == 0


def test_a_wrong_action_or_filter_is_refused(store: Store) -> None:
    with pytest.raises(InvalidInput, match="action"):
        act_on_jobs(store, "delete", JobQuery())
    with pytest.raises(InvalidInput, match="state"):
        act_on_jobs(store, "cancel", JobQuery(states=("nope",)))
