"""Rate limits on both stores: the real cycle on a real database with a movable clock
never dispatches more jobs of a key in any window than the limit — one scheduler or
several at once — and explain names the limit that holds a job."""

from __future__ import annotations

import itertools
import re
import threading
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskyard.api.yard import Yard
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.scheduler.explain import explain_job
from taskyard.store import MovableClock, Store, open_store

LEASE = 1e7
"""Workers outlive every move of the clock."""


def _starts(store: Store, type_name: str) -> dict[str, list[float]]:
    """Per rate key, the dispatch times of the type's attempts (the database's record)."""
    with store.read() as tx:
        rows = tx.raw.all("SELECT j.rate_key, a.dispatched_at FROM attempts a JOIN jobs j "
                          "ON j.id = a.job_id WHERE j.type = ?", (type_name,))
    out: dict[str, list[float]] = defaultdict(list)
    for key, at in rows:
        out[key or ""].append(at)
    return out


def _most_in_a_window(times: list[float], per: float) -> int:
    times = sorted(times)
    return max((sum(1 for t in times if first <= t < first + per) for first in times),
               default=0)


def _placed(store: Store) -> list[int]:
    report = schedule(store)
    assert report is not None
    return [p.job_id for p in report.placed]


def test_each_key_starts_at_most_n_jobs_per_window_and_explain_says_why(
        store: Store, clock: MovableClock) -> None:
    # Per minute, not per second: the database clock also moves by itself while the test
    # runs, and a loaded machine may take a second between two steps.
    store.task_types.put(TaskTypeSpec("mail", "shell:true", rate_limit="3/m",
                                      rate_key="tenant:{tenant}"))
    store.task_types.put(TaskTypeSpec("free", "shell:true"))
    store.workers.register("w", ["default"], 100, lease_seconds=LEASE)
    ids = store.jobs.submit([JobSubmission("mail", {"tenant": t, "n": n})
                             for t in (1, 2) for n in range(5)])
    free = store.jobs.submit([JobSubmission("free", {"n": n}) for n in range(2)])
    report = schedule(store)
    assert report is not None and report.rate_wait is not None and report.rate_wait <= 60.0
    assert sorted(p.job_id for p in report.placed) == sorted([*ids[0:3], *ids[5:8], *free])
    job = store.jobs.get(ids[3])
    assert job is not None and job.rate_key == "tenant:1" and job.state == "pending"
    (reason,) = explain_job(store, ids[3])
    assert reason.code == "rate_limited"
    assert reason.message.startswith(
        "rate limit 3/m of mail on key tenant:1: 3 starts in the last 1m; the next may start in")
    assert _placed(store) == []  # the window has not moved
    clock.advance(60.0)
    assert sorted(_placed(store)) == sorted([*ids[3:5], *ids[8:10]])
    assert explain_job(store, ids[3]) == []


def test_a_type_without_a_key_template_has_one_budget_and_old_starts_are_forgotten(
        store: Store, clock: MovableClock) -> None:
    store.task_types.put(TaskTypeSpec("sync", "shell:true", rate_limit="2/h"))
    store.workers.register("w", ["default"], 100, lease_seconds=LEASE)
    ids = store.jobs.submit([JobSubmission("sync", {"n": n}) for n in range(3)])
    assert _placed(store) == ids[:2]
    clock.advance(3540)  # a minute short: the clock also moves by itself meanwhile
    assert _placed(store) == []
    (reason,) = explain_job(store, ids[2])
    assert "2/h of sync: 2 starts in the last 1h" in reason.message
    clock.advance(61)
    assert _placed(store) == ids[2:]
    clock.advance(3601)
    schedule(store)  # its maintenance forgets starts no window reaches
    with store.read() as tx:
        assert tx.raw.all("SELECT COUNT(*) FROM rate_starts") == [(0,)]


def test_graph_tasks_get_their_rate_key_and_a_missing_arg_is_named(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("mail", "shell:true", rate_limit="1/m",
                                      rate_key="tenant:{tenant}"))
    graph_id = store.graphs.submit({"tasks": {"a": {"type": "mail", "args": {"tenant": "x"}}}})
    (job,) = store.graphs.get(graph_id).jobs
    assert job.rate_key == "tenant:x"
    with pytest.raises(InvalidInput, match=re.escape(
            "task 'b': rate_key 'tenant:{tenant}': the job's args have no 'tenant'")):
        store.graphs.submit({"tasks": {"b": {"type": "mail"}}})
    with pytest.raises(InvalidInput, match=re.escape("rate_key 'tenant:{tenant}': the job's")):
        store.jobs.submit([JobSubmission("mail", {})])


