"""Schedules at work: the jobs of due ticks (a step of the cycle), and what their runs'
outcomes teach adaptive schedules.

Exactly one job per tick, however many schedulers run: each tick's job carries the
dedup key ``schedule:<name>:<tick>`` (unique index, conflict-ignoring insert), and
``next_run`` only moves through an UPDATE guarded by its old value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import bindparam, false, select, update

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
from taskyard.model.records import JobSubmission, TaskTypeSpec, loads
from taskyard.model.schedules import ScheduleDef, following, type_interval
from taskyard.store import schema as t
from taskyard.store.schema.task_type_rows import row_to_spec
from taskyard.store.transitions.dependents import Ended, chunks
from taskyard.store.transitions.events import job_pending, schedule_error
from taskyard.store.transitions.tick_jobs import TickJobs

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_S, _J, _T = t.schedules, t.jobs, t.task_types
DUE_LIMIT = 100
"""Schedules one cycle handles; the rest (ordered by next_run) wait for the next."""
PAUSED_ON_ERROR = "paused: cron error"
"""last_outcome when the schedule's cron or zone stopped working on this host."""


def tick_submission(d: ScheduleDef | Any, spec: TaskTypeSpec, tick: float) -> JobSubmission:
    """The job of one tick, from a definition or a schedules row mapping."""
    name, args, priority = (
        (d.name, d.args, d.priority) if isinstance(d, ScheduleDef)
        else (d["name"], loads(d["args"]), d["priority"])
    )
    return JobSubmission(spec.name, args, priority, launch_type="schedule",
                         schedule_name=name, dedup_key=tick_key(name, tick),
                         logical_time=tick)


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
        return float(self.tx.conn.execute(select(self.tx.now)).scalar_one())

    def create_due_jobs(self, now: float | None = None, *, limit: int = DUE_LIMIT) -> list[int]:
        """Create the jobs of schedules due at ``now`` (default: database clock); returns
        their ids. Reads at most ``limit`` schedules, oldest ``next_run`` first, through
        the ``ix_schedules_due`` index."""
        conn = self.tx.conn
        rows = conn.execute(self._due_query(now), {"limit": limit, "at": now}).all()
        if not rows:
            return []
        clock = self.clock(now)  # read after the query: never before a due next_run
        specs = {
            r._mapping["name"]: row_to_spec(r)
            for r in conn.execute(select(_T).where(_T.c.name.in_({r.type for r in rows})))
        }
        ticks = TickJobs(self.tx, tick_submission)
        for row in rows:
            self._claim(row._mapping, specs[row.type], clock, ticks)
        tick_rows = ticks.rows
        if not tick_rows:
            return []
        # One statement for every tick job of the cycle. A key already taken (by a
        # re-created schedule's earlier run) is skipped by the unique index.
        inserted = conn.execute(
            self.tx.driver.upsert(_J).values(created_at=self.tx.now)
            .on_conflict_do_nothing(index_elements=["dedup_key"],
                                    index_where=_J.c.dedup_key.is_not(None))
            .returning(_J.c.id, _J.c.schedule_name, _J.c.type, _J.c.dedup_key),
            tick_rows,
        ).all()
        if not inserted:
            return []
        self._after_insert(inserted, ticks, specs)
        return sorted(int(r[0]) for r in inserted)

    def _due_query(self, now: float | None) -> Any:
        # Compared in SQL first: an idle cycle costs one indexed read, no clock query.
        def build(cutoff: Any) -> Any:
            query = (
                select(_S, _J.c.state.label("last_state"), _T.c.interval_default,
                       _T.c.interval_min, _T.c.interval_max)
                .select_from(_S.join(_T, _T.c.name == _S.c.type)
                             .outerjoin(_J, _J.c.id == _S.c.last_job_id))
                .where(_S.c.paused == false(), _S.c.next_run <= cutoff)
                .order_by(_S.c.next_run)
                .limit(bindparam("limit"))
            )
            # Concurrent steppers share the due schedules instead of queueing on them.
            return self.tx.driver.lock_rows(query, skip_locked=True, of=_S)

        # Built once per store: this runs in every cycle's maintenance step.
        if now is None:
            return self.tx.statement("schedules.due", lambda: build(self.tx.now))
        return self.tx.statement("schedules.due-at", lambda: build(bindparam("at")))

    def _after_insert(self, inserted: Sequence[Any], ticks: TickJobs,
                      specs: dict[str, TaskTypeSpec]) -> None:
        """Prerequisites of the new jobs, the jobs queued behind their schedule's last
        one, the schedules' last jobs, the events."""
        # Update on launch applies to scheduled jobs too: they may wait on prerequisites.
        by_key = {row["dedup_key"]: row for row in ticks.rows}
        waiting = self.tx.jobs.wait_on_prerequisites([
            (job_id, JobSubmission(type_name, loads(by_key[key]["args"]),
                                   by_key[key]["priority"], launch_type="schedule"))
            for job_id, _, type_name, key in inserted if specs[type_name].prerequisites
        ], specs) | ticks.queue_behind(inserted)
        last: dict[str, int] = {}
        for job_id, name, _, _ in inserted:
            last[name] = max(last.get(name, 0), job_id)
        self.tx.conn.execute(
            update(_S).where(_S.c.name == bindparam("s_name")).values(
                last_job_id=bindparam("s_job")),
            [{"s_name": n, "s_job": j} for n, j in last.items()],
        )
        self.tx.events.append(
            job_pending(job_id, None, "", type=type_name, schedule=name)
            for job_id, name, type_name, _ in sorted(inserted) if job_id not in waiting)

    @staticmethod
    def _plan(m: Any, clock: float) -> TickPlan:
        if m["every"] is not None or m["cron"] is not None:
            return plan_ticks(m["next_run"], clock, following(m), Catchup(m["catchup"]),
                              window=m["catchup_window"])
        bounds = type_interval(m)
        interval = m["current_interval"] or (bounds.default if bounds else 60.0)
        ended = m["last_state"] is None or m["last_state"] in TERMINAL
        return adaptive_tick(m["next_run"], clock, interval, ended)

    def _claim(self, m: Any, spec: TaskTypeSpec, clock: float, ticks: TickJobs) -> None:
        """Advance one due schedule past its due ticks (guarded); add their jobs to
        ``ticks``. Nothing when another scheduler advanced it first: those jobs are its
        to create."""
        conn = self.tx.conn
        name, old = m["name"], m["next_run"]
        try:
            plan = self._plan(m, clock)
        except CronError as exc:
            # E.g. the zone vanished from this host: stop the schedule and say why.
            conn.execute(update(_S).where(_S.c.name == name, _S.c.next_run == old).values(
                paused=True, last_outcome=PAUSED_ON_ERROR, updated_at=self.tx.now))
            self._schedule_error(name, old, str(exc))
            return
        claimed = conn.execute(
            update(_S)
            .where(_S.c.name == name, _S.c.next_run == old, _S.c.paused == false())
            .values(next_run=plan.next_run, updated_at=self.tx.now)
        ).rowcount
        if claimed == 1:
            ticks.add(m, spec, plan)

    def _schedule_error(self, name: str, tick: float, reason: str) -> None:
        """A ``schedule-error`` event: the reason is longer than ``last_outcome`` holds."""
        self.tx.events.append([schedule_error(name, tick, reason)])

    def record_outcomes(self, ended: Sequence[Ended]) -> None:
        """Record the final state of scheduled jobs; adapt adaptive schedules.

        Called for every batch of jobs that reached a final state; costs one
        indexed read per 500 ended jobs plus one per scheduled job among them.
        """
        conn = self.tx.conn
        found: list[Any] = []
        # Jobs whose schedule the caller already knows ("" for none) need no lookup.
        unknown = [e.job_id for e in ended if e.schedule is None or e.schedule]
        for part in chunks(unknown):
            found.extend(conn.execute(self.tx.statement("schedules.ended", lambda: (
                select(_J.c.id, _J.c.schedule_name, _J.c.state, _J.c.result, _J.c.finished_at,
                       _J.c.dedup_key)
                .where(_J.c.id.in_(bindparam("ids", expanding=True)),
                       _J.c.schedule_name.is_not(None))
            )), {"ids": list(part)}).all())
        for job in sorted(found, key=lambda r: r.id):
            self._learn(job)

    def _learn(self, job: Any) -> None:
        """One scheduled run's outcome: the schedule's last outcome, and (adaptive) its
        new interval and next run."""
        sched = self.tx.conn.execute(
            select(_S.c.every, _S.c.cron, _S.c.current_interval, _S.c.last_job_id,
                   _T.c.interval_default, _T.c.interval_min, _T.c.interval_max,
                   _T.c.backoff_factor)
            .select_from(_S.join(_T, _T.c.name == _S.c.type))
            .where(_S.c.name == job.schedule_name)
        ).first()
        if sched is None:
            return  # the schedule was deleted; its last jobs just finish
        m = sched._mapping
        values: dict[str, Any] = {"last_outcome": job.state, "last_run_at": job.finished_at,
                                  "updated_at": self.tx.now}
        bounds = type_interval(m)
        adaptive = m["every"] is None and m["cron"] is None
        # Only the schedule's latest run moves the interval (not an old one retried).
        if adaptive and bounds is not None and m["last_job_id"] == job.id:
            interval = next_interval(
                m["current_interval"], bounds, m["backoff_factor"],
                succeeded=job.state == JobState.SUCCEEDED,
                eventful=eventful_of(loads(job.result)),
            )
            tick = float(str(job.dedup_key).rsplit(":", 1)[-1])
            values.update(current_interval=interval,
                          next_run=adaptive_next_run(job.finished_at, interval, tick))
        self.tx.conn.execute(update(_S).where(_S.c.name == job.schedule_name).values(**values))
