"""Schedules written once for both backends: their definitions, advancing a due one past
its ticks (guarded by its old ``next_run``: one job per tick, however many schedulers
run), and what their runs' outcomes teach them. Reading the due ones differs (the
false each backend's partial index is written with, PostgreSQL's ``SKIP LOCKED``): see
each driver's ``read_due_schedules``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store import schema as t
from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import PutSchedule, RecordRun

SCHEDULE_NAMES = tuple(c.name for c in t.schedules.c)
_SCHEDULES = f"SELECT {', '.join(SCHEDULE_NAMES)} FROM schedules"
_TIMING = ("SELECT s.every, s.cron, s.current_interval, s.last_job_id, tt.interval_default, "
           "tt.interval_min, tt.interval_max, tt.backoff_factor FROM schedules s "
           "JOIN task_types tt ON tt.name = s.type WHERE s.name = ?")
TIMING_NAMES = ("every", "cron", "current_interval", "last_job_id", "interval_default",
                "interval_min", "interval_max", "backoff_factor")
DUE_NAMES = (*(f"s.{n}" for n in SCHEDULE_NAMES), "j.state", "tt.interval_default",
             "tt.interval_min", "tt.interval_max")


def read_schedules(raw: Cursor, name: str | None = None) -> list[dict[str, Any]]:
    """Schedule ``name``, or every one by name, as mappings of column names."""
    rows = (raw.all(f"{_SCHEDULES} WHERE name = ?", (name,)) if name is not None
            else raw.all(f"{_SCHEDULES} ORDER BY name"))
    return [dict(zip(SCHEDULE_NAMES, row, strict=True)) for row in rows]


def put_schedule(raw: Cursor, params: PutSchedule) -> None:
    """The definition written: a new schedule, or the one of that name redefined (its
    history — last job, last run, outcome — kept)."""
    p = params
    raw.run("INSERT INTO schedules (name, type, args, priority, every, cron, timezone, "
            "catchup, paused, current_interval, next_run, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {now}, {now}) ON CONFLICT (name) "
            "DO UPDATE SET type = excluded.type, args = excluded.args, "
            "priority = excluded.priority, every = excluded.every, cron = excluded.cron, "
            "timezone = excluded.timezone, catchup = excluded.catchup, "
            "paused = excluded.paused, current_interval = excluded.current_interval, "
            "next_run = excluded.next_run, updated_at = {now}",
            (p.name, p.type, p.args, p.priority, p.every, p.cron, p.timezone, p.catchup,
             p.paused, p.current_interval, p.next_run))


def pause_schedule(raw: Cursor, name: str) -> bool:
    return raw.run("UPDATE schedules SET paused = ?, updated_at = {now} WHERE name = ?",
                   (True, name)) == 1


def resume_schedule(raw: Cursor, name: str, next_run: float) -> bool:
    return raw.run("UPDATE schedules SET paused = ?, next_run = ?, updated_at = {now} "
                   "WHERE name = ? AND paused = ?", (False, next_run, name, True)) == 1


def delete_schedule(raw: Cursor, name: str) -> bool:
    return raw.run("DELETE FROM schedules WHERE name = ?", (name,)) == 1


def read_due(raw: Cursor, limit: int, at: float | None, *, false: str,
             lock: str) -> list[dict[str, Any]]:
    """Schedules due at ``at`` (None: the database clock), the oldest ``next_run``
    first, at most ``limit``, with their last job's state and their type's interval, as
    mappings (the last job's state as ``last_state``): through the ``ix_schedules_due``
    index (``false``: as the backend's partial index is written), ``lock``ed."""
    cutoff = "{now}" if at is None else "?"
    rows = raw.all(
        f"SELECT {', '.join(DUE_NAMES)} FROM schedules s JOIN task_types tt "
        "ON tt.name = s.type LEFT JOIN jobs j ON j.id = s.last_job_id "
        f"WHERE s.paused = {false} AND s.next_run <= {cutoff} ORDER BY s.next_run "
        f"LIMIT ?{lock}", (limit,) if at is None else (at, limit))
    names = (*SCHEDULE_NAMES, "last_state", "interval_default", "interval_min",
             "interval_max")
    return [dict(zip(names, row, strict=True)) for row in rows]


def advance_schedule(raw: Cursor, name: str, old: float, next_run: float) -> bool:
    """The schedule moves past its due ticks, only from ``old`` (False: another
    scheduler moved it first; those ticks' jobs are its to create)."""
    return raw.run("UPDATE schedules SET next_run = ?, updated_at = {now} "
                   "WHERE name = ? AND next_run = ? AND paused = ?",
                   (next_run, name, old, False)) == 1


def pause_on_error(raw: Cursor, name: str, old: float, outcome: str) -> None:
    """The schedule stops (its cron or zone stopped working here), saying why."""
    raw.run("UPDATE schedules SET paused = ?, last_outcome = ?, updated_at = {now} "
            "WHERE name = ? AND next_run = ?", (True, outcome, name, old))


def note_outcome(raw: Cursor, name: str, outcome: str) -> None:
    raw.run("UPDATE schedules SET last_outcome = ?, updated_at = {now} WHERE name = ?",
            (outcome, name))


def set_last_jobs(raw: Cursor, last: Sequence[tuple[str, int]]) -> None:
    """Per (schedule, job): the schedule's latest job."""
    raw.many("UPDATE schedules SET last_job_id = ? WHERE name = ?",
             [(job, name) for name, job in last])


def scheduled_ends(raw: Cursor, job_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """Of the jobs of ``job_ids``, those a schedule made: (id, schedule, state, result,
    finished at, dedup key)."""
    which, params = raw.member("id", job_ids)
    return raw.all("SELECT id, schedule_name, state, result, finished_at, dedup_key "
                   f"FROM jobs WHERE {which} AND schedule_name IS NOT NULL", params)


def schedule_timing(raw: Cursor, name: str) -> dict[str, Any] | None:
    """What adapts a schedule's interval: mappings of :data:`TIMING_NAMES`."""
    row = raw.first(_TIMING, (name,))
    return None if row is None else dict(zip(TIMING_NAMES, row, strict=True))


def record_run(raw: Cursor, params: RecordRun) -> None:
    """A run's outcome; an adaptive schedule's new interval and next run with it."""
    p = params
    adapt = p.interval is not None
    raw.run("UPDATE schedules SET last_outcome = ?, last_run_at = ?, updated_at = {now}, "
            "current_interval = CASE WHEN ? THEN ? ELSE current_interval END, "
            "next_run = CASE WHEN ? THEN ? ELSE next_run END WHERE name = ?",
            (p.outcome, p.finished_at, adapt, p.interval, adapt, p.next_run, p.name))
