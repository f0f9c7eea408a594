"""Schedules: recurring definitions that create jobs when due (seed 001 cron, seed 002).

Three kinds, by which of ``every`` / ``cron`` is set:

- ``every``: fixed ticks ``anchor + k * every``;
- ``cron``: wall-clock ticks in the schedule's time zone (:mod:`taskyard.core.cron`);
- adaptive (neither): the task type's interval, moved by each run's
  ``{"eventful": …}`` result; the next run is the end of the last one plus
  the interval, and runs never overlap.

Exactly one job per tick, however many schedulers run: each tick's job carries
the dedup key ``schedule:<name>:<tick>`` (unique index, conflict-ignoring
insert), and ``next_run`` only moves through an UPDATE guarded by its old value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, false, insert, select, true, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from taskyard.core.cron import CronError
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
from taskyard.store import schema as t
from taskyard.store.base import routing_key
from taskyard.store.errors import Conflict, InvalidInput, NotFound
from taskyard.store.jobs import JobStore, job_row
from taskyard.store.records import JSON, JobSubmission, TaskTypeSpec, dumps, loads
from taskyard.store.resolution import Ended, chunks
from taskyard.store.schedule_defs import (
    ScheduleDef,
    ScheduleRecord,
    define_schedule,
    definition_from_mapping,
    following,
    initial_timing,
    record_from_row,
    type_interval,
)
from taskyard.store.task_types import row_to_spec

__all__ = ["DUE_LIMIT", "PAUSED_ON_ERROR", "TICK_SKIPPED", "ScheduleRecord", "ScheduleStore"]

_S, _J, _T = t.schedules, t.jobs, t.task_types
DUE_LIMIT = 100
"""Schedules one cycle handles; the rest (ordered by next_run) wait for the next."""
TICK_SKIPPED = "skipped: invalid job"
"""last_outcome when a tick's job could not be built (reason in a schedule-error event)."""
PAUSED_ON_ERROR = "paused: cron error"
"""last_outcome when the schedule's cron or zone stopped working on this host."""


def _submission(d: ScheduleDef | Any, spec: TaskTypeSpec, tick: float) -> JobSubmission:
    """The job of one tick, from a definition or a schedules row mapping."""
    name, args, priority = (
        (d.name, d.args, d.priority) if isinstance(d, ScheduleDef)
        else (d["name"], loads(d["args"]), d["priority"])
    )
    return JobSubmission(spec.name, args, priority, launch_type="schedule",
                         schedule_name=name, dedup_key=tick_key(name, tick))


