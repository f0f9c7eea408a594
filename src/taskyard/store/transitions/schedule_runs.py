"""Schedules at work: the jobs of due ticks (a step of the cycle), and what their runs'
outcomes teach adaptive schedules.

Exactly one job per tick, however many schedulers run: each tick's job carries the
dedup key ``schedule:<name>:<tick>`` (unique index, conflict-ignoring insert), and
``next_run`` only moves through an UPDATE guarded by its old value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.cron import CronError
from taskyard.core.lifecycle import adaptive_tick
from taskyard.core.recurrence import (
    Catchup,
    TickPlan,
    adaptive_next_run,
    eventful_of,
    next_interval,
    plan_ticks,
    tick_key,
)
from taskyard.core.states import TERMINAL, JobState
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec, loads
from taskyard.model.schedules import ScheduleDef, following, type_interval
from taskyard.store.driver.params import InsertJobs, RecordRun
from taskyard.store.schema.job_rows import job_row
from taskyard.store.schema.task_type_rows import cached_spec
from taskyard.store.transitions.dependents import Ended, chunks
from taskyard.store.transitions.events import job_pending, schedule_error

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

DUE_LIMIT = 100
"""Schedules one cycle handles; the rest (ordered by next_run) wait for the next."""
TICK_SKIPPED = "skipped: invalid job"
"""last_outcome when a tick's job could not be built (reason in a schedule-error event)."""
PAUSED_ON_ERROR = "paused: cron error"
"""last_outcome when the schedule's cron or zone stopped working on this host."""


def tick_submission(d: ScheduleDef | Any, spec: TaskTypeSpec, tick: float) -> JobSubmission:
    """The job of one tick, from a definition or a schedules row mapping."""
    name, args, priority = (
        (d.name, d.args, d.priority) if isinstance(d, ScheduleDef)
        else (d["name"], loads(d["args"]), d["priority"])
    )
    return JobSubmission(spec.name, args, priority, launch_type="schedule",
                         schedule_name=name, dedup_key=tick_key(name, tick))