def test_rate_limits_come_from_yaml_and_bad_ones_change_nothing(db_url: str) -> None:
    with Yard(db_url, inline_cycle=False) as yard:
        yard.apply({"task_types": {"mail": {"handler": "shell:true", "rate_limit": "10 / s",
                                            "rate_key": "{tenant}"}}})
        spec = yard.store.task_types.get("mail")
        assert spec is not None and (spec.rate_limit, spec.rate_key) == ("10/s", "{tenant}")
        for body, why in (({"rate_limit": "10/d"}, "not a rate limit"),
                          ({"rate_limit": 10}, "rate_limit must be text"),
                          ({"rate_key": "{t}"}, "rate_key needs a rate_limit"),
                          ({"rate_limit": "1/s", "rate_key": "{0}"}, "must name")):
            with pytest.raises(InvalidInput, match=f"task type 'x': .*{why}"):
                yard.apply({"task_types": {"x": {"handler": "shell:true", **body}}})
        assert [s.name for s in yard.store.task_types.list()] == ["mail"]


_types = itertools.count()


@settings(max_examples=6, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 4), steps=st.lists(
    st.tuples(st.floats(0, 0.7), st.lists(st.sampled_from(["a", "b"]), max_size=5)),
    min_size=3, max_size=12))
def test_never_more_dispatches_in_any_window_than_the_limit(
        store: Store, clock: MovableClock, count: int,
        steps: list[tuple[float, list[str]]]) -> None:
    """Random arrivals and clock moves, the real cycle after each: no window of a second
    holds more dispatches of a key than ``count``, and every job is placed in the end."""
    type_name = f"limited-{next(_types)}"
    store.task_types.put(TaskTypeSpec(type_name, "shell:true", rate_limit=f"{count}/s",
                                      rate_key="{key}"))
    if not store.workers.list():
        store.workers.register("w", ["default"], 100_000, lease_seconds=LEASE)
    submitted = 0
    for step, keys in steps:
        clock.advance(step)
        store.jobs.submit([JobSubmission(type_name, {"key": k}) for k in keys])
        submitted += len(keys)
        schedule(store)
    for _ in range(submitted):  # the rest, a window at a time
        clock.advance(1.0)
        schedule(store)
    starts = _starts(store, type_name)
    assert sum(map(len, starts.values())) == submitted
    for times in starts.values():
        assert _most_in_a_window(times, 1.0) <= count


def test_schedulers_at_once_share_the_limit(store: Store, clock: MovableClock) -> None:
    """Three schedulers (stores of their own) cycle at once while the clock moves: the
    limit holds across them, as the cycle is global."""
    store.task_types.put(TaskTypeSpec("api", "shell:true", rate_limit="5/s"))
    store.workers.register("w", ["default"], 100_000, lease_seconds=LEASE)
    store.jobs.submit([JobSubmission("api", {"n": n}) for n in range(60)])
    stop = threading.Event()
    schedulers = [open_store(store.url, clock=clock) for _ in range(3)]

    def run(own: Store) -> None:
        while not stop.is_set():
            schedule(own)

    threads = [threading.Thread(target=run, args=(s,)) for s in schedulers]
    for thread in threads:
        thread.start()
    try:
        for _ in range(40):
            clock.advance(0.3)
            stop.wait(0.02)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        for own in schedulers:
            own.close()
    times = _starts(store, "api")[""]
    assert len(times) >= 5
    assert _most_in_a_window(times, 1.0) <= 5


def test_jobs_behind_a_backlog_held_by_a_rate_limit_are_reached(store: Store) -> None:
    """A cycle reads at most ``scan_limit`` candidates per pools list; jobs of keys out of
    budget are left out in SQL, so 300 held jobs do not hide the free ones behind them."""
    store.task_types.put(TaskTypeSpec("mail", "shell:true", rate_limit="2/h",
                                      rate_key="{tenant}"))
    store.task_types.put(TaskTypeSpec("free", "shell:true"))
    store.workers.register("w", ["default"], 100, lease_seconds=LEASE)
    held = store.jobs.submit([JobSubmission("mail", {"tenant": n % 3, "n": n})
                              for n in range(300)])
    free = store.jobs.submit([JobSubmission("free", {"n": n}) for n in range(3)])
    report = schedule(store, scan_limit=50)
    assert report is not None
    assert sorted(p.job_id for p in report.placed) == sorted([*held[:6], *free])
    assert report.scanned < 50
    (reason,) = explain_job(store, held[-1])  # deep in the held backlog: still explained
    assert reason.code == "rate_limited" and "on key 2: 2 starts" in reason.message