class ScheduleStore(JobStore):
    """Schedules' definitions, their due step (in the cycle) and their outcomes."""

    def _clock(self, conn: Connection, now: float | None) -> float:
        return float(conn.execute(select(self._now)).scalar_one()) if now is None else now

    def add_schedule(
        self,
        name: str,
        type: str,
        *,
        every: float | str | None = None,
        cron: str | None = None,
        args: dict[str, JSON] | None = None,
        timezone: str | None = None,
        priority: int = 0,
        catchup: str | None = None,
        paused: bool = False,
        replace: bool = False,
        now: float | None = None,
    ) -> ScheduleRecord:
        """Create a schedule (``replace``: or redefine it, keeping its history).

        ``every``: seconds or a duration (``5m``); ``cron``: five fields read in
        ``timezone`` (IANA name, default UTC); neither: adaptive, on the type's
        interval. ``catchup``: ``one`` (default), ``all`` or ``none``. ``now``:
        the clock for the first next_run (default: database clock). Raises
        InvalidInput naming the problem; Conflict if it exists and not ``replace``.
        """
        d = define_schedule(name, type, every=every, cron=cron, args=args, timezone=timezone,
                            priority=priority, catchup=catchup, paused=paused)
        with self._tx() as conn:
            self._put(conn, d, replace=replace, now=now)
        return self._get(name)

    def apply_schedules(
        self, decls: Mapping[str, Mapping[str, Any]], *, now: float | None = None
    ) -> list[ScheduleRecord]:
        """Create or update schedules from ``apply`` entries, all or nothing."""
        defs = [definition_from_mapping(str(n), body) for n, body in decls.items()]
        with self._tx() as conn:
            self._put_schedules(conn, defs, now)
        return [self._get(d.name) for d in defs]

    def _put_schedules(self, conn: Connection, defs: Sequence[ScheduleDef],
                       now: float | None) -> None:
        for d in defs:
            self._put(conn, d, replace=True, now=now)

    def _put(self, conn: Connection, d: ScheduleDef, *, replace: bool, now: float | None) -> None:
        where = f"schedule {d.name!r}"
        type_row = conn.execute(select(_T).where(_T.c.name == d.type)).first()
        if type_row is None:
            raise InvalidInput(f"{where}: unknown task type {d.type!r}")
        spec = row_to_spec(type_row)
        if d.adaptive and spec.interval is None:
            raise InvalidInput(
                f"{where}: task type {d.type!r} has no adaptive interval; give every or "
                f"cron, or set the type's interval (--interval DEFAULT[,MIN,MAX])"
            )
        # Args, priority and lock templates fail now rather than at the first tick.
        try:
            job_row(_submission(d, spec, 0.0), spec, 0)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        row = conn.execute(select(_S).where(_S.c.name == d.name)).first()
        if row is not None and not replace:
            raise Conflict(f"{where} already exists")
        old = None if row is None else record_from_row(row)
        current, next_run = initial_timing(d, spec.interval, old, self._clock(conn, now))
        values = {
            "type": d.type, "args": dumps(d.args), "priority": d.priority, "every": d.every,
            "cron": d.cron, "timezone": d.timezone, "catchup": d.catchup.value,
            "paused": d.paused, "current_interval": current, "next_run": next_run,
            "updated_at": self._now,
        }
        if old is None:
            conn.execute(insert(_S).values(name=d.name, created_at=self._now, **values))
        else:
            conn.execute(update(_S).where(_S.c.name == d.name).values(**values))
        self._notify(conn, ["scheduler"])

    def _get(self, name: str) -> ScheduleRecord:
        found = self.get_schedule(name)
        if found is None:
            raise NotFound(f"no schedule {name!r}")
        return found

    def get_schedule(self, name: str) -> ScheduleRecord | None:
        """The schedule called ``name``, or None."""
        with self._read() as conn:
            row = conn.execute(select(_S).where(_S.c.name == name)).first()
        return None if row is None else record_from_row(row)

    def list_schedules(self) -> list[ScheduleRecord]:
        """Every schedule, by name."""
        with self._read() as conn:
            return [record_from_row(r) for r in conn.execute(select(_S).order_by(_S.c.name))]

    def pause_schedule(self, name: str) -> ScheduleRecord:
        """Stop creating jobs (jobs already created still run). NotFound if missing."""
        with self._tx() as conn:
            if not conn.execute(update(_S).where(_S.c.name == name).values(
                    paused=True, updated_at=self._now)).rowcount:
                raise NotFound(f"no schedule {name!r}")
        return self._get(name)

    def resume_schedule(self, name: str, *, now: float | None = None) -> ScheduleRecord:
        """Create jobs again. Ticks that fell while paused are skipped, not caught up."""
        with self._tx() as conn:
            row = conn.execute(select(_S).where(_S.c.name == name)).first()
            if row is None:
                raise NotFound(f"no schedule {name!r}")
            m = row._mapping
            if m["paused"]:
                clock = self._clock(conn, now)
                upcoming = m["next_run"]
                if upcoming <= clock:
                    adaptive = m["every"] is None and m["cron"] is None
                    upcoming = clock if adaptive else following(m)(clock)
                conn.execute(update(_S).where(_S.c.name == name, _S.c.paused == true()).values(
                    paused=False, next_run=upcoming, updated_at=self._now))
                self._notify(conn, ["scheduler"])
        return self._get(name)

    def delete_schedule(self, name: str) -> None:
        """Remove the definition; its jobs stay (with their schedule name) for history."""
        with self._tx() as conn:
            if not conn.execute(delete(_S).where(_S.c.name == name)).rowcount:
                raise NotFound(f"no schedule {name!r}")

    def run_due_schedules(self, *, now: float | None = None, limit: int = DUE_LIMIT) -> list[int]:
        """:meth:`create_due_jobs` in its own transaction (tests, tools)."""
        with self._tx() as conn:
            return self.create_due_jobs(conn, now, limit=limit)

    def create_due_jobs(
        self, conn: Connection, now: float | None = None, *, limit: int = DUE_LIMIT
    ) -> list[int]:
        """Create the jobs of schedules due at ``now`` (default: database clock) in the
        caller's transaction; returns their ids. Reads at most ``limit`` schedules,
        oldest ``next_run`` first, through the ``ix_schedules_due`` index."""
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
            if not self.sqlite:
                # Concurrent steppers share the due schedules instead of queueing on them.
                query = query.with_for_update(skip_locked=True, of=_S)
            return query

        # Built once per store: this runs in every cycle's maintenance step.
        if now is None:
            query = self._q("schedules.due", lambda: build(self._now))
        else:
            query = self._q("schedules.due-at", lambda: build(bindparam("at")))
        rows = conn.execute(query, {"limit": limit, "at": now}).all()
        if not rows:
            return []
        clock = self._clock(conn, now)  # read after the query: never before a due next_run
        specs = {
            r._mapping["name"]: row_to_spec(r)
            for r in conn.execute(select(_T).where(_T.c.name.in_({r.type for r in rows})))
        }
        tick_rows: list[dict[str, Any]] = []
        for row in rows:
            tick_rows.extend(self._claim(conn, row._mapping, specs[row.type], clock))
        if not tick_rows:
            return []
        # One statement for every tick job of the cycle. A key already taken (by a
        # re-created schedule's earlier run) is skipped by the unique index.
        ins = sqlite_insert(_J) if self.sqlite else pg_insert(_J)
        inserted = conn.execute(
            ins.values(created_at=self._now)
            .on_conflict_do_nothing(index_elements=["dedup_key"],
                                    index_where=_J.c.dedup_key.is_not(None))
            .returning(_J.c.id, _J.c.schedule_name, _J.c.type, _J.c.dedup_key),
            tick_rows,
        ).all()
        if not inserted:
            return []
        # Update on launch applies to scheduled jobs too: they may wait on prerequisites.
        by_key = {row["dedup_key"]: row for row in tick_rows}
        waiting = self._wait_on_prerequisites(conn, [
            (job_id, JobSubmission(type_name, loads(by_key[key]["args"]),
                                   by_key[key]["priority"], launch_type="schedule"))
            for job_id, _, type_name, key in inserted if specs[type_name].prerequisites
        ], specs)
        last: dict[str, int] = {}
        for job_id, name, _, _ in inserted:
            last[name] = max(last.get(name, 0), job_id)
        conn.execute(
            update(_S).where(_S.c.name == bindparam("s_name")).values(
                last_job_id=bindparam("s_job")),
            [{"s_name": n, "s_job": j} for n, j in last.items()],
        )
        self._events(conn, (
            ("job-pending", routing_key(None, "", ""),
             {"job_id": job_id, "type": type_name, "schedule": name}, job_id, None)
            for job_id, name, type_name, _ in sorted(inserted) if job_id not in waiting
        ))
        return sorted(int(r[0]) for r in inserted)

    @staticmethod
    def _plan(m: Any, clock: float) -> TickPlan:
        if m["every"] is not None or m["cron"] is not None:
            return plan_ticks(m["next_run"], clock, following(m), Catchup(m["catchup"]))
        bounds = type_interval(m)
        interval = m["current_interval"] or (bounds.default if bounds else 60.0)
        if m["last_state"] is not None and m["last_state"] not in TERMINAL:
            # Adaptive runs never overlap: the last run is still going; look again later.
            return TickPlan((), clock + interval)
        tick = m["next_run"]
        # Provisional: the run's outcome sets the real next run (end + new interval).
        return TickPlan((tick,), adaptive_next_run(clock, interval, tick))

    def _claim(
        self, conn: Connection, m: Any, spec: TaskTypeSpec, clock: float
    ) -> list[dict[str, Any]]:
        """Advance one due schedule past its due ticks (guarded); return their job rows.

        Empty when another scheduler advanced it first: those jobs are its to create.
        """
        name, old = m["name"], m["next_run"]
        try:
            plan = self._plan(m, clock)
        except CronError as exc:
            # E.g. the zone vanished from this host: stop the schedule and say why.
            conn.execute(update(_S).where(_S.c.name == name, _S.c.next_run == old).values(
                paused=True, last_outcome=PAUSED_ON_ERROR, updated_at=self._now))
            self._schedule_error(conn, name, old, str(exc))
            return []
        claimed = conn.execute(
            update(_S)
            .where(_S.c.name == name, _S.c.next_run == old, _S.c.paused == false())
            .values(next_run=plan.next_run, updated_at=self._now)
        ).rowcount
        if claimed != 1:
            return []
        rows: list[dict[str, Any]] = []
        for tick in plan.ticks:
            try:
                rows.append(job_row(_submission(m, spec, tick), spec, 0))
            except InvalidInput as exc:
                # The type changed under the schedule (e.g. a lock template wants an
                # arg it lacks): skip the tick, keep the schedule, say why.
                conn.execute(update(_S).where(_S.c.name == name).values(
                    last_outcome=TICK_SKIPPED, updated_at=self._now))
                self._schedule_error(conn, name, tick, str(exc))
                break
        return rows

    def _schedule_error(self, conn: Connection, name: str, tick: float, reason: str) -> None:
        """A ``schedule-error`` event: the reason is longer than ``last_outcome`` holds."""
        self._events(conn, [("schedule-error", routing_key(None, "", ""),
                             {"schedule": name, "tick": tick, "reason": reason}, None, None)])

    def _schedule_outcomes(self, conn: Connection, ended: Sequence[Ended]) -> None:
        """Record the final state of scheduled jobs; adapt adaptive schedules.

        Called for every batch of jobs that reached a final state; costs one
        indexed read per 500 ended jobs plus one per scheduled job among them.
        """
        found: list[Any] = []
        # Jobs whose schedule the caller already knows ("" for none) need no lookup.
        unknown = [e.job_id for e in ended if e.schedule is None or e.schedule]
        for part in chunks(unknown):
            found.extend(conn.execute(self._q("schedules.ended", lambda: (
                select(_J.c.id, _J.c.schedule_name, _J.c.state, _J.c.result, _J.c.finished_at,
                       _J.c.dedup_key)
                .where(_J.c.id.in_(bindparam("ids", expanding=True)),
                       _J.c.schedule_name.is_not(None))
            )), {"ids": list(part)}).all())
        for job in sorted(found, key=lambda r: r.id):
            sched = conn.execute(
                select(_S.c.every, _S.c.cron, _S.c.current_interval, _S.c.last_job_id,
                       _T.c.interval_default, _T.c.interval_min, _T.c.interval_max,
                       _T.c.backoff_factor)
                .select_from(_S.join(_T, _T.c.name == _S.c.type))
                .where(_S.c.name == job.schedule_name)
            ).first()
            if sched is None:
                continue  # the schedule was deleted; its last jobs just finish
            m = sched._mapping
            values: dict[str, Any] = {"last_outcome": job.state, "last_run_at": job.finished_at,
                                      "updated_at": self._now}
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
            conn.execute(update(_S).where(_S.c.name == job.schedule_name).values(**values))