class ScheduleRuns:
    """Due schedules' jobs and their runs' outcomes, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset()
    """Methods a call through the store (``store.schedule_runs.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def clock(self, now: float | None) -> float:
        """``now``, or the database clock."""
        if now is not None:
            return now
        return self.tx.driver.read_now(self.tx.raw)

    def create_due_jobs(self, now: float | None = None, *, limit: int = DUE_LIMIT) -> list[int]:
        """Create the jobs of schedules due at ``now`` (default: database clock); returns
        their ids. Reads at most ``limit`` schedules, oldest ``next_run`` first, through
        the ``ix_schedules_due`` index."""
        driver, raw = self.tx.driver, self.tx.raw
        # Compared in SQL first: an idle cycle costs one indexed read, no clock query.
        rows = driver.read_due_schedules(raw, limit, now)
        if not rows:
            return []
        clock = self.clock(now)  # read after the query: never before a due next_run
        specs = {spec.name: spec for spec in map(cached_spec, driver.task_types(
            raw, sorted({r["type"] for r in rows})))}
        tick_rows: list[dict[str, Any]] = []
        for row in rows:
            tick_rows.extend(self._claim(row, specs[row["type"]], clock))
        if not tick_rows:
            return []
        # One statement for every tick job of the cycle. A key already taken (by a
        # re-created schedule's earlier run) is skipped by the unique index.
        columns = tuple(tick_rows[0])
        ids = driver.insert_jobs(raw, InsertJobs(
            columns, [tuple(r.values()) for r in tick_rows], len(tick_rows),
            skip_taken_keys=True)).ids
        inserted = [(job_id, row["schedule_name"], row["type"], row["dedup_key"])
                    for job_id, row in zip(ids, tick_rows, strict=True) if job_id is not None]
        if not inserted:
            return []
        self._after_insert(inserted, tick_rows, specs)
        return sorted(job_id for job_id, _, _, _ in inserted)

    def _after_insert(self, inserted: Sequence[Any], tick_rows: list[dict[str, Any]],
                      specs: dict[str, TaskTypeSpec]) -> None:
        """Prerequisites of the new jobs, the schedules' last jobs, the events."""
        # Update on launch applies to scheduled jobs too: they may wait on prerequisites.
        by_key = {row["dedup_key"]: row for row in tick_rows}
        waiting = self.tx.jobs.wait_on_prerequisites([
            (job_id, JobSubmission(type_name, loads(by_key[key]["args"]),
                                   by_key[key]["priority"], launch_type="schedule"))
            for job_id, _, type_name, key in inserted if specs[type_name].prerequisites
        ], specs)
        last: dict[str, int] = {}
        for job_id, name, _, _ in inserted:
            last[name] = max(last.get(name, 0), job_id)
        self.tx.driver.set_last_jobs(self.tx.raw, sorted(last.items()))
        self.tx.events.append(
            job_pending(job_id, None, "", type=type_name, schedule=name)
            for job_id, name, type_name, _ in sorted(inserted) if job_id not in waiting)

    @staticmethod
    def _plan(m: Any, clock: float) -> TickPlan:
        if m["every"] is not None or m["cron"] is not None:
            return plan_ticks(m["next_run"], clock, following(m), Catchup(m["catchup"]))
        bounds = type_interval(m)
        interval = m["current_interval"] or (bounds.default if bounds else 60.0)
        ended = m["last_state"] is None or m["last_state"] in TERMINAL
        return adaptive_tick(m["next_run"], clock, interval, ended)

    def _claim(self, m: Any, spec: TaskTypeSpec, clock: float) -> list[dict[str, Any]]:
        """Advance one due schedule past its due ticks (guarded); return their job rows.

        Empty when another scheduler advanced it first: those jobs are its to create.
        """
        driver, raw = self.tx.driver, self.tx.raw
        name, old = m["name"], m["next_run"]
        try:
            plan = self._plan(m, clock)
        except CronError as exc:
            # E.g. the zone vanished from this host: stop the schedule and say why.
            driver.pause_on_error(raw, name, old, PAUSED_ON_ERROR)
            self._schedule_error(name, old, str(exc))
            return []
        if not driver.advance_schedule(raw, name, old, plan.next_run):
            return []
        rows: list[dict[str, Any]] = []
        for tick in plan.ticks:
            try:
                rows.append(job_row(tick_submission(m, spec, tick), spec, 0))
            except InvalidInput as exc:
                # The type changed under the schedule (e.g. a lock template wants an
                # arg it lacks): skip the tick, keep the schedule, say why.
                driver.note_outcome(raw, name, TICK_SKIPPED)
                self._schedule_error(name, tick, str(exc))
                break
        return rows

    def _schedule_error(self, name: str, tick: float, reason: str) -> None:
        """A ``schedule-error`` event: the reason is longer than ``last_outcome`` holds."""
        self.tx.events.append([schedule_error(name, tick, reason)])

    def record_outcomes(self, ended: Sequence[Ended]) -> None:
        """Record the final state of scheduled jobs; adapt adaptive schedules.

        Called for every batch of jobs that reached a final state; costs one
        indexed read per 500 ended jobs plus one per scheduled job among them.
        """
        found: list[Any] = []
        # Jobs whose schedule the caller already knows ("" for none) need no lookup.
        unknown = [e.job_id for e in ended if e.schedule is None or e.schedule]
        for part in chunks(unknown):
            found.extend(self.tx.driver.scheduled_ends(self.tx.raw, part))
        for job in sorted(found):
            self._learn(job)

    def _learn(self, job: Sequence[Any]) -> None:
        """One scheduled run's outcome (a row of Driver.scheduled_ends): the schedule's
        last outcome, and (adaptive) its new interval and next run."""
        job_id, schedule, state, result, finished_at, dedup_key = job
        m = self.tx.driver.schedule_timing(self.tx.raw, schedule)
        if m is None:
            return  # the schedule was deleted; its last jobs just finish
        run = RecordRun(schedule, state, finished_at)
        bounds = type_interval(m)
        adaptive = m["every"] is None and m["cron"] is None
        # Only the schedule's latest run moves the interval (not an old one retried).
        if adaptive and bounds is not None and m["last_job_id"] == job_id \
                and finished_at is not None:
            interval = next_interval(
                m["current_interval"], bounds, m["backoff_factor"],
                succeeded=state == JobState.SUCCEEDED, eventful=eventful_of(loads(result)))
            tick = float(str(dedup_key).rsplit(":", 1)[-1])
            run = RecordRun(schedule, state, finished_at, interval,
                            adaptive_next_run(finished_at, interval, tick))
        self.tx.driver.record_run(self.tx.raw, run)
