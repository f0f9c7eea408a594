"""Schedules: recurring definitions that create jobs when due (seed 001 cron, seed 002).

Three kinds, by which of ``every`` / ``cron`` is set:

- ``every``: fixed ticks ``anchor + k * every``;
- ``cron``: wall-clock ticks in the schedule's time zone (:mod:`taskyard.core.cron`);
- adaptive (neither): the task type's interval, moved by each run's
  ``{"eventful": …}`` result; the next run is the end of the last one plus
  the interval, and runs never overlap.

This module keeps the definitions; :mod:`taskyard.store.transitions.schedule_runs` creates their
jobs when due and records their outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import JSON, dumps, loads
from taskyard.model.schedules import (
    ScheduleDef,
    ScheduleRecord,
    define_schedule,
    definition_from_mapping,
    following,
    initial_timing,
)
from taskyard.store.driver.params import PutSchedule
from taskyard.store.portable.job_reads import mapped
from taskyard.store.schema.job_rows import job_row
from taskyard.store.schema.task_type_rows import cached_spec
from taskyard.store.transitions.schedule_runs import tick_submission

if TYPE_CHECKING:
    from taskyard.store.unit import Tx



class Schedules:
    """Schedules' definitions, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({'get', 'list'})
    """Methods a call through the store (``store.schedules.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def add(
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
        self.put(d, replace=replace, now=now)
        return self._get(name)

    def apply(self, decls: Mapping[str, Mapping[str, Any]], *,
              now: float | None = None) -> list[ScheduleRecord]:
        """Create or update schedules from ``apply`` entries, all or nothing."""
        defs = [definition_from_mapping(str(n), body) for n, body in decls.items()]
        self.put_many(defs, now)
        return [self._get(d.name) for d in defs]

    def put_many(self, defs: Sequence[ScheduleDef], now: float | None = None) -> None:
        for d in defs:
            self.put(d, replace=True, now=now)

    def put(self, d: ScheduleDef, *, replace: bool, now: float | None) -> None:
        """Write a validated definition (the task type is checked here)."""
        driver, raw = self.tx.driver, self.tx.raw
        where = f"schedule {d.name!r}"
        type_rows = driver.read_task_types(raw, d.type)
        if not type_rows:
            raise InvalidInput(f"{where}: unknown task type {d.type!r}")
        spec = cached_spec(tuple(type_rows[0]))
        if d.adaptive and spec.interval is None:
            raise InvalidInput(
                f"{where}: task type {d.type!r} has no adaptive interval; give every or "
                f"cron, or set the type's interval (--interval DEFAULT[,MIN,MAX])"
            )
        # Args, priority and lock templates fail now rather than at the first tick.
        try:
            job_row(tick_submission(d, spec, 0.0), spec, 0)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        found = driver.read_schedules(raw, d.name)
        if found and not replace:
            raise Conflict(f"{where} already exists")
        old = record_from_row(mapped(found[0])) if found else None
        current, next_run = initial_timing(d, spec.interval, old, self.tx.schedule_runs.clock(now))
        driver.put_schedule(raw, PutSchedule(
            d.name, d.type, dumps(d.args), d.priority, d.every, d.cron, d.timezone,
            d.catchup.value, d.paused, current, next_run))
        self.tx.notify("scheduler")

    def _get(self, name: str) -> ScheduleRecord:
        found = self.get(name)
        if found is None:
            raise NotFound(f"no schedule {name!r}")
        return found

    def get(self, name: str) -> ScheduleRecord | None:
        """The schedule called ``name``, or None."""
        found = self.tx.driver.read_schedules(self.tx.raw, name)
        return record_from_row(mapped(found[0])) if found else None

    def pause(self, name: str) -> ScheduleRecord:
        """Stop creating jobs (jobs already created still run). NotFound if missing."""
        if not self.tx.driver.pause_schedule(self.tx.raw, name):
            raise NotFound(f"no schedule {name!r}")
        return self._get(name)

    def resume(self, name: str, *, now: float | None = None) -> ScheduleRecord:
        """Create jobs again. Ticks that fell while paused are skipped, not caught up."""
        found = self.tx.driver.read_schedules(self.tx.raw, name)
        if not found:
            raise NotFound(f"no schedule {name!r}")
        m = found[0]
        if m["paused"]:
            clock = self.tx.schedule_runs.clock(now)
            upcoming = m["next_run"]
            if upcoming <= clock:
                adaptive = m["every"] is None and m["cron"] is None
                upcoming = clock if adaptive else following(m)(clock)
            self.tx.driver.resume_schedule(self.tx.raw, name, upcoming)
            self.tx.notify("scheduler")
        return self._get(name)

    def delete(self, name: str) -> None:
        """Remove the definition; its jobs stay (with their schedule name) for history."""
        if not self.tx.driver.delete_schedule(self.tx.raw, name):
            raise NotFound(f"no schedule {name!r}")

    def list(self) -> list[ScheduleRecord]:
        """Every schedule, by name."""
        return [record_from_row(mapped(r)) for r in self.tx.driver.read_schedules(self.tx.raw)]


def record_from_row(row: Any) -> ScheduleRecord:
    m = row._mapping
    return ScheduleRecord(
        name=m["name"], type=m["type"], args=loads(m["args"]), priority=m["priority"],
        every=m["every"], cron=m["cron"], timezone=m["timezone"], catchup=m["catchup"],
        paused=bool(m["paused"]), next_run=m["next_run"],
        current_interval=m["current_interval"], last_job_id=m["last_job_id"],
        last_run_at=m["last_run_at"], last_outcome=m["last_outcome"],
        created_at=m["created_at"], updated_at=m["updated_at"],
    )
