"""Unique jobs on both stores: a key held while its job has not ended (or, with a window,
since it was created), the two policies, batches, and 8 processes racing for one key."""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest

from taskyard.model.errors import Conflict, InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store, open_store

PROCESSES = 8


def _sub(key: str | None, **options: Any) -> JobSubmission:
    return JobSubmission(options.pop("type", "t"), options.pop("args", {}), unique_key=key,
                         **options)


@pytest.fixture
def types(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.task_types.put(TaskTypeSpec("u", "shell:true"))
    return store


def test_a_key_is_held_until_its_job_ends(types: Store) -> None:
    store = types
    (first,) = store.jobs.submit([_sub("report:7")])
    assert store.jobs.submit([_sub("report:7", args={"other": "args"})]) == [first]
    with pytest.raises(Conflict, match=f"unique key 'report:7' of type 't' is held by job "
                                       rf"{first} \(pending\)"):
        store.jobs.submit([_sub("report:7", on_duplicate="reject")])
    (other_type,) = store.jobs.submit([_sub("report:7", type="u")])
    assert other_type != first  # keys are per task type
    store.jobs.cancel(first)
    (second,) = store.jobs.submit([_sub("report:7")])
    assert second not in (first, other_type)
    job = store.jobs.get(second)
    assert job is not None and job.unique_key == "report:7"
    assert job.to_json()["unique_key"] == "report:7"
    assert len(store.jobs.list(type="t")) == 2


def test_with_a_window_a_key_is_held_since_creation_whatever_the_state(types: Store) -> None:
    store = types
    clock = store.clock
    assert clock is not None
    (first,) = store.jobs.submit([_sub("daily", unique_for=3600.0)])
    store.jobs.cancel(first)  # ended: still within the hour
    assert store.jobs.submit([_sub("daily", unique_for=3600.0)]) == [first]
    clock.advance(3601)
    (second,) = store.jobs.submit([_sub("daily", unique_for=3600.0)])
    assert second != first
    clock.advance(7200)  # past the window, but not ended: still held
    assert store.jobs.submit([_sub("daily", unique_for=3600.0)]) == [second]


def test_a_batch_takes_each_key_once(types: Store) -> None:
    store = types
    (held,) = store.jobs.submit([_sub("a")])
    ids = store.jobs.submit([_sub("a"), _sub("b"), _sub(None), _sub("b"), _sub(None)])
    assert ids[0] == held and ids[1] == ids[3] and len(set(ids)) == 4
    with pytest.raises(Conflict, match="held by job 0 of this batch"):
        store.jobs.submit([_sub("c"), _sub("c", on_duplicate="reject")])
    assert [j for j in store.jobs.list() if j.unique_key == "c"] == []  # all or nothing


@pytest.mark.parametrize(("sub", "why"), [
    (JobSubmission("t", unique_key=""), "unique_key must be 1-400 characters"),
    (JobSubmission("t", unique_key="k" * 401), "unique_key must be 1-400 characters"),
    (JobSubmission("t", unique_for=60.0), "unique_for needs a unique_key"),
    (JobSubmission("t", unique_key="k", unique_for=0.0), "unique_for must be a duration"),
    (JobSubmission("t", unique_key="k", on_duplicate="ignore"), "on_duplicate must be one of"),
])
def test_bad_unique_fields_are_refused_and_write_nothing(
        types: Store, sub: JobSubmission, why: str) -> None:
    with pytest.raises(InvalidInput, match=f"job 0: {why}"):
        types.jobs.submit([sub])
    assert types.jobs.list() == []


def test_schedules_still_dedupe_their_ticks(types: Store) -> None:
    """Schedules keep their own key (``dedup_key``): unique keys do not touch it."""
    store = types
    store.schedules.add("every-minute", "t", every=60.0)
    clock = store.clock
    assert clock is not None
    clock.advance(61)
    assert len(store.schedule_runs.create_due_jobs()) == 1
    assert store.schedule_runs.create_due_jobs() == []


ROUNDS = 20


def _race(url: str, policy: str, barrier: Any, out: Any) -> None:
    """One submitter: in each round, all of them submit the round's key at once."""
    store = open_store(url)
    store.jobs.list(limit=1)  # connected and warm: the submits start together
    try:
        for round_ in range(ROUNDS):
            barrier.wait(120)
            try:
                (job_id,) = store.jobs.submit([_sub(f"key-{round_}", on_duplicate=policy)])
                out.put((round_, "id", job_id))
            except Conflict as exc:
                out.put((round_, "conflict", str(exc)))
    finally:
        store.close()


@pytest.mark.parametrize("policy", ["existing", "reject"])
def test_eight_processes_racing_for_one_key_make_one_job(types: Store, policy: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(types.url, policy, barrier, out))
             for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in range(PROCESSES * ROUNDS)]
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    for round_ in range(ROUNDS):
        jobs = [j for j in types.jobs.list(limit=1000) if j.unique_key == f"key-{round_}"]
        assert len(jobs) == 1, round_
        ids = [value for r, kind, value in results if r == round_ and kind == "id"]
        conflicts = [value for r, kind, value in results if r == round_ and kind == "conflict"]
        if policy == "existing":
            assert ids == [jobs[0].id] * PROCESSES
        else:
            assert ids == [jobs[0].id]
            assert len(conflicts) == PROCESSES - 1
            assert all(f"held by job {jobs[0].id}" in c for c in conflicts)
