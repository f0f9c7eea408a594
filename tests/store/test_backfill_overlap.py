"""Backfill, catch-up window and overlap on both stores: one job per tick (under
concurrent backfills too), ``logical_time`` on every tick's job, ``max_active`` chains,
cancel; overlap allow / skip / buffer-one; every dropped tick announced with its reason."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from driver import drive

from taskyard.core.recurrence import tick_key
from taskyard.model.errors import InvalidInput, NotFound
from taskyard.model.records import ClaimedJob, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import MovableClock, Store, open_store

HOUR, DAY = 3600.0, 86400.0


@pytest.fixture
def typed(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("tick", "shell:true"))
    return store


def _hour_ago(store: Store, hours: float) -> float:
    now = store.now()
    return now - now % HOUR - hours * HOUR


def _skipped(store: Store, name: str) -> list[dict[str, Any]]:
    return [e.payload for e in store.events.list(topic="schedule-skipped")
            if e.payload["schedule"] == name]


def test_backfill_creates_one_job_per_tick_once(typed: Store) -> None:
    store = typed
    store.schedules.add("hourly", "tick", cron="0 * * * *", args={"site": "a"})
    start = _hour_ago(store, 5)
    plan = store.backfills.plan("hourly", start, start + 5 * HOUR)
    assert plan.ticks == [start + i * HOUR for i in range(5)]  # [from, to): oldest first
    done = store.backfills.create("hourly", start, start + 5 * HOUR)
    assert done.jobs is not None and len(done.jobs) == 5 and done.existing == 0
    jobs = [store.jobs.get(j) for j in done.jobs]
    assert [j.logical_time for j in jobs if j] == plan.ticks
    assert all(j and j.args == {"site": "a"} and j.graph_id == done.graph_id and
               j.launch_type == "backfill" for j in jobs)
    assert jobs[0] and jobs[0].to_json()["logical_time"] == plan.to_json()["ticks"][0]
    # Again, and an overlapping range: only the new ticks get jobs.
    assert store.backfills.create("hourly", start, start + 5 * HOUR).jobs == []
    wider = store.backfills.create("hourly", start - 2 * HOUR, start + 5 * HOUR)
    assert wider.jobs is not None and len(wider.jobs) == 2 and wider.existing == 5
    assert store.graphs.get(wider.graph_id or 0).jobs_total == 2
    ran = drive(store)
    assert sorted(j.logical_time for j in ran) == sorted(
        [start - 2 * HOUR, start - HOUR, *plan.ticks])


def test_backfill_keys_match_the_schedules_own_ticks(typed: Store,
                                                     clock: MovableClock) -> None:
    store = typed
    store.schedules.add("every", "tick", every="1h")  # a tick now, at once
    (first,) = schedule(store).scheduled  # type: ignore[union-attr]
    tick = store.jobs.get(first)
    assert tick is not None and tick.logical_time is not None
    # Backfilling over that tick creates nothing for it: the grid extends backwards.
    done = store.backfills.create("every", tick.logical_time - 3 * HOUR,
                                  tick.logical_time + 1)
    assert done.jobs is not None and len(done.jobs) == 3 and done.existing == 1
    keys = {store.jobs.get(j).logical_time for j in done.jobs}  # type: ignore[union-attr]
    assert keys == {tick.logical_time - i * HOUR for i in (1, 2, 3)}


def test_max_active_holds_the_rest_back(typed: Store) -> None:
    store = typed
    store.schedules.add("hourly", "tick", cron="0 * * * *")
    start = _hour_ago(store, 6)
    done = store.backfills.create("hourly", start, start + 6 * HOUR, max_active=2)
    states = [store.jobs.get(j).state for j in done.jobs or []]  # type: ignore[union-attr]
    assert states == ["pending", "pending", "waiting", "waiting", "waiting", "waiting"]
    worst = 0

    def decide(job: ClaimedJob) -> tuple[str, Any]:
        nonlocal worst
        active = [j for j in store.jobs.list(limit=100) if j.launch_type == "backfill"
                  and j.state in ("pending", "dispatched", "running")]
        worst = max(worst, len(active))
        return ("failed", None) if job.logical_time == start else ("succeeded", None)

    ran = drive(store, decide, capacity=4)
    assert len(ran) == 6 and worst <= 2  # a failure does not stop the chain
    assert [j.logical_time for j in ran][:2] == [start, start + HOUR]  # oldest first


def test_backfill_refusals_and_cancel(typed: Store) -> None:
    store = typed
    store.task_types.put(TaskTypeSpec("adapt", "shell:true", interval=None))
    store.schedules.add("hourly", "tick", cron="0 * * * *")
    now = store.now()
    with pytest.raises(NotFound, match="no schedule 'nope'"):
        store.backfills.plan("nope", now - DAY, now)
    with pytest.raises(InvalidInput, match=r"--from .* must be before --to"):
        store.backfills.plan("hourly", now, now - DAY)
    with pytest.raises(InvalidInput, match="is in the future"):
        store.backfills.plan("hourly", now - DAY, now + DAY)
    with pytest.raises(InvalidInput, match="more than 100000 ticks"):
        store.schedules.add("often", "tick", every="1s")
        store.backfills.plan("often", now - 3 * DAY, now)
    with pytest.raises(InvalidInput, match="--max-active must be a whole number from 1"):
        store.backfills.create("hourly", now - DAY, now, max_active=0)
    start = _hour_ago(store, 4)
    done = store.backfills.create("hourly", start, start + 4 * HOUR, max_active=1)
    assert store.backfills.cancel("hourly") == 4
    assert {store.jobs.get(j).state for j in done.jobs or []} == {  # type: ignore[union-attr]
        "canceled"}
    assert store.backfills.cancel("hourly") == 0


def test_concurrent_backfills_create_each_tick_once(db_url: str) -> None:
    stores = [open_store(db_url) for _ in range(4)]
    stores[0].task_types.put(TaskTypeSpec("tick", "shell:true"))
    stores[0].schedules.add("minutely", "tick", cron="* * * * *")
    now = stores[0].now()
    start = now - now % 60 - 300 * 60
    barrier = threading.Barrier(len(stores))
    results: list[list[int]] = []

    def run(store: Store) -> None:
        barrier.wait()
        for _ in range(3):
            done = store.backfills.create("minutely", start, start + 300 * 60)
            results.append(done.jobs or [])

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    created = sorted(j for r in results for j in r)
    assert len(created) == 300 == len(set(created))
    with stores[0].read() as tx:
        (count,) = tx.raw.first("SELECT COUNT(*), COUNT(DISTINCT dedup_key) FROM jobs")[:1]
    assert count == 300
    for store in stores:
        store.close()


def test_overlap_skip_drops_ticks_while_the_last_job_runs(typed: Store,
                                                          clock: MovableClock) -> None:
    store = typed
    store.schedules.add("s", "tick", every="1m", overlap="skip")
    (first,) = schedule(store).scheduled  # type: ignore[union-attr]
    clock.advance(61)
    assert schedule(store).scheduled == []  # type: ignore[union-attr]
    (event,) = _skipped(store, "s")
    assert event["reason"] == f"overlap skip: job {first} is pending"
    assert event["count"] == 1 and event["tick"] == event["last"]
    drive(store)
    clock.advance(60)
    assert len(schedule(store).scheduled) == 1  # type: ignore[union-attr]


def test_overlap_buffer_one_queues_one_behind_the_running_job(typed: Store,
                                                              clock: MovableClock) -> None:
    store = typed
    store.schedules.add("b", "tick", every="1m", overlap="buffer-one")
    (first,) = schedule(store).scheduled  # type: ignore[union-attr]
    clock.advance(61)
    (second,) = schedule(store).scheduled  # type: ignore[union-attr]
    assert store.jobs.get(second).state == "waiting"  # type: ignore[union-attr]
    clock.advance(60)
    assert schedule(store).scheduled == []  # type: ignore[union-attr]
    assert _skipped(store, "b")[0]["reason"] == (
        f"overlap buffer-one: job {second} is queued already")
    ran = drive(store, lambda job: ("failed", None))  # the queued one runs all the same
    assert [j.job_id for j in ran] == [first, second]
    # Caught up after downtime with catchup all: one runs, one queues, the rest drop.
    store.schedules.add("c", "tick", every="1m", overlap="buffer-one", catchup="all")
    clock.advance(301)
    jobs = schedule(store).scheduled  # type: ignore[union-attr]
    states = sorted(store.jobs.get(j).state for j in jobs if j)  # type: ignore[union-attr]
    assert states.count("waiting") == 1


def test_the_catch_up_window_and_catch_up_drops_are_announced(
        typed: Store, clock: MovableClock) -> None:
    store = typed
    store.schedules.add("w", "tick", every="1h", catchup="all", catchup_window="3h")
    store.schedules.add("one", "tick", every="1h")
    schedule(store)
    drive(store)
    clock.advance(10 * HOUR + 60)  # down for ten hours
    made = schedule(store).scheduled  # type: ignore[union-attr]
    w_jobs = [j for j in made if store.jobs.get(j).schedule_name == "w"]  # type: ignore[union-attr]
    assert len(w_jobs) == 3  # only the last three hours
    (old,) = _skipped(store, "w")
    assert (old["count"], old["reason"]) == (7, "older than the catch-up window (3h)")
    (folded,) = _skipped(store, "one")
    assert folded["count"] == 9 and folded["reason"].startswith("catchup one: run once")
    record = store.schedules.get("w")
    assert record is not None and record.to_json()["catchup_window"] == 3 * HOUR


def test_bad_overlap_and_window_are_refused(typed: Store) -> None:
    with pytest.raises(InvalidInput, match="overlap: 'later' is not one of"):
        typed.schedules.add("x", "tick", every="1m", overlap="later")
    with pytest.raises(InvalidInput, match="catchup_window must be more than 0"):
        typed.schedules.add("x", "tick", every="1m", catchup_window=0)
    with pytest.raises(InvalidInput, match="catchup_window"):
        typed.schedules.add("x", "tick", every="1m", catchup_window="soon")
    assert typed.schedules.get("x") is None


def test_tick_keys_are_the_schedules() -> None:
    assert tick_key("s", 60.5) == "schedule:s:60"
