"""Schedules on both stores: definitions, ticks, catch-up, adaptive intervals, exactly once.

The clock is injected: ``run_due_schedules(now=...)`` takes the time, so a day
of ticks runs in milliseconds. Schedules added with an explicit future ``now``
are never due by the database clock, so the real cycle leaves them alone.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select
from tests.store.driver import claim, complete

from taskyard.api.yard import Yard
from taskyard.core.durations import Interval
from taskyard.core.recurrence import adaptive_next_run
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import Outcome, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store, open_store
from taskyard.store import schema as t

T0 = 2_000_000_000.0  # 2033: always in the future of the database clock
HOUR = 3600.0


@pytest.fixture
def typed(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("sync", "shell:true"))
    store.task_types.put(TaskTypeSpec(
        "load-git", "python:loaders:load", interval=Interval(HOUR, HOUR / 2, 4 * HOUR),
        backoff_factor=2.0, max_queue_length=5000, retries=0, retry_delay=30.0))
    return store


def keys(store: Store, name: str) -> list[str]:
    with store.engine.connect() as conn:
        return list(conn.execute(
            select(t.jobs.c.dedup_key).where(t.jobs.c.schedule_name == name).order_by(t.jobs.c.id)
        ).scalars())


def run_one(store: Store, *, state: str = "succeeded", result: Any = None) -> int:
    """Place, claim and end one job through the real cycle and worker path."""
    worker = next((w for w in store.workers.list() if w.name == "w"), None) or \
        store.workers.register("w", ["default"], 10, lease_seconds=300)
    schedule(store)
    (claimed,) = claim(store, worker.id, 1)
    complete(store, worker.id, [Outcome(claimed.job_id, claimed.attempt, state,
                                                0 if state == "succeeded" else 1, result)])
    return claimed.job_id


def test_task_type_interval_policy_round_trips(typed: Store) -> None:
    spec = typed.task_types.get("load-git")
    assert spec is not None
    assert spec.interval == Interval(HOUR, HOUR / 2, 4 * HOUR)
    assert (spec.backoff_factor, spec.max_queue_length, spec.retries, spec.retry_delay) == (
        2.0, 5000, 0, 30.0)
    assert spec.to_json()["interval"] == {"default": HOUR, "min": HOUR / 2, "max": 4 * HOUR}


def test_add_list_get_and_json(typed: Store) -> None:
    rec = typed.schedules.add("tick", "sync", every="10s", args={"x": 1}, priority=3, now=T0 + 0.7)
    assert (rec.kind, rec.every, rec.interval, rec.next_run, rec.paused) == (
        "every", 10.0, 10.0, T0, False)
    cron = typed.schedules.add("nightly", "sync", cron="0 3 * * *", timezone="Europe/Paris",
                              now=T0)
    adaptive = typed.schedules.add("git", "load-git", now=T0)
    assert [s.name for s in typed.schedules.list()] == ["git", "nightly", "tick"]
    doc = cron.to_json()
    assert {"name", "type", "next_run", "interval", "cron", "paused", "timezone", "args",
            "last_run_at", "last_outcome", "current_interval"} <= set(doc)
    assert (doc["cron"], doc["interval"], doc["timezone"]) == ("0 3 * * *", None, "Europe/Paris")
    assert datetime.fromtimestamp(cron.next_run, ZoneInfo("Europe/Paris")).hour == 3
    assert doc["next_run"].endswith("Z")
    assert (adaptive.kind, adaptive.interval, adaptive.next_run) == ("adaptive", HOUR, T0)
    assert typed.schedules.get("nope") is None
    with pytest.raises(Conflict, match="already exists"):
        typed.schedules.add("tick", "sync", every=5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "nope", "every": 5}, "unknown task type 'nope'"),
        ({"type": "sync"}, "has no adaptive interval"),
        ({"type": "sync", "every": 5, "cron": "* * * * *"}, "not both"),
        ({"type": "sync", "cron": "0 25 * * *"}, "hour field: 25 is out of range 0-23"),
        ({"type": "sync", "cron": "*/0 * * * *"}, "step must be at least 1"),
        ({"type": "sync", "cron": "0 3 * * *", "timezone": "Europe/Atlantis"},
         "unknown time zone"),
        ({"type": "sync", "every": "0.5s"}, "at least 1s"),
        ({"type": "sync", "every": "soon"}, "is not a duration"),
        ({"type": "sync", "every": 5, "catchup": "some"}, "not one of one, all, none"),
        ({"type": "sync", "every": 5, "priority": "high"}, "priority must be a whole number"),
        ({"type": "locked", "every": 5}, "'project_id'"),
    ],
)
def test_bad_definitions_are_refused_with_the_reason(typed, kwargs, message) -> None:
    typed.task_types.put(TaskTypeSpec("locked", "shell:true", locks=("p:{project_id}",)))
    with pytest.raises(InvalidInput, match="schedule 'bad'") as info:
        options = dict(kwargs)
        typed.schedules.add("bad", options.pop("type"), **options)
    assert message in str(info.value)
    assert typed.schedules.get("bad") is None


def test_every_creates_one_job_per_tick_with_its_key(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=10, args={"x": 1}, priority=4, now=T0)
    assert typed.schedule_runs.create_due_jobs(now=T0 - 1) == []
    (first,) = typed.schedule_runs.create_due_jobs(now=T0)
    assert typed.schedule_runs.create_due_jobs(now=T0 + 9.9) == []  # same tick: nothing more
    (second,) = typed.schedule_runs.create_due_jobs(now=T0 + 10)
    job = typed.jobs.get(first)
    assert job is not None
    assert (job.state, job.args, job.priority, job.launch_type) == (
        "pending", {"x": 1}, 4, "schedule")
    assert keys(typed, "tick") == [f"schedule:tick:{int(T0)}", f"schedule:tick:{int(T0) + 10}"]
    rec = typed.schedules.get("tick")
    assert rec is not None and (rec.next_run, rec.last_job_id) == (T0 + 20, second)
    events = [e for e in typed.events.list(topic="job-pending") if e.payload.get("schedule")]
    assert [e.payload["job_id"] for e in events] == [first, second]


def test_catchup_one_is_the_default_a_single_run_after_downtime(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=10, now=T0)
    created = typed.schedule_runs.create_due_jobs(now=T0 + 86_400 + 5)  # down for a day
    assert len(created) == 1
    assert keys(typed, "tick") == [f"schedule:tick:{int(T0)}"]
    assert typed.schedules.get("tick").next_run == T0 + 86_410  # type: ignore[union-attr]


def test_catchup_all_is_bounded_per_cycle(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=10, catchup="all", now=T0)
    now = T0 + 2495  # 250 missed ticks
    batches = [len(typed.schedule_runs.create_due_jobs(now=now)) for _ in range(4)]
    assert batches == [100, 100, 50, 0]
    assert keys(typed, "tick") == [f"schedule:tick:{int(T0) + 10 * i}" for i in range(250)]


def test_catchup_none_skips_to_the_next_future_fire(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=HOUR, catchup="none", now=T0)
    assert typed.schedule_runs.create_due_jobs(now=T0 + 5.5 * HOUR) == []
    assert typed.schedules.get("tick").next_run == T0 + 6 * HOUR  # type: ignore[union-attr]
    # A tick only seconds late is not "missed": it runs.
    assert len(typed.schedule_runs.create_due_jobs(now=T0 + 6 * HOUR + 3)) == 1


def test_cron_in_a_zone_across_spring_forward(typed: Store) -> None:
    paris = ZoneInfo("Europe/Paris")
    before = datetime(2031, 3, 29, 12, tzinfo=paris).timestamp()  # DST starts 2031-03-30
    typed.schedules.add("night", "sync", cron="30 2 * * *", timezone="Europe/Paris", now=before)
    rec = typed.schedules.get("night")
    assert rec is not None
    # 02:30 does not exist that night: it fires once, at 03:00 CEST.
    fire = datetime.fromtimestamp(rec.next_run, paris)
    assert (fire.isoformat()) == "2031-03-30T03:00:00+02:00"
    assert len(typed.schedule_runs.create_due_jobs(now=rec.next_run + 1)) == 1
    nxt = typed.schedules.get("night").next_run  # type: ignore[union-attr]
    assert datetime.fromtimestamp(nxt, paris).isoformat() == "2031-03-31T02:30:00+02:00"


def test_pause_resume_delete(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=10, now=T0)
    assert typed.schedules.pause("tick").paused
    assert typed.schedule_runs.create_due_jobs(now=T0 + 100) == []
    resumed = typed.schedules.resume("tick", now=T0 + 105)
    # Ticks that fell while paused are skipped, the rhythm is kept.
    assert (resumed.paused, resumed.next_run) == (False, T0 + 110)
    assert typed.schedules.resume("tick", now=T0 + 200).next_run == T0 + 110  # not paused: as is
    typed.schedules.delete("tick")
    assert typed.schedules.get("tick") is None
    for call in (typed.schedules.pause, typed.schedules.resume, typed.schedules.delete):
        with pytest.raises(NotFound, match="no schedule 'tick'"):
            call("tick")


def test_resume_cron_and_adaptive(typed: Store) -> None:
    typed.schedules.add("c", "sync", cron="0 * * * *", now=T0, paused=True)
    typed.schedules.add("a", "load-git", now=T0, paused=True)
    later = T0 + 10 * HOUR + 60
    assert typed.schedules.resume("c", now=later).next_run == (later // HOUR + 1) * HOUR
    assert typed.schedules.resume("a", now=later).next_run == later


def test_a_failed_recurring_job_is_scheduled_again(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=60)  # due now by the database clock
    job_id = run_one(typed, state="failed")
    rec = typed.schedules.get("tick")
    assert rec is not None and (rec.last_outcome, rec.last_job_id) == ("failed", job_id)
    assert rec.last_run_at is not None
    (again,) = typed.schedule_runs.create_due_jobs(now=rec.next_run)
    assert again != job_id


def test_adaptive_interval_follows_eventful_results(typed: Store) -> None:
    typed.schedules.add("git", "load-git")  # interval 1 h in [30 min, 4 h], factor 2
    first = run_one(typed, result={"eventful": False})
    rec = typed.schedules.get("git")
    job = typed.jobs.get(first)
    assert rec is not None and job is not None and job.finished_at is not None
    assert (rec.current_interval, rec.last_outcome) == (2 * HOUR, "succeeded")
    assert rec.next_run == pytest.approx(job.finished_at + 2 * HOUR)
    assert typed.schedule_runs.create_due_jobs(now=rec.next_run - 1) == []
    (second,) = typed.schedule_runs.create_due_jobs(now=rec.next_run)
    # While it runs, no overlapping run, however late it gets.
    assert typed.schedule_runs.create_due_jobs(now=rec.next_run + 10 * HOUR) == []
    worker = typed.workers.list()[0]
    schedule(typed)
    (claimed,) = claim(typed, worker.id, 1)
    assert claimed.job_id == second
    complete(typed, worker.id, [Outcome(second, 1, "succeeded", 0, {"eventful": True})])
    rec = typed.schedules.get("git")
    assert rec is not None and rec.current_interval == HOUR
    # Failure: the interval stays, the next run is end + interval.
    (third,) = typed.schedule_runs.create_due_jobs(now=rec.next_run)
    schedule(typed)
    claim(typed, worker.id, 1)
    complete(typed, worker.id, [Outcome(third, 1, "failed", 1)])
    rec, job = typed.schedules.get("git"), typed.jobs.get(third)
    assert rec is not None and job is not None and job.finished_at is not None
    assert (rec.current_interval, rec.last_outcome) == (HOUR, "failed")
    # end + interval (here the test's clock ran ahead of the database's, so the
    # rule that a new tick never shares the old tick's second shows too).
    tick = float(keys(typed, "git")[-1].rsplit(":", 1)[-1])
    assert rec.next_run == adaptive_next_run(job.finished_at, HOUR, tick)


def test_redefining_keeps_history_and_learned_interval(typed: Store) -> None:
    typed.schedules.add("git", "load-git")
    run_one(typed, result={"eventful": False})
    before = typed.schedules.get("git")
    after = typed.schedules.add("git", "load-git", args={"url": "x"}, replace=True)
    assert before is not None
    assert (after.current_interval, after.next_run, after.last_outcome) == (
        before.current_interval, before.next_run, "succeeded")
    moved = typed.schedules.add("git", "load-git", every="1h", replace=True, now=T0)
    assert (moved.kind, moved.next_run) == ("every", T0)


def test_a_tick_that_cannot_make_a_job_is_skipped_and_said(typed: Store) -> None:
    typed.task_types.put(TaskTypeSpec("proj", "shell:true"))
    typed.schedules.add("p", "proj", every=10, now=T0)
    typed.task_types.put(TaskTypeSpec("proj", "shell:true", locks=("p:{project_id}",)))
    assert typed.schedule_runs.create_due_jobs(now=T0) == []
    rec = typed.schedules.get("p")
    assert rec is not None and rec.next_run == T0 + 10
    assert rec.last_outcome == "skipped: invalid job"
    (event,) = typed.events.list(topic="schedule-error")
    assert event.payload["schedule"] == "p" and "project_id" in event.payload["reason"]


def test_apply_schedules_is_all_or_nothing(typed: Store) -> None:
    typed.schedules.apply({"a": {"type": "sync", "every": "5m"},
                           "b": {"type": "sync", "cron": "0 3 * * *", "timezone": "UTC"}})
    assert [s.name for s in typed.schedules.list()] == ["a", "b"]
    with pytest.raises(InvalidInput, match="schedule 'c': unknown fields"):
        typed.schedules.apply({"c": {"type": "sync", "every": 5, "color": "red"}})
    with pytest.raises(InvalidInput, match="unknown task type"):
        typed.schedules.apply({"a": {"type": "sync", "every": "1h"}, "d": {"type": "nope"}})
    assert typed.schedules.get("a").every == 300  # type: ignore[union-attr]
    assert typed.schedules.get("d") is None


def test_outcome_of_a_deleted_schedule_is_ignored(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=60)
    worker = typed.workers.register("w", ["default"], 1, lease_seconds=300)
    report = schedule(typed)
    assert report is not None and len(report.scheduled) == 1
    (claimed,) = claim(typed, worker.id, 1)
    typed.schedules.delete("tick")
    assert complete(typed, worker.id, [Outcome(claimed.job_id, 1, "succeeded")]) == [True]


def test_two_schedulers_make_exactly_one_job_per_tick(typed: Store, db_url: str) -> None:
    typed.schedules.add("fast", "sync", every=1, catchup="all", now=T0)
    typed.schedules.add("slow", "sync", every=7, catchup="one", now=T0)
    stores = [open_store(db_url), open_store(db_url)]
    steps = 60
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def scheduler(store: Store, skew: float) -> None:
        try:
            for step in range(steps):
                barrier.wait()
                # Their clocks disagree a little, as real hosts' do.
                store.schedule_runs.create_due_jobs(now=T0 + step + skew)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=scheduler, args=(s, skew))
               for s, skew in zip(stores, (0.0, 0.4), strict=True)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    for s in stores:
        s.close()
    assert not errors
    fast = keys(typed, "fast")
    assert fast == [f"schedule:fast:{int(T0) + i}" for i in range(steps)]
    slow = keys(typed, "slow")
    assert slow == [f"schedule:slow:{int(T0) + 7 * i}" for i in range(len(slow))]
    assert len(slow) == (steps - 1) // 7 + 1


def test_a_stale_reader_creates_nothing(typed: Store, db_url: str) -> None:
    """The guarded UPDATE: a scheduler that read next_run before another advanced it."""
    typed.schedules.add("tick", "sync", every=10, now=T0)
    with typed.engine.connect() as conn:
        stale = conn.execute(
            select(t.schedules, t.jobs.c.state.label("last_state"))
            .select_from(t.schedules.outerjoin(
                t.jobs, t.jobs.c.id == t.schedules.c.last_job_id))
        ).one()._mapping
    other = open_store(db_url)
    try:
        assert len(other.schedule_runs.create_due_jobs(now=T0)) == 1
    finally:
        other.close()
    spec = typed.task_types.get("sync")
    assert spec is not None
    with typed.write() as tx:
        assert tx.schedule_runs._claim(stale, spec, T0) == []
    assert len(keys(typed, "tick")) == 1


def test_a_tick_key_already_taken_is_not_run_twice(typed: Store) -> None:
    """The unique dedup key: a re-created schedule does not repeat a tick that ran."""
    typed.schedules.add("tick", "sync", every=10, now=T0)
    assert len(typed.schedule_runs.create_due_jobs(now=T0)) == 1
    typed.schedules.delete("tick")
    typed.schedules.add("tick", "sync", every=10, now=T0)
    assert typed.schedule_runs.create_due_jobs(now=T0) == []
    assert typed.schedules.get("tick").next_run == T0 + 10  # type: ignore[union-attr]
    assert len(keys(typed, "tick")) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [({"type": 5, "every": 5}, "'type' must name a task type"),
     ({"type": "sync", "every": 5, "args": [1]}, "args must be a JSON object"),
     ({"type": "sync", "every": 5, "paused": "yes"}, "paused must be true or false")],
)
def test_apply_field_types_are_checked(typed: Store, body, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        typed.schedules.apply({"x": body})


def test_redefining_with_the_same_timing_keeps_next_run(typed: Store) -> None:
    typed.schedules.add("tick", "sync", every=10, now=T0)
    typed.schedule_runs.create_due_jobs(now=T0)
    again = typed.schedules.add("tick", "sync", every=10, args={"v": 2}, replace=True,
                               now=T0 + 3)
    assert (again.next_run, again.args) == (T0 + 10, {"v": 2})


def test_a_zone_gone_from_the_host_pauses_the_schedule_and_says_why(typed: Store) -> None:
    typed.schedules.add("night", "sync", cron="0 3 * * *", now=T0)
    with typed.write() as tx:  # as if the zone vanished from the tz database
        tx.conn.execute(t.schedules.update().values(timezone="Gone/Zone", next_run=T0))
    assert typed.schedule_runs.create_due_jobs(now=T0 + 1) == []
    rec = typed.schedules.get("night")
    assert rec is not None and (rec.paused, rec.last_outcome) == (True, "paused: cron error")
    (event,) = typed.events.list(topic="schedule-error")
    assert "Gone/Zone" in event.payload["reason"]


def test_scheduled_jobs_launch_their_prerequisites(typed: Store) -> None:
    from taskyard.model.records import Prerequisite

    typed.task_types.put(TaskTypeSpec("report", "shell:true",
                                     prerequisites=(Prerequisite("sync", {}, 0),)))
    typed.schedules.add("nightly", "report", every=10, now=T0)
    (job_id,) = typed.schedule_runs.create_due_jobs(now=T0)
    job = typed.jobs.get(job_id)
    assert job is not None and job.state == "waiting"
    (update,) = typed.jobs.list(type="sync")
    assert update.launch_type == "dependent"
    pending = [e.payload["job_id"] for e in typed.events.list(topic="job-pending")]
    assert update.id in pending and job_id not in pending  # it waits: not pending yet
    assert run_one(typed) == update.id
    job = typed.jobs.get(job_id)
    assert job is not None and job.state == "pending"


def test_apply_config_is_all_or_nothing(db_url: str) -> None:
    good = {"sync": {"handler": "shell:true"}}
    with Yard(db_url) as yard:
        store = yard.store
        with pytest.raises(InvalidInput, match="unknown task type 'nope'"):
            yard.apply({"task_types": good, "pools": {"east": "the east pool"},
                        "schedules": {"nightly": {"type": "nope", "cron": "0 3 * * *"}}})
        assert store.task_types.get("sync") is None  # nothing was written
        assert store.schedules.list() == []
        yard.apply({"task_types": good, "pools": {"east": ""},
                    "schedules": {"nightly": {"type": "sync", "cron": "0 3 * * *"}}})
        (record,) = store.schedules.list()
        assert record.name == "nightly" and store.task_types.get("sync") is not None
